SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

# buf and the protoc plugins are pinned in tools/go.mod and built locally: no network, no
# Buf Schema Registry.
BUF := go tool -modfile=tools/go.mod buf

.PHONY: help run test lint generate checkgenerate fuzz

help: ## Show the targets
	@grep -hE '^[a-z][a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## Run the gateway on the embedded Bedrock simulator (REST localhost:8080, gRPC localhost:9090; no keys, so loopback only)
	go run ./cmd/gateway --sim --http-addr 127.0.0.1:8080 --grpc-addr 127.0.0.1:9090

test: ## Run every test (race detector on)
	go test -race -count=1 ./...

lint: ## go vet, gofmt, buf lint, buf format, and buf breaking against the main branch
	go vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(BUF) lint
	$(BUF) format --diff --exit-code
	@# The gRPC API's wire compatibility: a change that would break a deployed client fails.
	@# Against main; a checkout without a local main (a detached CI clone) uses HEAD.
	@ref=main; git rev-parse -q --verify main >/dev/null || ref=HEAD; $(BUF) breaking --against ".git#ref=$$ref"


generate: ## Regenerate gen/ from proto/
	$(BUF) generate

checkgenerate: generate ## Fail when gen/ is not what proto/ generates
	@if [ -n "$$(git status --porcelain -- gen)" ]; then git status --short -- gen; echo "gen/ is stale: run 'make generate' and commit"; exit 1; fi

fuzz: ## Fuzz every target: translator, schema check, REST decoder, stream machine, frames, signer, simulator (FUZZTIME=30s each)
	go test ./internal/translate -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/translate -run '^$$' -fuzz '^FuzzJSONSchema$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/nirmata -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/stream -run '^$$' -fuzz '^FuzzMachine$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrocksim -run '^$$' -fuzz '^FuzzValidateJSON$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrocksim -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrock -run '^$$' -fuzz '^FuzzReadFrame$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrock -run '^$$' -fuzz '^FuzzSigV4$$' -fuzztime $${FUZZTIME:-30s}

.PHONY: soak bench bench-e2e

bench: ## Go benchmarks of the hot paths, then the end-to-end run (both REST surfaces) against a plain proxy and Portkey (bench-e2e)
	go test -run '^$$' -bench . -benchmem ./internal/nirmata ./internal/openai ./internal/translate ./internal/stream ./internal/bedrock ./internal/metrics
	scripts/bench-e2e.sh

soak: ## 1,000 concurrent streams for 60 s against a slow simulator; fails on any error (SOAK_DURATION, SOAK_CONCURRENCY)
	scripts/soak.sh

bench-e2e: ## Gateway (Nirmata and OpenAI surfaces) vs a plain reverse proxy vs Portkey (npm) on the simulator: req/s, latency, CPU µs/req, RSS per open stream
	scripts/bench-e2e.sh
