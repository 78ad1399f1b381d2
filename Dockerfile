# The intentq worker, starter and hook binary built from source, for docker-compose.yml (a release's
# image is built from its own binaries instead: Dockerfile.release, .goreleaser.yaml).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# As make build and the release: the Temporal server's disable_grpc_modules tag, the release from
# VERSION; the commit is a build argument (.git stays out of the context).
ARG COMMIT=""
RUN v=github.com/intentq/intentq/internal/base/version \
 && ldflags="-s -w -X $v.Version=$(cat VERSION) -X $v.Commit=$COMMIT" \
 && CGO_ENABLED=0 go build -trimpath -tags=disable_grpc_modules -ldflags="$ldflags" -o /out/worker ./worker \
 && CGO_ENABLED=0 go build -trimpath -tags=disable_grpc_modules -ldflags="$ldflags" -o /out/starter ./starter \
 && CGO_ENABLED=0 go build -trimpath -tags=disable_grpc_modules -ldflags="$ldflags" -o /out/intentq-hook ./intentq-hook

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tmux ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/worker /out/starter /out/intentq-hook /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/worker"]
