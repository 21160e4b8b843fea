# syntax=docker/dockerfile:1
# Images from one build, each a static binary on a minimal non-root base:
#   docker build -t memagent .                          # the production worker (default target)
#   docker build --target cli -t memagent-cli .         # the CLI: setup, ask, batch, ...
#   docker run --rm memagent-cli /starter ask --help
#   docker build --target desk -t memagent-desk .       # the review desk (/desk)
#   docker build --target devstack -t memagent-devstack .   # the developer's tools: /devstack simulator, ...
# The worker's base is Debian's slim image with Tesseract (tesseract-ocr),
# which reads scanned PDF pages, in the languages of TESSERACT_LANGS
# (Tesseract's codes, e.g. --build-arg TESSERACT_LANGS="eng deu fra").
# Neither the worker, the CLI nor the desk links a Temporal server (go list
# -deps ./worker ./starter ./desk); devstack embeds one (the demo, `go run
# ./devstack demo`, is its command), and its image serves docker compose's
# simulator profile.
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ENV CGO_ENABLED=0

FROM build AS build-worker
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/worker ./worker

FROM build AS build-cli
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/starter ./starter

FROM build AS build-desk
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/desk ./desk

FROM build AS build-devstack
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/devstack ./devstack

# A static busybox for container health checks (wget), which distroless lacks.
FROM busybox:1.37.0-musl AS busybox

FROM gcr.io/distroless/static-debian12:nonroot AS cli
COPY --from=build-cli /out/starter /
COPY --from=busybox /bin/busybox /busybox
USER nonroot:nonroot
ENTRYPOINT []
CMD ["/starter", "--help"]

# The review desk: a server that reads S3 and renders PDF pages (PDFium as
# WebAssembly, no cgo); it listens on loopback unless --addr says otherwise.
FROM gcr.io/distroless/static-debian12:nonroot AS desk
COPY --from=build-desk /out/desk /
COPY --from=busybox /bin/busybox /busybox
USER nonroot:nonroot
ENTRYPOINT []
CMD ["/desk"]

# The developer's tools: the dev stack, the simulator alone (docker
# compose's simulator profile), gen-doc and the evaluation sets.
FROM gcr.io/distroless/static-debian12:nonroot AS devstack
COPY --from=build-devstack /out/devstack /
COPY --from=busybox /bin/busybox /busybox
USER nonroot:nonroot
ENTRYPOINT []
CMD ["/devstack", "--help"]

# The default target, last: the production worker, on Debian (the release
# the tests run on) with Tesseract 5 for OCR, as the nonroot user (65532)
# the chart runs it as.
FROM debian:bookworm-slim AS worker
ARG TESSERACT_LANGS="eng"
RUN apt-get update \
 && pkgs="tesseract-ocr" \
 && for l in $TESSERACT_LANGS; do pkgs="$pkgs tesseract-ocr-$(echo "$l" | tr _ - | tr A-Z a-z)"; done \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
COPY --from=build-worker /out/worker /
COPY --from=busybox /bin/busybox /busybox
USER 65532:65532
# The worker's /healthz, /readyz and Prometheus /metrics.
EXPOSE 9464
ENTRYPOINT []
CMD ["/worker"]
