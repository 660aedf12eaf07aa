# Gleaner's worker image: `gleaner` and the Go example trainer `go-mlp`.
#
#   docker build -t gleaner:dev .
#   docker run --rm gleaner:dev worker --help
#
# docker-compose.yml builds it for its `gleaner-worker` service; see
# docs/deploy.md. The tags are pinned: the builder's Go matches the `go`
# line of go.mod (internal/uitest checks it), the runtime is the Debian
# release the builder is built on, so the binaries find the glibc and
# libstdc++ they were linked against (HiGHS, C++, is linked statically by
# gohighs, but against the shared libstdc++).

ARG GO_IMAGE=golang:1.26.8-bookworm
ARG RUNTIME_IMAGE=debian:12.12-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# cgo stays on: gohighs compiles HiGHS with the image's gcc/g++. (No
# BuildKit-only syntax: docker-compose v1's classic builder builds this too.)
ENV CGO_ENABLED=1
RUN go build -trimpath -ldflags='-s -w' -o /out/gleaner ./cmd/gleaner && \
    go build -trimpath -ldflags='-s -w' -o /out/go-mlp ./examples/go-mlp && \
    /out/gleaner --help >/dev/null

FROM ${RUNTIME_IMAGE}
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libstdc++6 zlib1g tini && \
    rm -rf /var/lib/apt/lists/*
COPY --from=build /out/gleaner /out/go-mlp /usr/local/bin/
# A non-root user owns the data directory (checkpoints, run directories).
# /opt/gleaner is the worker's working directory: trainers run there by
# default, so the examples' `"command": ["bin/go-mlp"]` finds the trainer.
RUN groupadd --system --gid 10001 gleaner && \
    useradd --system --uid 10001 --gid gleaner --home-dir /var/lib/gleaner --shell /usr/sbin/nologin gleaner && \
    mkdir -p /var/lib/gleaner /opt/gleaner/bin && \
    ln -s /usr/local/bin/go-mlp /opt/gleaner/bin/go-mlp && \
    chown gleaner:gleaner /var/lib/gleaner
USER gleaner
WORKDIR /opt/gleaner
ENV GLEANER_DATA_DIR=/var/lib/gleaner
VOLUME ["/var/lib/gleaner"]
# tini reaps the trainers' process groups and forwards SIGTERM, so
# `docker stop` gives the worker its --stop-timeout to checkpoint trials.
ENTRYPOINT ["/usr/bin/tini", "--", "gleaner"]
CMD ["worker"]
