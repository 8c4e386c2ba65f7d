# syntax=docker/dockerfile:1
#
# The gateway's image: one static binary on distroless/static (CA certificates, tzdata, an
# /etc/passwd with the nonroot user; no shell, no package manager), run as uid 65532.
#
#   docker build --build-arg VERSION=0.1.0 -t <registry>/llm-gateway:0.1.0 .
#
# No registry is reachable where this was written, so these bases have never been pulled
# there: `make image-check` (scripts/image-check.sh) builds this file's last stage on
# `scratch` with the binary built by this file's build script, and runs it with podman
# (README "Deploy").

# The Go of go.mod's go line. The builder runs on the build machine's platform and
# cross-compiles (no emulation) for --platform's.
ARG GO_VERSION=1.26
# The builder and the base: overridable only so that scripts/image-check.sh can build this file
# on a machine that reaches no registry, with local stand-ins.
ARG BUILD_IMAGE=golang:${GO_VERSION}
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot
FROM --platform=$BUILDPLATFORM ${BUILD_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
# gateway version prints it; empty: "devel".
ARG VERSION=""
WORKDIR /src
# Modules first, so a code change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY gen/ gen/
COPY internal/ internal/
# The release build's flags (CGO off: a static binary) live in the script, which
# scripts/image-check.sh runs too.
COPY scripts/build-gateway.sh scripts/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH sh scripts/build-gateway.sh /out/gateway "$VERSION"

FROM ${BASE_IMAGE}
COPY --from=build /out/gateway /gateway
# Numeric, so Kubernetes' runAsNonRoot can check it without a passwd lookup.
USER 65532:65532
# REST (/llm-apps/chat, /v1, /healthz, /readyz, /metrics) and gRPC.
EXPOSE 8080 9090
ENTRYPOINT ["/gateway"]
