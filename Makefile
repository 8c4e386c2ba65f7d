SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

# buf and the protoc plugins are pinned in tools/go.mod and built locally: no network, no
# Buf Schema Registry.
BUF := go tool -modfile=tools/go.mod buf

# test/node's npm packages (see the rule below test).
NODE_MODULES := test/node/node_modules

.PHONY: help run demo test clients race lint generate checkgenerate fuzz chart image-check

help: ## Show the targets
	@grep -hE '^[a-z][a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## Run the gateway on the embedded Bedrock simulator (REST localhost:8080, gRPC localhost:9090; no keys, so loopback only)
	go run ./cmd/gateway --sim --http-addr 127.0.0.1:8080 --grpc-addr 127.0.0.1:9090

demo: ## What a ten-turn agent tool loop costs on the simulator (dated, sourced prices), with prompt caching off and on, and with thinking kept and lost through a client that drops thinking blocks
	go run ./cmd/demo

# make test's flags, each cutting the first run on 2 cores (README.md, the paragraph on
# make test's times under the first commands), none a test:
# -vet=off: make lint runs go vet ./... in full, while vet inside go test would analyse every
#   dependency once more (a tenth of a cold run);
# -N -l for every package but this module and the runtime (with the standard library's
#   internal packages, which it is made of): the code under test is compiled as it ships,
#   the code it calls (the standard library, the AWS SDK, gRPC, go-redis, OTel)
#   unoptimized, which behaves the same and compiles in about 30% less time, while the
#   scheduler, the maps and the garbage collector every test leans on keep their speed;
#   make race compiles everything as it ships;
# -dwarf=false and -ldflags=-w: no debug information, which nothing in a test run reads
#   (stack traces come from the symbol table), written by every compile and by the link of
#   each of the 30-odd test binaries, which the build cache never keeps;
# the compiler and the linker keep their own garbage-collector settings: GOGC=1000 for them
#   (tried) cost 15-20% more time on net/http, go-redis and protobuf's internal/impl, and
#   the linker no less, as the compiler sizes its first heap itself and a larger heap is
#   paid for in page faults;
# CGO_ENABLED=0: as the image is built (Dockerfile), so no C compiler runs either.
# The end-to-end tests run eight at a time of their own accord (e2e's TestMain): they mostly
# wait; other packages' tests keep the default, GOMAXPROCS, as some time steps closely.
GCFLAGS := -gcflags='all=-N -l -dwarf=false' -gcflags='runtime=-dwarf=false' -gcflags='internal/...=-dwarf=false' -gcflags='github.com/nirmata/llm-gateway/...=-dwarf=false'
TEST_FLAGS := -count=1 -vet=off -ldflags=-w $(GCFLAGS)

# The standard library's packages that make test compiles, named by the few that import the
# rest. A first run compiles them while go mod download fetches the modules, ten seconds or
# so in which the cores would otherwise wait on the network, and go test finds them in the
# build cache (measured: 5 to 9 s less of a cold run on 2 cores). A package left off this list
# is only compiled later, by go test.
STD_PACKAGES := testing testing/internal/testdeps net/http/httptest net/http/httputil database/sql os/exec os/user \
	image/gif image/jpeg image/png html/template go/parser log/slog encoding/xml expvar runtime/debug

# Every package but cmd/demo, which drives the gateway with openai-go (160,000 lines): it
# belongs with the real client programs (make clients). The packages whose tests run
# longest come first: go test starts work in the order of its packages, so their runs
# overlap the compiling of the rest instead of trailing it on one core.
SLOW_TEST_PACKAGES := ./internal/audit ./internal/bedrocksim ./internal/store ./internal/toolcheck ./e2e ./internal/translate ./cmd/gateway
TEST_PACKAGES = $$(go list $(SLOW_TEST_PACKAGES) ./... | grep -v '/cmd/demo$$')

# PostgreSQL's programs: Debian's package postgresql puts them in
# /usr/lib/postgresql/<version>/bin, off the PATH (internal/pgtest looks in both).
HAVE_POSTGRES := command -v initdb >/dev/null || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null

test: ## Run every test but the real client programs' (make clients); needs redis-server and PostgreSQL
	@command -v redis-server >/dev/null || { echo "redis-server not found: make test runs real Redis servers; install the package redis-server (Debian, Ubuntu; .ci/run does)"; exit 1; }
	@$(HAVE_POSTGRES) || { echo "PostgreSQL not found: make test runs real PostgreSQL servers; install the package postgresql (Debian, Ubuntu; .ci/run does)"; exit 1; }
	export CGO_ENABLED=0; go build $(GCFLAGS) $(STD_PACKAGES) & std=$$!; go mod download; wait $$std; go test $(TEST_FLAGS) $(TEST_PACKAGES)

# The real client programs are tests under the clients build tag (e2e): the official
# openai-go client and the npm clients of test/node (the openai client, the Vercel AI SDK,
# the Anthropic SDK and Claude Code, whose native program npm installs as the platform's
# optional dependency). They run
# with the whole end-to-end suite, and cmd/demo is built with them.
clients: $(NODE_MODULES) ## Run the real client programs (openai-go, the openai npm client, the Vercel AI SDK, the Anthropic SDK, Claude Code) against the gateway, with the end-to-end suite; installs test/node's npm packages first when missing; needs Node.js 20 or later, redis-server and PostgreSQL
	@command -v redis-server >/dev/null || { echo "redis-server not found: make clients runs real Redis servers; install the package redis-server (Debian, Ubuntu; .ci/run does)"; exit 1; }
	@$(HAVE_POSTGRES) || { echo "PostgreSQL not found: make clients runs real PostgreSQL servers; install the package postgresql (Debian, Ubuntu; .ci/run does)"; exit 1; }
	CGO_ENABLED=0 go test $(TEST_FLAGS) -tags clients ./e2e/ ./cmd/demo/

