# intentq: `make run` starts the service on the embedded default, `make test` runs the checks.
GO      ?= go
# The Temporal server's own tag: leaves out the gRPC parts of cloud storage archivers that
# intentq does not use (the worker 203 MB instead of 222 MB; cold build time the same).
GOFLAGS ?= -tags=disable_grpc_modules
export GOFLAGS
BIN     ?= bin
# The hook binary runs at every prompt, tool call and turn end of every agent: linked statically
# (no cgo, as the Docker image builds it), it starts without the dynamic loader, 1 ms of its 6
# ms of CPU (issue 38).
HOOK_CGO := 0
ARGS    ?=
# Packages whose tests do not link the Temporal server: the race detector is affordable there.
RACE_PKGS := ./config/... ./workflows/... ./activities/... ./internal/policy/... ./internal/agentcli/... ./internal/session/... ./internal/redact/... ./internal/doors/... ./internal/base/logging/... ./internal/base/tclient/... ./internal/platform/watchdog/... ./internal/testkit/fakebot/... ./internal/testkit/fakentfy/...

.PHONY: run build test vet bench clean peers

## run: the worker with the embedded Temporal server and Web UI (http://127.0.0.1:8233)
run: build
	./$(BIN)/worker $(ARGS)

## build: bin/worker, bin/starter and bin/intentq-hook (the agents' hooks, without the Temporal SDK)
build:
	$(GO) build -o $(BIN)/worker ./worker
	$(GO) build -o $(BIN)/starter ./starter
	CGO_ENABLED=$(HOOK_CGO) $(GO) build -o $(BIN)/intentq-hook ./intentq-hook

## peers: the real programs the tests run against (tmux, PostgreSQL, bun, Claude Code, Codex),
## installed where missing (scripts/install-peers; idempotent)
peers:
	./scripts/install-peers

# Every other package: tested once, without the race detector (each package runs once in all).
OTHER_PKGS = $(filter-out $(shell $(GO) list $(RACE_PKGS)),$(shell $(GO) list ./...))

## test: the peers, go vet, then every package's tests once (race detector where affordable);
## the end-to-end tests of the worker package (real Claude Code, Codex and Gemini CLI in tmux)
## run side by side, $(E2E_PARALLEL) at a time: they wait on real time, not on the CPU; so do
## the three long packages (worker, internal/service, cluster), $(PKG_PARALLEL) test binaries
## at a time. The race-checked packages build and run meanwhile; their output follows the rest.
E2E_PARALLEL ?= 4
PKG_PARALLEL ?= 3
test: peers vet
	@race_log=$$(mktemp); \
	$(GO) test -race -count=1 $(RACE_PKGS) > $$race_log 2>&1 & race=$$!; \
	$(GO) test -count=1 -timeout 25m -p $(PKG_PARALLEL) -parallel $(E2E_PARALLEL) $(OTHER_PKGS); rest=$$?; \
	wait $$race; raced=$$?; echo "race-checked packages:"; cat $$race_log; rm -f $$race_log; \
	test $$rest -eq 0 -a $$raced -eq 0

vet:
	$(GO) vet ./...

## bench: benchmarks with their figures (the end-to-end ones under bench/ run once each; the
## worker's burst, scale and delivery benchmarks take about half an hour together)
bench: peers
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 90m $$($(GO) list ./... | grep -v /bench)
	$(GO) test -run '^$$' -bench . -benchtime 1x -count=1 -timeout 20m ./bench/

clean:
	rm -rf $(BIN)
