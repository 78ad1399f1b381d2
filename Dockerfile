# The intentq worker, starter and hook binary, for docker-compose.yml.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/worker ./worker \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/starter ./starter \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/intentq-hook ./intentq-hook

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends tmux ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/worker /out/starter /out/intentq-hook /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/worker"]
