#!/usr/bin/env bash
# End-to-end benchmark of the gateway against two proxies built by cmd/baseline, the raw
# proxy (-raw: net/http, the body copied both ways, no parsing, no signing, no header
# rewriting; the floor) and a reverse proxy (httputil.ReverseProxy), and against Portkey
# (the Node gateway, installed from npm), all in front of the same zero-latency Bedrock
# simulator, driven by cmd/loadgen. The gateway and Portkey SigV4-sign their calls; the
# proxies pass the client's Bedrock API key through. The gateway is measured on its REST
# surfaces: Nirmata's (/llm-apps/chat), OpenAI's (/v1/chat/completions), with the very body
# Portkey is sent (the openai-* scenarios; the stream asks for usage with
# stream_options.include_usage), and Anthropic's (/v1/messages, the anthropic-* scenarios: the
# same request in its form).
#
# For unary and for streaming (~30 lines, two tool calls) at each concurrency (closed loop)
# it prints req/s, p50/p99 latency, CPU µs per request of the server process (from
# /proc/PID/stat), allocations per request (go_memstats_mallocs_total on /metrics, n/a when
# absent) and RSS, each one's CPU ratio to the raw proxy and to the reverse proxy from the
# same run, and Portkey's CPU per request divided by each one's (how many times less CPU
# than Portkey). Then the latency at half of the gateway's saturation (open loop, a fixed
# schedule): the gateway's and the proxies' p50 against calling the simulator directly. Then
# a memory run: 1,000 streams held open by a slow simulator, RSS per open stream over the
# idle RSS, per server.
#
# The targets are printed beside the numbers, not enforced: this measures. The script fails
# only when a request fails, since a benchmark with errors measures the wrong thing.
#
# Knobs (environment): BENCH_CONCURRENCY ("4 16"), BENCH_UNARY_N (20000), BENCH_STREAM_N
# (5000), BENCH_WARMUP_UNARY (2000), BENCH_WARMUP_STREAM (500), BENCH_LATENCY_SECONDS (8),
# BENCH_MEM_STREAMS (1000), BENCH_MEM_DELTA_DELAY (200ms), BENCH_PORTKEY (auto: when node is
# installed; 1 requires it; 0 skips it), BENCH_PORTKEY_UNARY_N (3000), BENCH_PORTKEY_STREAM_N
# (1500), BENCH_PORTKEY_WARMUP (500; Node compiles hot code as it runs), BENCH_CACHE (where
# Portkey is installed), GATEWAY_FLAGS (extra gateway flags), KEEP_WORK=1 (keep logs and JSON
# results).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

concurrencies=${BENCH_CONCURRENCY:-4 16}
unary_n=${BENCH_UNARY_N:-20000}
stream_n=${BENCH_STREAM_N:-5000}
warmup_unary=${BENCH_WARMUP_UNARY:-2000}
warmup_stream=${BENCH_WARMUP_STREAM:-500}
latency_s=${BENCH_LATENCY_SECONDS:-8}
mem_streams=${BENCH_MEM_STREAMS:-1000}
mem_delta=${BENCH_MEM_DELTA_DELAY:-200ms}
portkey_unary_n=${BENCH_PORTKEY_UNARY_N:-3000}
portkey_stream_n=${BENCH_PORTKEY_STREAM_N:-1500}
portkey_warmup=${BENCH_PORTKEY_WARMUP:-500}
case ${BENCH_PORTKEY:-auto} in
0) portkey=false ;;
1) portkey=true ;;
*) if command -v node >/dev/null && command -v npm >/dev/null; then portkey=true; else
	portkey=false
	echo "node or npm not found: the Portkey runs are skipped" >&2
fi ;;
esac

raise_nofile
loadavg=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine skews every number
build
# when_portkey prints its arguments when Portkey runs; it succeeds either way, so a
# command substitution of it never trips set -e.
when_portkey() { if $portkey; then echo "$@"; fi; }
if $portkey; then install_portkey; fi