race: $(NODE_MODULES) ## Run every test, the real client programs' included, under the race detector (CI runs it after make test and make clients); needs what make clients needs
	@command -v redis-server >/dev/null || { echo "redis-server not found: make race runs real Redis servers; install the package redis-server (Debian, Ubuntu; .ci/run does)"; exit 1; }
	@$(HAVE_POSTGRES) || { echo "PostgreSQL not found: make race runs real PostgreSQL servers; install the package postgresql (Debian, Ubuntu; .ci/run does)"; exit 1; }
	go test -race -count=1 -tags clients ./...

# The official openai npm client, the Vercel AI SDK and the Anthropic SDK, which e2e's
# TestNodeClients runs against the gateway, and Claude Code, which e2e's claudecode tests run
# (make clients, make race): pinned in
# test/node/package-lock.json, installed when node_modules is absent or older than the lock
# file.
$(NODE_MODULES): test/node/package-lock.json test/node/package.json
	@command -v npm >/dev/null || { echo "npm not found: make clients needs Node.js 20 or later with npm (test/node)"; exit 1; }
	npm ci --prefix test/node --no-audit --no-fund --ignore-scripts
	@touch $@

lint: ## go vet (with and without the clients build tag), gofmt, go.mod and go.sum tidy (the chart's module too), buf lint, buf format, and buf breaking against the main branch
	go vet ./...
	@# A go.sum that lacks what a build needs fails only where that build runs: the chart's
	@# module imports this one, so a new dependency here must reach its go.sum as well.
	go mod tidy -diff
	cd deploy/helm/chartcheck && go mod tidy -diff
	go vet -tags clients ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(BUF) lint
	$(BUF) format --diff --exit-code
	@# The gRPC API's wire compatibility: a change that would break a deployed client fails.
	@# Against main; a checkout without a local main (a detached CI clone) uses HEAD.
	@ref=main; git rev-parse -q --verify main >/dev/null || ref=HEAD; $(BUF) breaking --against ".git#ref=$$ref"

# Its own module (deploy/helm/chartcheck/go.mod), so that `go test ./...` above never compiles
# Helm and the Kubernetes API.
chart: ## Check the Helm chart: helm lint --strict, helm template of each values set decoded strictly into the Kubernetes API types, the gateway started with the pod's arguments (no cluster needed)
	cd deploy/helm/chartcheck && go vet ./... && go test -count=1 ./...

image-check: ## Build the Dockerfile offline (stand-in bases, no registry) and run the image with podman: readiness, a chat, uid 65532, a SIGTERM that drains; needs root, installs podman when missing
	scripts/image-check.sh

generate: ## Regenerate gen/ from proto/
	$(BUF) generate

checkgenerate: generate ## Fail when gen/ is not what proto/ generates
	@if [ -n "$$(git status --porcelain -- gen)" ]; then git status --short -- gen; echo "gen/ is stale: run 'make generate' and commit"; exit 1; fi

fuzz: ## Fuzz every target: translator, schema check, tool-call check and its fast path, REST decoders (Nirmata, OpenAI, Anthropic, Responses), stream machine, frames, stream events, signer, simulator (FUZZTIME=30s each)
	go test ./internal/translate -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/translate -run '^$$' -fuzz '^FuzzJSONSchema$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/toolcheck -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/toolcheck -run '^$$' -fuzz '^FuzzMeasure$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/toolcheck -run '^$$' -fuzz '^FuzzFastPath$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/nirmata -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/openai -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/anthropic -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/anthropic -run '^$$' -fuzz '^FuzzStreamer$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/responses -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/stream -run '^$$' -fuzz '^FuzzMachine$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrocksim -run '^$$' -fuzz '^FuzzValidateJSON$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrocksim -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrock -run '^$$' -fuzz '^FuzzReadFrame$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrock -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime $${FUZZTIME:-30s}
	go test ./internal/bedrock -run '^$$' -fuzz '^FuzzSigV4$$' -fuzztime $${FUZZTIME:-30s}

.PHONY: soak bench bench-e2e

bench: ## Go benchmarks of the hot paths, then the end-to-end run (the Nirmata, OpenAI, Anthropic and Responses surfaces) against a raw proxy (the floor), a reverse proxy and Portkey (bench-e2e)
	go test -run '^$$' -bench . -benchmem ./internal/nirmata ./internal/openai ./internal/anthropic ./internal/responses ./internal/translate ./internal/stream ./internal/bedrock ./internal/metrics
	scripts/bench-e2e.sh

soak: ## 1,000 concurrent streams for 60 s against a slow simulator; fails on any error (SOAK_DURATION, SOAK_CONCURRENCY)
	scripts/soak.sh

bench-e2e: ## Gateway (Nirmata, OpenAI, Anthropic and Responses surfaces) vs a raw proxy (the floor) vs a reverse proxy vs Portkey (npm) on the simulator: req/s, latency, CPU µs/req, RSS per open stream
	scripts/bench-e2e.sh
