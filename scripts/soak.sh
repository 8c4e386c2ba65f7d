#!/usr/bin/env bash
# Soak: SOAK_CONCURRENCY (1000) concurrent JSONL streams for SOAK_DURATION (60s) against the
# gateway, the gateway SigV4-signing to a simulator that waits SOAK_DELTA_DELAY (50ms)
# between deltas, so each stream stays open a second or two and the gateway holds about
# SOAK_CONCURRENCY streams the whole time. Every stream must end with its done line: any
# error fails the run. Reports the gateway's RSS at the start, at the plateau (SOAK_PLATEAU,
# 20s in), at the end, SOAK_COOLDOWN (10s) after the end, and its peak; a leak shows as an end
# well above the plateau that does not come down once idle.
#
# Knobs (environment): SOAK_CONCURRENCY, SOAK_DURATION, SOAK_DELTA_DELAY, SOAK_PLATEAU,
# SOAK_SAMPLE_EVERY (5s), SOAK_COOLDOWN (seconds, 10), GATEWAY_FLAGS, SOAK_SIM_FLAGS (extra
# simulator flags: "--fault truncate,times=3" proves a failing soak fails), KEEP_WORK=1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

concurrency=${SOAK_CONCURRENCY:-1000}
duration=${SOAK_DURATION:-60s}
delta=${SOAK_DELTA_DELAY:-50ms}
plateau=${SOAK_PLATEAU:-20s}
every=${SOAK_SAMPLE_EVERY:-5s}
cooldown=${SOAK_COOLDOWN:-10}

raise_nofile
build
sim=$(free_port)
# shellcheck disable=SC2086 # the extra flags are meant to split into words
start_sim "$sim" --delta-delay "$delta" ${SOAK_SIM_FLAGS:-}
gw=$(free_port)
start_gateway "$gw" "$sim"
gw_pid=$started

echo "soak: $concurrency streams for $duration, simulator --delta-delay $delta, gateway pid $gw_pid" >&2
status=0
# -rss-log prints each sample to stderr as the run goes, so a long soak shows progress.
"$bin/loadgen" -url "http://127.0.0.1:$gw" -scenario stream -header "$gateway_auth" \
	-concurrency "$concurrency" -duration "$duration" -warmup 20 \
	-pid "$gw_pid" -sample-every "$every" -rss-log -metrics-url "http://127.0.0.1:$gw/metrics" \
	-json >"$work/soak.json" || status=$?
[[ -s $work/soak.json ]] || exit 1
sleep "$cooldown"
idle_kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$gw_pid/status")

plateau_s=$(awk -v d="$plateau" 'BEGIN { sub(/s$/, "", d); print d + 0 }')
q() { jq -r "(try ($1) catch null) // \"n/a\"" "$work/soak.json"; }
mib() { [[ $1 == n/a ]] && echo n/a || awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

echo
echo "### Soak: $concurrency concurrent streams, $duration, delta delay $delta ($(nproc) cores)"
echo
echo "| requests | errors | req/s | p50 ms | p99 ms | first line p50 ms | lines/stream | CPU µs/req | RSS start | RSS plateau (${plateau_s}s) | RSS end | RSS ${cooldown}s later | RSS peak |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
r1() { q "$1 * 10 | round / 10"; } # one decimal
echo "| $(q .requests) | $(q .errors) | $(q '.req_per_s | round') | $(r1 .p50_ms) | $(r1 .p99_ms) | $(r1 .first_line_p50_ms) | $(r1 .lines_per_stream) | $(q '.cpu_us_per_req | round') | $(mib "$(q .rss_start_kib)") | $(mib "$(q "[.rss_samples[] | select(.t_s >= $plateau_s)][0].kib")") | $(mib "$(q .rss_end_kib)") | $(mib "$idle_kib") | $(mib "$(q .rss_peak_kib)") |"
echo
echo "RSS samples (s: MiB): $(jq -r '[.rss_samples[] | "\(.t_s | floor): \(.kib / 1024 * 10 | round / 10)"] | join(", ")' "$work/soak.json")"
if [[ $(q .errors) != 0 || $status -ne 0 ]]; then
	echo
	echo "FAILED: $(q .errors) errors $(jq -c '{errors_by_kind, statuses}' "$work/soak.json")"
	exit 1
fi