# load NAME URL SCENARIO PID AUTH [loadgen flags...] runs loadgen and keeps its JSON summary
# in $work/NAME.json.
failed_runs=()
load() {
	local name=$1 url=$2 scenario=$3 pid=$4 auth=$5
	shift 5
	echo "  $name" >&2
	if ! "$bin/loadgen" -url "$url" -scenario "$scenario" -pid "$pid" -header "$auth" \
		-metrics-url "$url/metrics" -json "$@" >"$work/$name.json"; then
		failed_runs+=("$name: $(jq -c '{errors, errors_by_kind, statuses}' "$work/$name.json" 2>/dev/null || echo 'no summary')")
	fi
}

# field NAME JQ prints one value of a run's summary, "n/a" when null.
field() { jq -r "(try ($2) catch null) // \"n/a\"" "$work/$1.json"; }
fmt() { [[ $2 == n/a ]] && echo n/a || printf "%.${1}f" "$2"; }
ratio() { [[ $1 == n/a || $2 == n/a || $2 == 0 ]] && echo n/a || awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# meets EXPR prints yes or no for an awk condition.
meets() { awk "BEGIN { exit !($1) }" && echo yes || echo no; }

echo "## Throughput runs (zero-latency simulator)" >&2
sim=$(free_port)
start_sim "$sim"
sim_pid=$started
gw=$(free_port)
start_gateway "$gw" "$sim"
gw_pid=$started
raw=$(free_port)
start_baseline "$raw" "$sim" -raw
raw_pid=$started
rev=$(free_port)
start_baseline "$rev" "$sim"
rev_pid=$started
if $portkey; then
	pk=$(free_port)
	start_portkey "$pk"
	pk_pid=$started
	portkey_headers "$sim"
fi

# openai and anthropic are the same gateway process as gateway, asked on its OpenAI and
# Anthropic surfaces.
servers="raw reverse gateway openai anthropic"
if $portkey; then servers+=" portkey"; fi
for kind in unary stream; do
	if [[ $kind == unary ]]; then n=$unary_n warm=$warmup_unary pn=$portkey_unary_n; else n=$stream_n warm=$warmup_stream pn=$portkey_stream_n; fi
	for c in $concurrencies; do
		# Back to back, so all see the same machine. Portkey serves fewer requests: at 10-20×
		# the CPU per request, as many would take minutes and measure nothing more.
		load "$kind-c$c-raw" "http://127.0.0.1:$raw" "bedrock-$kind" "$raw_pid" "$baseline_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		load "$kind-c$c-reverse" "http://127.0.0.1:$rev" "bedrock-$kind" "$rev_pid" "$baseline_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		load "$kind-c$c-gateway" "http://127.0.0.1:$gw" "$kind" "$gw_pid" "$gateway_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		load "$kind-c$c-openai" "http://127.0.0.1:$gw" "openai-$kind" "$gw_pid" "$gateway_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		load "$kind-c$c-anthropic" "http://127.0.0.1:$gw" "anthropic-$kind" "$gw_pid" "$gateway_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		if $portkey; then
			load "$kind-c$c-portkey" "http://127.0.0.1:$pk" "openai-$kind" "$pk_pid" "$portkey_auth" \
				"${portkey_flags[@]}" -concurrency "$c" -n "$pn" -warmup "$portkey_warmup"
		fi
	done
done

# Half of saturation: the gateway's closed-loop unary throughput at the highest concurrency
# (the load generator shares the machine, so this is the saturation of the whole setup).
top_c=${concurrencies##* }
sat=$(field "unary-c$top_c-gateway" .req_per_s)
rate=$(awk -v s="$sat" 'BEGIN { printf "%d", s / 2 }')
echo "## Latency runs: unary at $rate req/s on a fixed schedule (half of $sat), ${latency_s}s each" >&2
for who in direct raw reverse gateway; do
	case $who in
	direct) args=("http://127.0.0.1:$sim" bedrock-unary "$sim_pid" "$baseline_auth") ;;
	raw) args=("http://127.0.0.1:$raw" bedrock-unary "$raw_pid" "$baseline_auth") ;;
	reverse) args=("http://127.0.0.1:$rev" bedrock-unary "$rev_pid" "$baseline_auth") ;;
	gateway) args=("http://127.0.0.1:$gw" unary "$gw_pid" "$gateway_auth") ;;
	esac
	load "latency-$who" "${args[@]}" -rate "$rate" -concurrency 32 -n $((rate * latency_s)) -warmup 1000
done

