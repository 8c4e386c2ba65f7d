# syntax=docker/dockerfile:1
#
# The gateway's image: one static binary on distroless/static (CA certificates, tzdata, an
# /etc/passwd with the nonroot user; no shell, no package manager), run as uid 65532.
#
#   docker build --build-arg VERSION=0.1.0 -t <registry>/llm-gateway:0.1.0 .
#
# Never built on the machine this was written on (it has no container runtime): the build
# command of the second stage was run there as written, and its binary served the chart's
# probes (README "Deploy").

# The Go of go.mod's go line. The builder runs on the build machine's platform and
# cross-compiles (no emulation) for --platform's.
ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
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
# CGO off: a static binary, nothing needed from the base image but CA certificates.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X github.com/nirmata/llm-gateway/internal/buildinfo.version=${VERSION}" -o /out/gateway ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /gateway
# Numeric, so Kubernetes' runAsNonRoot can check it without a passwd lookup.
USER 65532:65532
# REST (/llm-apps/chat, /v1, /healthz, /readyz, /metrics) and gRPC.
EXPOSE 8080 9090
ENTRYPOINT ["/gateway"]
