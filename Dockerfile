# syntax=docker/dockerfile:1
# Two images from one build, each a static binary on a minimal non-root base:
#   docker build -t memagent .                          # the production worker (default target)
#   docker build --target cli -t memagent-cli .         # the CLI: setup, simulator, ask, ...
#   docker run --rm memagent-cli /starter ask --help
# The worker's base is Debian's slim image with Tesseract (tesseract-ocr),
# which reads scanned PDF pages, in the languages of TESSERACT_LANGS
# (Tesseract's codes, e.g. --build-arg TESSERACT_LANGS="eng deu fra").
# Neither the worker nor the CLI links a Temporal server (go list -deps
# ./worker ./starter); the demo, which embeds one, is `go run ./devstack
# demo` in a checkout and in neither image.
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

# A static busybox for container health checks (wget), which distroless lacks.
FROM busybox:1.37.0-musl AS busybox

FROM gcr.io/distroless/static-debian12:nonroot AS cli
COPY --from=build-cli /out/starter /
COPY --from=busybox /bin/busybox /busybox
USER nonroot:nonroot
ENTRYPOINT []
CMD ["/starter", "--help"]

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