echo "## Memory run: $mem_streams streams held open (simulator --delta-delay $mem_delta)" >&2
# Fresh processes: a server that already served the runs above keeps freed heap resident for
# a while, which would hide the cost of the new streams in its idle RSS.
slow=$(free_port)
start_sim "$slow" --delta-delay "$mem_delta"
# One fresh process for each row (the gateway's two surfaces too).
mraw=$(free_port)
start_baseline "$mraw" "$slow" -raw
mraw_pid=$started
mrev=$(free_port)
start_baseline "$mrev" "$slow"
mrev_pid=$started
mgw=$(free_port)
start_gateway "$mgw" "$slow"
mgw_pid=$started
moa=$(free_port)
start_gateway "$moa" "$slow"
moa_pid=$started
man=$(free_port)
start_gateway "$man" "$slow"
man_pid=$started
# A few streams first, so code paths and pools exist before the idle RSS is read; then every
# worker opens one stream, and RSS is watched while all are open.
load mem-raw "http://127.0.0.1:$mraw" bedrock-stream "$mraw_pid" "$baseline_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
load mem-reverse "http://127.0.0.1:$mrev" bedrock-stream "$mrev_pid" "$baseline_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
load mem-gateway "http://127.0.0.1:$mgw" stream "$mgw_pid" "$gateway_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
load mem-openai "http://127.0.0.1:$moa" openai-stream "$moa_pid" "$gateway_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
load mem-anthropic "http://127.0.0.1:$man" anthropic-stream "$man_pid" "$gateway_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
if $portkey; then
	mpk=$(free_port)
	start_portkey "$mpk"
	mpk_pid=$started
	portkey_headers "$slow"
	load mem-portkey "http://127.0.0.1:$mpk" openai-stream "$mpk_pid" "$portkey_auth" "${portkey_flags[@]}" \
		-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
fi

echo
echo "### Gateway vs raw proxy vs reverse proxy$(when_portkey " vs Portkey $portkey_version") ($(nproc) cores, $(go env GOVERSION), $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+dirty'); load average at start: $loadavg)"
echo
echo "| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | allocs/req | RSS peak MiB | CPU ÷ raw proxy | CPU ÷ reverse proxy | Portkey CPU ÷ this | target met |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for kind in unary stream; do
	limit=2
	[[ $kind == stream ]] && limit=2.5
	for c in $concurrencies; do
		pkcpu=n/a
		if $portkey; then pkcpu=$(field "$kind-c$c-portkey" .cpu_us_per_req); fi
		for who in $servers; do
			r=$kind-c$c-$who
			cpu=$(field "$r" .cpu_us_per_req)
			toraw=$(ratio "$cpu" "$(field "$kind-c$c-raw" .cpu_us_per_req)")
			torev=$(ratio "$cpu" "$(field "$kind-c$c-reverse" .cpu_us_per_req)")
			less=$(ratio "$pkcpu" "$cpu")
			row="| $kind c=$c"
			case $who in
			raw) row+=" raw proxy | |" toraw="" met="" ;;
			reverse) row+=" reverse proxy | |" torev="" met="" ;;
			portkey) row+=" portkey | |" less="" met="" ;;
			gateway)
				row+=" gateway (Nirmata) | CPU ≤ ${limit}× raw proxy |"
				met=$([[ $toraw == n/a ]] && echo n/a || meets "$toraw <= $limit")
				;;
			openai)
				# The OpenAI surface: the same bound to the raw proxy as Nirmata's, and at least
				# 10× less CPU than Portkey on the identical request (when Portkey ran).
				row+=" gateway (OpenAI) | CPU ≤ ${limit}× raw proxy$(when_portkey ", ≥ 10× less than Portkey") |"
				if [[ $toraw == n/a ]] || { $portkey && [[ $less == n/a ]]; }; then
					met=n/a
				elif $portkey; then
					met=$(meets "$toraw <= $limit && $less >= 10")
				else
					met=$(meets "$toraw <= $limit")
				fi
				;;
			anthropic)
				row+=" gateway (Anthropic) | CPU ≤ ${limit}× raw proxy |" less=""
				met=$([[ $toraw == n/a ]] && echo n/a || meets "$toraw <= $limit")
				;;
			esac
			rss=$(field "$r" '.rss_peak_kib / 1024')
			echo "$row $(fmt 0 "$(field "$r" .req_per_s)") | $(fmt 2 "$(field "$r" .p50_ms)") | $(fmt 2 "$(field "$r" .p99_ms)") | $(fmt 1 "$cpu") | $(fmt 0 "$(field "$r" .allocs_per_req)") | $(fmt 1 "$rss") | $toraw | $torev | $less | $met |"
		done
	done
