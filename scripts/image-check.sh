#!/usr/bin/env bash
# image-check (`make image-check`, CI after `make chart`): builds the gateway's image from the
# Dockerfile on a machine that reaches no container registry, runs it with podman, and checks
# what a cluster would rely on.
#
# What it proves, of the image built from the Dockerfile as written (its two stages, its
# .dockerignore, its build script scripts/build-gateway.sh, USER, EXPOSE, ENTRYPOINT):
# - the Dockerfile builds: its context holds what the build needs, and its build stage gives
#   a static binary (the runtime base has no libc) that prints the VERSION build argument;
# - run as the chart runs it (read-only root filesystem, no capabilities, no new
#   privileges), ports published on loopback, on the embedded simulator (--sim): /healthz,
#   /readyz says ready, and a chat over HTTP is answered;
# - the process runs as the Dockerfile's USER, 65532, not root (its /proc status, from the host);
# - SIGTERM drains: /readyz turns 503 "draining", a new call gets the documented 503, a stream in
#   flight that can end within --drain-timeout ends normally, one that cannot ends with the
#   documented shutdown error, and the container exits 0 within --drain-timeout + 5 s.
#
# What it cannot prove: no registry is reachable, so neither base is pulled. Both are local
# stand-ins passed as the Dockerfile's BUILD_IMAGE and BASE_IMAGE arguments, made from
# `scratch` by `podman import`:
# - for golang:GO_VERSION, this machine's Go (`go version`; golang:1.26 has the newest 1.26
#   release), busybox's sh, and GOPROXY pointing at this machine's module download cache,
#   mounted read-only (so `go mod download` runs offline);
# - for gcr.io/distroless/static-debian12:nonroot, the distribution's CA bundle at
#   /etc/ssl/certs/ca-certificates.crt (where Go looks first), /etc/passwd and /etc/group
#   naming nonroot (65532), /home/nonroot and /tmp; distroless's other files (tzdata,
#   os-release, its nsswitch.conf) are not there.
# Podman's builder (buildah) and runc stand in for BuildKit and containerd: one platform, this
# machine's (TARGETOS and TARGETARCH are passed as buildx sets them). Nothing here exercises a
# registry, Kubernetes (the chart: `make chart`), real Bedrock or TLS to it.
#
# Needs root (rootful podman, as in CI); installs podman, runc and busybox-static when missing.
# Everything podman keeps (storage, state, buildah's cache mounts) lives in a temp dir that
# goes on exit; KEEP_WORK=1 keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."

drain=8            # the gateway's --drain-timeout, seconds
delta_delay=200ms  # the simulator's delay between stream deltas: a short answer takes ~3 s

fail() {
	echo "image-check: FAILED: $*" >&2
	exit 1
}
step() { echo "image-check: [$((SECONDS - started))s] $*" >&2; }
started=$SECONDS

[[ $EUID -eq 0 ]] || fail "needs root (rootful podman; CI runs as root)"
command -v curl >/dev/null || fail "needs curl"
# busybox-static, not busybox: the golang stand-in's sh must run with no libc beside it.
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! dpkg -s busybox-static >/dev/null 2>&1; then
	apt-get update -qq && apt-get install -y -qq podman runc busybox-static >/dev/null
fi
podman --version >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/llm-gateway-image.XXXXXX")
mkdir "$work/tmp"
# runc and cgroupfs: what works in this sandbox; no default ulimits, since the sandbox refuses
# raising rlimits; events and logs in files, as there is no systemd journal.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$work/containers.conf
# buildah keeps RUN --mount=type=cache directories under TMPDIR.
export TMPDIR=$work/tmp
pm() { podman --root "$work/root" --runroot "$work/run" "$@"; }
ctr=llm-gateway-check
streams=()

