#!/bin/sh
# The gateway's release build, the one place its flags are written: the Dockerfile's build
# stage runs it, and so does scripts/image-check.sh, so the binary the check runs is built as
# the image's is.
#
#   scripts/build-gateway.sh OUT [VERSION]
#
# CGO off: a static binary, which needs nothing from its image but CA certificates.
# -trimpath: no build machine paths in it; -s -w: no symbol table or DWARF; VERSION is what
# `gateway version` prints (empty: "devel"). GOOS and GOARCH, when set, cross-compile.
# POSIX sh, so any golang image runs it (alpine's too); run from the module's root.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUT [VERSION]" >&2
	exit 2
fi
export CGO_ENABLED=0
exec go build -trimpath -ldflags "-s -w -X github.com/nirmata/llm-gateway/internal/buildinfo.version=${2:-}" -o "$1" ./cmd/gateway