done
direct_p50=$(field latency-direct .p50_ms)
for who in direct raw reverse gateway; do
	r=latency-$who
	p50=$(field "$r" .p50_ms)
	added=$(awk -v a="$p50" -v b="$direct_p50" 'BEGIN { printf "%.0f", (a - b) * 1000 }')
	case $who in
	direct) row="| latency at $rate req/s (half of saturation), simulator direct | |" note=" | | |" ;;
	raw) row="| latency at $rate req/s, raw proxy | |" note="+$added µs p50 | | |" ;;
	reverse) row="| latency at $rate req/s, reverse proxy | |" note="+$added µs p50 | | |" ;;
	gateway) row="| latency at $rate req/s, gateway (Nirmata) | added p50 ≤ 250 µs |" note="+$added µs p50 | | | $(meets "$added <= 250")" ;;
	esac
	echo "$row $(fmt 0 "$(field "$r" .req_per_s)") | $(fmt 2 "$p50") | $(fmt 2 "$(field "$r" .p99_ms)") | $(fmt 1 "$(field "$r" .cpu_us_per_req)") | | | $note |"
done
for who in raw reverse gateway openai anthropic $(when_portkey portkey); do
	r=mem-$who
	per=$(field "$r" .kib_per_open_stream)
	idle=$(field "$r" '.rss_start_kib / 1024')
	open=$(field "$r" '.rss_open_kib / 1024')
	toraw=$(ratio "$per" "$(field mem-raw .kib_per_open_stream)")
	torev=$(ratio "$per" "$(field mem-reverse .kib_per_open_stream)")
	target="" met=""
	case $who in
	raw) name="raw proxy" toraw="" ;;
	reverse) name="reverse proxy" torev="" ;;
	portkey) name=portkey ;;
	gateway | openai | anthropic)
		case $who in gateway) name="gateway (Nirmata)" ;; openai) name="gateway (OpenAI)" ;; anthropic) name="gateway (Anthropic)" ;; esac
		target="≤ 64 KiB/stream"
		met=$([[ $per == n/a ]] && echo n/a || meets "$per <= 64")
		;;
	esac
	echo "| memory: $mem_streams open streams, $name | $target | | | | | | idle $(fmt 1 "$idle") → open $(fmt 1 "$open"), **$(fmt 1 "$per") KiB/stream** | $toraw | $torev | | $met |"
done
echo
echo "CPU is user+system time of the server process over the run divided by requests; allocations are"
echo "go_memstats_mallocs_total deltas (n/a: no /metrics). The latency rows run on a fixed schedule"
echo "(open loop; latency counts from each request's slot) and their CPU column is the measured"
echo "process's (the simulator's for the direct row); the memory rows' ratios are of KiB per open stream."
echo "The gateway OpenAI rows are the same process as the Nirmata rows, sent Portkey's request body;"
echo "the Anthropic rows the same process again, sent the same request in Anthropic's form (in the"
echo "memory run, each a fresh process of its own)."
if $portkey; then
	echo
	for kind in unary stream; do
		for c in $concurrencies; do
			pkcpu=$(field "$kind-c$c-portkey" .cpu_us_per_req)
			echo "- $kind c=$c: Portkey spends $(ratio "$pkcpu" "$(field "$kind-c$c-openai" .cpu_us_per_req)")× the CPU per request of the gateway's OpenAI surface on the same body, $(ratio "$pkcpu" "$(field "$kind-c$c-gateway" .cpu_us_per_req)")× its Nirmata surface's, $(ratio "$pkcpu" "$(field "$kind-c$c-raw" .cpu_us_per_req)")× the raw proxy's."
		done
	done
fi

if [[ ${#failed_runs[@]} -gt 0 ]]; then
	echo
	echo "FAILED: requests failed, so these numbers measure the wrong thing:"
	printf '  %s\n' "${failed_runs[@]}"
	exit 1
fi
