#!/usr/bin/env bash
# End-to-end benchmark of the gateway against a plain reverse proxy (cmd/baseline), both in
# front of the same zero-latency Bedrock simulator, driven by cmd/loadgen (closed loop).
#
# For unary and for streaming (~30 lines, two tool calls) at each concurrency it prints
# req/s, p50/p99 latency, CPU µs per request of the server process (from /proc/PID/stat),
# allocations per request (go_memstats_mallocs_total on /metrics, n/a when absent) and RSS,
# and the gateway/baseline CPU ratio from the same run. Then a memory run: 1,000 streams held
# open by a slow simulator, RSS per open stream over the idle RSS, for each server.
#
# The targets are printed beside the numbers, not enforced: this measures. The script fails
# only when a request fails, since a benchmark with errors measures the wrong thing.
#
# Knobs (environment): BENCH_CONCURRENCY ("4 16"), BENCH_UNARY_N (20000), BENCH_STREAM_N
# (5000), BENCH_WARMUP_UNARY (2000), BENCH_WARMUP_STREAM (500), BENCH_MEM_STREAMS (1000),
# BENCH_MEM_DELTA_DELAY (200ms), GATEWAY_FLAGS (extra gateway flags), KEEP_WORK=1 (keep logs
# and JSON results).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

concurrencies=${BENCH_CONCURRENCY:-4 16}
unary_n=${BENCH_UNARY_N:-20000}
stream_n=${BENCH_STREAM_N:-5000}
warmup_unary=${BENCH_WARMUP_UNARY:-2000}
warmup_stream=${BENCH_WARMUP_STREAM:-500}
mem_streams=${BENCH_MEM_STREAMS:-1000}
mem_delta=${BENCH_MEM_DELTA_DELAY:-200ms}

raise_nofile
loadavg=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine skews every number
build

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
gw=$(free_port)
start_gateway "$gw" "$sim"
gw_pid=$started
bl=$(free_port)
start_baseline "$bl" "$sim"
bl_pid=$started

for kind in unary stream; do
	if [[ $kind == unary ]]; then n=$unary_n warm=$warmup_unary; else n=$stream_n warm=$warmup_stream; fi
	for c in $concurrencies; do
		# Baseline first, then the gateway, back to back, so both see the same machine.
		load "$kind-c$c-baseline" "http://127.0.0.1:$bl" "bedrock-$kind" "$bl_pid" "$baseline_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
		load "$kind-c$c-gateway" "http://127.0.0.1:$gw" "$kind" "$gw_pid" "$gateway_auth" \
			-concurrency "$c" -n "$n" -warmup "$warm"
	done
done

echo "## Memory run: $mem_streams streams held open (simulator --delta-delay $mem_delta)" >&2
# Fresh processes: a server that already served the runs above keeps freed heap resident for
# a while, which would hide the cost of the new streams in its idle RSS.
slow=$(free_port)
start_sim "$slow" --delta-delay "$mem_delta"
mgw=$(free_port)
start_gateway "$mgw" "$slow"
mgw_pid=$started
mbl=$(free_port)
start_baseline "$mbl" "$slow"
mbl_pid=$started
# A few streams first, so code paths and pools exist before the idle RSS is read; then every
# worker opens one stream, and RSS is watched while all are open.
load mem-baseline "http://127.0.0.1:$mbl" bedrock-stream "$mbl_pid" "$baseline_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms
load mem-gateway "http://127.0.0.1:$mgw" stream "$mgw_pid" "$gateway_auth" \
	-concurrency "$mem_streams" -n "$mem_streams" -warmup 10 -rss-open -sample-every 500ms

echo
echo "### Gateway vs plain reverse proxy ($(nproc) cores, $(go env GOVERSION), $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+dirty'); load average at start: $loadavg)"
echo
echo "| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | allocs/req | RSS peak MiB | gateway/baseline CPU | target met |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for kind in unary stream; do
	for c in $concurrencies; do
		for who in baseline gateway; do
			r=$kind-c$c-$who
			cpu=$(field "$r" .cpu_us_per_req)
			row="| $kind c=$c $who"
			if [[ $who == baseline ]]; then
				row+=" | |"
				cmp="" met=""
			else
				cmp=$(ratio "$cpu" "$(field "$kind-c$c-baseline" .cpu_us_per_req)")
				if [[ $kind == unary ]]; then
					row+=" | CPU ≤ 2× proxy and ≤ 150 µs |"
					met=$([[ $cmp == n/a ]] && echo n/a || meets "$cmp <= 2 && $cpu <= 150")
				else
					row+=" | CPU ≤ 2.5× proxy |"
					met=$([[ $cmp == n/a ]] && echo n/a || meets "$cmp <= 2.5")
				fi
			fi
			rss=$(field "$r" '.rss_peak_kib / 1024')
			echo "$row $(fmt 0 "$(field "$r" .req_per_s)") | $(fmt 2 "$(field "$r" .p50_ms)") | $(fmt 2 "$(field "$r" .p99_ms)") | $(fmt 1 "$cpu") | $(fmt 0 "$(field "$r" .allocs_per_req)") | $(fmt 1 "$rss") | $cmp | $met |"
		done
	done
done
for who in baseline gateway; do
	r=mem-$who
	per=$(field "$r" .kib_per_open_stream)
	idle=$(field "$r" '.rss_start_kib / 1024')
	open=$(field "$r" '.rss_open_kib / 1024')
	if [[ $who == baseline ]]; then
		target="" cmp="" met=""
	else
		target="≤ 86 KiB per open stream"
		cmp=$(ratio "$per" "$(field mem-baseline .kib_per_open_stream)")
		met=$([[ $per == n/a ]] && echo n/a || meets "$per <= 86")
	fi
	echo "| memory: $mem_streams open streams, $who | $target | | | | | | idle $(fmt 1 "$idle") → open $(fmt 1 "$open"), **$(fmt 1 "$per") KiB/stream** | $cmp | $met |"
done
echo
echo "CPU is user+system time of the server process over the run divided by requests; allocations are"
echo "go_memstats_mallocs_total deltas (n/a: no /metrics); the memory run's ratio is of KiB per open stream."

if [[ ${#failed_runs[@]} -gt 0 ]]; then
	echo
	echo "FAILED: requests failed, so these numbers measure the wrong thing:"
	printf '  %s\n' "${failed_runs[@]}"
	exit 1
fi