# cleanup shows the container's logs when the check failed, then removes everything it made.
cleanup() {
	local rc=$?
	for pid in "${streams[@]}"; do kill "$pid" 2>/dev/null || true; done
	if [[ $rc -ne 0 ]] && pm container exists "$ctr" 2>/dev/null; then
		echo "--- container $ctr: $(pm inspect -f '{{.State.Status}}, exit code {{.State.ExitCode}}' "$ctr")" >&2
		echo "--- its logs:" >&2
		pm logs "$ctr" >&2 || true
	fi
	if [[ $rc -ne 0 ]]; then
		for f in "$work"/*.out; do [[ -f $f ]] && { echo "--- $f:" >&2; tail -n 5 "$f" >&2; }; done
	fi
	pm rm -af >/dev/null 2>&1 || true
	pm rmi -af >/dev/null 2>&1 || true
	if [[ -n ${KEEP_WORK:-} ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The stand-in bases (see the header). The module cache must hold every module go.mod needs.
step "stand-in bases"
go mod download
goroot=$(go env GOROOT)
mkdir -p "$work/go/bin" "$work/go/tmp" "$work/go/root"
chmod 1777 "$work/go/tmp"
cp /bin/busybox "$work/go/bin/busybox"
ln -s busybox "$work/go/bin/sh"
tar -c -C / "${goroot#/}" -C "$work/go" bin tmp root |
	pm import --quiet --change "ENV PATH=/go/bin:$goroot/bin:/bin" --change "ENV GOPATH=/go" --change "ENV HOME=/root" \
		--change "ENV GOTOOLCHAIN=local" --change "ENV GOPROXY=file:///goproxy" --change "ENV GOSUMDB=off" \
		--change "WORKDIR /go" - localhost/golang-standin >/dev/null
mkdir -p "$work/base/etc/ssl/certs" "$work/base/home/nonroot" "$work/base/tmp"
cp /etc/ssl/certs/ca-certificates.crt "$work/base/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$work/base/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$work/base/etc/group"
chown 65532:65532 "$work/base/home/nonroot"
chmod 700 "$work/base/home/nonroot"
chmod 1777 "$work/base/tmp"
tar -c -C "$work/base" . | pm import --quiet - localhost/distroless-standin >/dev/null

version=image-check-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
step "podman build of the Dockerfile (VERSION=$version; a cold Go build: minutes)"
pm build --pull=never -f Dockerfile -t localhost/llm-gateway:check \
	--build-arg BUILD_IMAGE=localhost/golang-standin --build-arg BASE_IMAGE=localhost/distroless-standin \
	--build-arg TARGETOS="$(go env GOOS)" --build-arg TARGETARCH="$(go env GOARCH)" --build-arg VERSION="$version" \
	-v "$(go env GOMODCACHE)/cache/download:/goproxy:ro" . >"$work/build.out" 2>&1 ||
	{ cat "$work/build.out" >&2; fail "podman build"; }

step "image config"
config=$(pm image inspect localhost/llm-gateway:check --format '{{.Config.User}} {{json .Config.ExposedPorts}} {{json .Config.Entrypoint}}')
echo "  $config" >&2
[[ $config == '65532:65532 {"8080/tcp":{},"9090/tcp":{}} ["/gateway"]' ]] || fail "image config: $config"

# The chart's pod security context, as far as podman has it.
run_flags=(--read-only --cap-drop=all --security-opt=no-new-privileges)
got=$(pm run --rm "${run_flags[@]}" localhost/llm-gateway:check version)
[[ $got == "gateway $version "* ]] || fail "gateway version printed \"$got\", not gateway $version"

step "run: --sim --drain-timeout ${drain}s --sim-delta-delay $delta_delay"
pm run -d --name "$ctr" "${run_flags[@]}" -p 127.0.0.1::8080 -p 127.0.0.1::9090 localhost/llm-gateway:check \
	--sim --drain-timeout "${drain}s" --sim-delta-delay "$delta_delay" >/dev/null
url=http://$(pm port "$ctr" 8080/tcp)
for _ in $(seq 100); do
	body=$(curl -s --max-time 1 "$url/readyz" || true)
	[[ $body == *'"status":"ready"'* ]] && break
	sleep 0.1
done
[[ $body == '{"status":"ready","upstream":"bedrock-simulator","store":"memory"}' ]] || fail "/readyz: \"$body\""
[[ $(curl -s "$url/healthz" -o /dev/null -w '%{http_code}') == 200 ]] || fail "/healthz is not 200"

chat=$(curl -s "$url/llm-apps/chat" -d '{"messages":[{"role":"user","content":"What can you do?"}]}')
[[ $chat == '{"message":"Hello from the Bedrock simulator. You said: What can you do?","finish_reason":"stop",'* ]] ||
	fail "chat: $chat"

pid=$(pm inspect -f '{{.State.Pid}}' "$ctr")
uid=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
[[ $uid == "65532 65532 65532 65532" ]] || fail "the gateway runs as uid $uid, not 65532"
echo "  /readyz ready, a chat answered, uid $uid" >&2

step "SIGTERM with two streams in flight"
# ~13 deltas: ends within the drain. A hundred words, echoed: ~110 deltas, cut by the drain.
curl -sN "$url/v1/chat/completions" -d '{"model":"us.anthropic.claude-sonnet-4-20250514-v1:0","stream":true,
	"messages":[{"role":"user","content":"hi there"}]}' >"$work/short.out" &
streams+=($!)
long=$(printf 'word%.0s ' $(seq 100))
curl -sN "$url/llm-apps/chat?stream=true" -d "{\"messages\":[{\"role\":\"user\",\"content\":\"$long\"}]}" >"$work/long.out" &
streams+=($!)
for _ in $(seq 100); do
	grep -q '"content":"Hello' "$work/short.out" && grep -q '"type":"content"' "$work/long.out" && break
	sleep 0.1
done
{ grep -q '"content":"Hello' "$work/short.out" && grep -q '"type":"content"' "$work/long.out"; } ||
	fail "the streams did not start"
t0=$(date +%s%N)
pm kill --signal TERM "$ctr" >/dev/null
for _ in $(seq 100); do
	body=$(curl -s --max-time 1 "$url/readyz" || true)
	[[ $body == *'"status":"draining"'* ]] && break
	sleep 0.1
done
[[ $body == *'"status":"draining"'* ]] || fail "/readyz while draining: \"$body\""
refused=$(curl -s "$url/llm-apps/chat" -w ' %{http_code}' -d '{"messages":[{"role":"user","content":"hi"}]}')
[[ $refused == '{"error":"the gateway is shutting down; retry on another instance","code":"unavailable",'*' 503' ]] ||
	fail "a new call while draining: $refused"
code=$(timeout $((drain + 30)) podman --root "$work/root" --runroot "$work/run" wait "$ctr") || fail "the container did not stop"
t1=$(date +%s%N)
exited=$(pm inspect -f '{{.State.FinishedAt.UnixNano}}' "$ctr")
[[ $code == 0 ]] || fail "the container exited $code, not 0"
for pid in "${streams[@]}"; do wait "$pid" || true; done
streams=()
{ grep -q '"finish_reason":"stop"' "$work/short.out" && [[ $(tail -n 2 "$work/short.out" | head -n 1) == 'data: [DONE]' ]]; } ||
	fail "the stream that could end within the drain did not end normally"
[[ $(tail -n 1 "$work/long.out") == '{"type":"error","error":{"code":"unavailable","message":"the gateway is shutting down; retry on another instance"}}' ]] ||
	fail "the stream cut by the drain did not end with the shutdown error"
# The short stream was in flight when the drain began: its access line follows "draining".
order=$(pm logs "$ctr" 2>&1 | grep -E '"msg":"draining"|"route":"/v1/chat/completions"' | grep -oE '"msg":"draining"|"status":200' | tr '\n' ' ')
[[ $order == '"msg":"draining" "status":200 ' ]] || fail "the short stream did not end during the drain: $order"
exit_ms=$(((exited - t0) / 1000000))
wait_ms=$(((t1 - t0) / 1000000))
((exit_ms <= (drain + 5) * 1000)) || fail "the gateway exited ${exit_ms} ms after SIGTERM, over --drain-timeout + 5 s"
echo "  SIGTERM → exit 0 in ${exit_ms} ms (podman wait returned after ${wait_ms} ms); drain timeout ${drain} s" >&2
echo "  a stream ended with [DONE] during the drain; one was cut with the shutdown error" >&2

step "passed"
