#!/usr/bin/env bash
# A/B of two revisions of the gateway on the same host at the same time: both gateways (audit
# at metadata, as bench-e2e runs them) in front of one zero-latency simulator, each loaded by
# a load generator of its own at once, scenario by scenario and round by round; it prints
# each one's CPU µs and allocations per request, and B's CPU over A's. Other work on a
# shared host swings one server's CPU per request by ±20% between the rows of bench-e2e,
# which runs one server at a time; two servers loaded at once see the same host, so their
# ratio holds to a few percent where bench-e2e's ratios to the raw proxy do not.
#
# Usage: scripts/ab-e2e.sh REV_A REV_B (git revisions; the work tree is "."). Knobs
# (environment): AB_ROUNDS (4), AB_N (5000 requests a row), AB_CONCURRENCY (4),
# AB_SCENARIOS ("unary openai-unary anthropic-unary responses-unary"), AB_AUDIT_A and
# AB_AUDIT_B (each side's audit level; BENCH_AUDIT, else metadata; "scripts/ab-e2e.sh HEAD HEAD" with
# AB_AUDIT_B=off is what the audit trail costs).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

[[ $# -eq 2 ]] || { echo "usage: $0 REV_A REV_B" >&2; exit 2; }
rounds=${AB_ROUNDS:-4}
n=${AB_N:-5000}
c=${AB_CONCURRENCY:-4}
scenarios=${AB_SCENARIOS:-unary openai-unary anthropic-unary responses-unary}

# build_rev REV DIR builds REV's gateway into DIR, "." as it is for REV "."
build_rev() {
	local rev=$1 dir=$2 src
	if [[ $rev == . ]]; then
		go build -o "$dir/" ./cmd/gateway
		return
	fi
	src=$work/src-$(basename "$dir")
	mkdir -p "$src"
	git archive "$rev" | tar -x -C "$src"
	(cd "$src" && go build -o "$dir/" ./cmd/gateway)
}
echo "building $1 and $2" >&2
build_rev "$1" "$work/a"
build_rev "$2" "$work/b"
go build -o "$bin/" ./cmd/loadgen ./cmd/gateway

sim=$(free_port)
start_sim "$sim"
declare -A port pid
for side in a b; do
	port[$side]=$(free_port)
	audit=AB_AUDIT_${side^^}
	BENCH_AUDIT=${!audit:-${BENCH_AUDIT:-metadata}} bin=$work/$side start_gateway "${port[$side]}" "$sim"
	pid[$side]=$started
done

# load SIDE SCENARIO runs the side's load generator, its JSON summary in $work/SIDE.json.
load() {
	"$bin/loadgen" -url "http://127.0.0.1:${port[$1]}" -scenario "$2" -pid "${pid[$1]}" -header "$gateway_auth" \
		-metrics-url "http://127.0.0.1:${port[$1]}/metrics" -json -concurrency "$c" -n "$n" -warmup 500 >"$work/$1.json"
}
field() { jq -r ".$2" "$work/$1.json"; }

echo "A = $1 (audit ${AB_AUDIT_A:-${BENCH_AUDIT:-metadata}}), B = $2 (audit ${AB_AUDIT_B:-${BENCH_AUDIT:-metadata}}); $rounds rounds of $n requests a row at $c concurrent; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A sum_a sum_b
for r in $(seq "$rounds"); do
	line="round $r"
	for s in $scenarios; do
		load a "$s" &
		la=$!
		load b "$s" &
		lb=$!
		wait "$la" "$lb"
		for side in a b; do
			[[ $(field "$side" errors) == 0 ]] || { echo "$s on $side: requests failed: $(jq -c '{errors_by_kind, statuses}' "$work/$side.json")" >&2; exit 1; }
		done
		ca=$(field a cpu_us_per_req) cb=$(field b cpu_us_per_req)
		sum_a[$s]=$(awk -v x="${sum_a[$s]:-0}" -v y="$ca" 'BEGIN { print x + y }')
		sum_b[$s]=$(awk -v x="${sum_b[$s]:-0}" -v y="$cb" 'BEGIN { print x + y }')
		line+=$(printf ' | %s A %.0f µs %.0f allocs, B %.0f µs %.0f allocs' "$s" "$ca" "$(field a allocs_per_req)" "$cb" "$(field b allocs_per_req)")
	done
	echo "$line"
done
line="CPU per request, B ÷ A over the rounds:"
for s in $scenarios; do line+=$(awk -v s="$s" -v a="${sum_a[$s]}" -v b="${sum_b[$s]}" 'BEGIN { printf " %s %.3f", s, b / a }'); done
echo "$line"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
