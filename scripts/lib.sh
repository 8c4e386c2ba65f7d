# Shared by bench-e2e.sh and soak.sh: build the binaries, start the simulator, the gateway
# and the baseline proxy on free loopback ports, and stop them all on exit. Source it; it
# defines functions and sets $work (a temp dir) and $bin.

work=$(mktemp -d "${TMPDIR:-/tmp}/llm-gateway-load.XXXXXX")
bin=$work/bin
pids=()

# cleanup stops what this script started, by pid, and shows the logs when the run failed.
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ $rc -ne 0 ]]; then
		for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }; done
	fi
	if [[ -n ${KEEP_WORK:-} ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need() { command -v "$1" >/dev/null || { echo "$0: needs $1" >&2; exit 1; }; }
need curl
need jq

# 1,000 client connections, 1,000 server connections and 1,000 upstream connections in one
# run: far past the usual soft limit of 1,024 descriptors.
raise_nofile() {
	local want=${1:-65536} hard
	hard=$(ulimit -Hn)
	[[ $hard != unlimited && $hard -lt $want ]] && want=$hard
	ulimit -n "$want" 2>/dev/null || true
	if [[ $(ulimit -n) != unlimited && $(ulimit -n) -lt 4096 ]]; then
		echo "$0: open-file limit is $(ulimit -n) (hard $hard); 1,000 streams need 4096" >&2
		exit 1
	fi
}

build() {
	echo "building into $bin" >&2
	go build -o "$bin/" ./cmd/gateway ./cmd/loadgen ./cmd/baseline
}

# free_port prints a loopback port nobody listens on, below the ephemeral range so no client
# connection can be holding it.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 10000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# start NAME CMD... runs CMD in the background with its output in $work/NAME.log, and sets
# $started to its pid (the process itself: callers measure it through /proc).
start() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	started=$!
	pids+=("$started")
}

# wait_http URL [STATUS] waits until URL answers (with STATUS when given).
wait_http() {
	local url=$1 want=${2:-} code
	for _ in $(seq 200); do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true)
		if [[ $code != 000 && ( -z $want || $code == "$want" ) ]]; then return 0; fi
		sleep 0.05
	done
	echo "$0: $url did not answer${want:+ $want}" >&2
	exit 1
}

# start_sim PORT [sim flags...]
start_sim() {
	local port=$1
	shift
	start "sim-$port" "$bin/gateway" sim --addr "127.0.0.1:$port" "$@"
	wait_http "http://127.0.0.1:$port/"
}

# start_gateway HTTP_PORT SIM_PORT: the real upstream path, not --sim: the AWS chain resolves
# the endpoint and static credentials, so every request is SigV4-signed as in production.
# The environment is emptied first, so no AWS_PROFILE, Bedrock API key or GATEWAY_* setting
# of the caller's changes what is measured. The audit trail is at metadata (BENCH_AUDIT=off
# or full changes it), in an embedded store of the gateway's own: what is measured is a
# gateway that keeps a record of each call (docs/PROTOCOL.md 17).
start_gateway() {
	local port=$1 sim=$2 grpc
	grpc=$(free_port)
	# shellcheck disable=SC2086 # GATEWAY_FLAGS is meant to split into words
	start "gateway-$port" env -i PATH="$PATH" HOME="$work" \
		AWS_ENDPOINT_URL_BEDROCK_RUNTIME="http://127.0.0.1:$sim" AWS_REGION=us-east-1 \
		AWS_ACCESS_KEY_ID=AKIDLOADTEST AWS_SECRET_ACCESS_KEY=loadtest-secret \
		GATEWAY_API_KEYS="$gateway_key" \
		"$bin/gateway" --http-addr "127.0.0.1:$port" --grpc-addr "127.0.0.1:$grpc" \
		--audit "${BENCH_AUDIT:-metadata}" --audit-dsn "$work/audit-$port.db" ${GATEWAY_FLAGS:-}
	wait_http "http://127.0.0.1:$port/readyz" 200
}

# start_baseline PORT SIM_PORT [-raw]: the reverse proxy, or with -raw the raw one (the floor).
start_baseline() {
	start "baseline-$1" "$bin/baseline" -listen "127.0.0.1:$1" -upstream "http://127.0.0.1:$2" "${@:3}"
	wait_http "http://127.0.0.1:$1/metrics" 200
}

# Portkey (github.com/Portkey-AI/gateway, Node) is the peer in the side-by-side run, pinned so
# runs compare. install_portkey installs it from npm into a cache outside the repository on
# first use (nothing of it is committed) and sets $portkey_js to its server script.
portkey_version=1.15.2
install_portkey() {
	local dir=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llm-gateway-bench}/portkey-$portkey_version
	portkey_js=$dir/node_modules/@portkey-ai/gateway/build/start-server.js
	[[ -f $portkey_js ]] && return 0
	need node
	need npm
	echo "installing @portkey-ai/gateway@$portkey_version into $dir" >&2
	mkdir -p "$dir"
	# --ignore-scripts: its postinstall only patches a dependency's dev tooling.
	npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts "@portkey-ai/gateway@$portkey_version" >&2
}

# start_portkey PORT: production mode, no UI; it listens on every interface.
start_portkey() {
	start "portkey-$1" env -i PATH="$PATH" HOME="$work" NODE_ENV=production node "$portkey_js" --port="$1" --headless
	wait_http "http://127.0.0.1:$1/" 200
}

# portkey_headers SIM_PORT sets $portkey_flags: loadgen's -header flags that route a chat
# request through Portkey's Bedrock provider to the simulator, SigV4-signed with static
# credentials as the gateway's are.
portkey_headers() {
	portkey_flags=(-header "x-portkey-custom-host: http://127.0.0.1:$1" -header "x-portkey-aws-region: us-east-1"
		-header "x-portkey-aws-access-key-id: AKIDLOADTEST" -header "x-portkey-aws-secret-access-key: loadtest-secret")
}
portkey_auth="x-portkey-provider: bedrock"

# The gateway runs with auth on, as deployed; the baseline's simulator accepts any Bearer
# value as a Bedrock API key.
gateway_key=loadtest-key-0123456789 # 16 characters at least: the gateway refuses shorter keys
gateway_auth="Authorization: Bearer $gateway_key"
baseline_auth="Authorization: Bearer baseline"
