# syntax=docker/dockerfile:1
# The worker and the starter as static binaries on a minimal non-root base.
#   docker build -t memagent .                       # the worker (default)
#   docker run --rm memagent /starter ask --help     # the starter, same image
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/worker ./worker && \
    go build -trimpath -ldflags='-s -w' -o /out/starter ./starter

# A static busybox for container health checks (wget), which distroless lacks.
FROM busybox:1.37.0-musl AS busybox

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/starter /
COPY --from=busybox /bin/busybox /busybox
USER nonroot:nonroot
# The worker's /healthz, /readyz and Prometheus /metrics.
EXPOSE 9464
ENTRYPOINT []
CMD ["/worker"]
