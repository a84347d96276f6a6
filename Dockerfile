# syntax=docker/dockerfile:1
#
# The eva-operator image: the compiled operator on Node.js 24 LTS, its helm (eva-helm-server: the helm
# SDK in one long-lived process, helm-server/), the pinned helm CLI (the fallback, and for people
# debugging in the pod) with its render guard plugin, the bundled module charts, seed data and images.txt.
#
#   docker build -t ghcr.io/aidonow/eva-operator:0.1.0 .
#   scripts/build-image.sh        (no daemon: buildah; local bases where the public ones cannot be pulled)
#
# Versions come from versions.env (the build args below default to it; scripts/check-images.sh fails
# when they disagree). Every base image is pinned by digest and listed in images.txt.
#
# Runs as uid 65532 on a read-only root filesystem; it needs writable /tmp and a tmpfs at
# /run/helm-secrets (the chart mounts both), e.g.
#   docker run --read-only --tmpfs /tmp --tmpfs /run/helm-secrets -e OPERATOR_VERSION=0.1.0 \
#     -e NATS_URL=nats://nats:4222 -v ~/.kube/config:/kubeconfig:ro -e KUBECONFIG=/kubeconfig <image>

# The base images. A release builds with these defaults; where they cannot be pulled (an air-gapped
# machine), scripts/build-image.sh builds equivalent local bases (Debian from mmdebstrap, Node.js from
# the npm `node` package, Go from the module proxy) and passes them as these build arguments.
ARG GOLANG_IMAGE=docker.io/library/golang:1.26.8-alpine@sha256:ce864e7223ac17b1775e6fd0b4c0db580c2eb50e7953a427916379e4b92a1628
ARG NODE_IMAGE=docker.io/library/node:24.21.0-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6

# ---- helm, built from source at HELM_VERSION with the Go toolchain of versions.env (GO_TOOLCHAIN) ----
FROM ${GOLANG_IMAGE} AS helm
ARG HELM_VERSION=4.3.1
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
# The same recipe as scripts/lib/build-components.sh, so the image's helm is the one the tests run.
RUN go install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v${HELM_VERSION}" \
      "helm.sh/helm/v4/cmd/helm@v${HELM_VERSION}" \
 && test "$(/go/bin/helm version --template '{{.Version}}')" = "v${HELM_VERSION}"

# ---- the operator's helm: the helm SDK at HELM_VERSION in one long-lived process (helm-server/) ----
FROM ${GOLANG_IMAGE} AS helm-server
ARG HELM_VERSION=4.3.1
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
WORKDIR /src
COPY helm-server/go.mod helm-server/go.sum ./
# The same recipe as scripts/lib/build-components.sh helm-server (tests run that build).
RUN test "$(go list -m -f '{{.Version}}' helm.sh/helm/v4)" = "v${HELM_VERSION}" && go mod download
COPY helm-server/*.go ./
RUN go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v${HELM_VERSION}" -o /out/eva-helm-server .

# ---- the operator, compiled from TypeScript; dev dependencies pruned ----
FROM ${NODE_IMAGE} AS build
ARG NODE_VERSION=24.21.0
# Unset in a release. A build host whose traffic passes a TLS-inspecting proxy mounts its CA bundle
# for the build and names it here, for npm (scripts/build-image.sh does, from SSL_CERT_FILE).
ARG NODE_EXTRA_CA_CERTS
RUN test "$(node --version)" = "v${NODE_VERSION}"
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY scripts/build.ts ./scripts/build.ts
COPY src ./src
# One bundled module (dist/cli.js): the runtime needs no node_modules.
RUN npm run build \
 && node dist/cli.js crd >/dev/null

# ---- runtime ----
FROM ${NODE_IMAGE}
ARG OPERATOR_VERSION=0.1.0
LABEL org.opencontainers.image.title="eva-operator" \
      org.opencontainers.image.description="Turns one EvaTenant per customer into a provisioned, isolated tenant." \
      org.opencontainers.image.source="https://github.com/aidonow/eva-operator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${OPERATOR_VERSION}"
# The runtime needs node and helm only: package managers go (less to patch, nothing to run).
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /opt/yarn-* \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg
COPY --from=helm /go/bin/helm /usr/local/bin/helm
COPY --from=helm-server /out/eva-helm-server /usr/local/bin/eva-helm-server
COPY --from=build /src/package.json /app/package.json
COPY --from=build /src/dist /app/dist
# The render guard's helm plugin: helm runs its client (perl, Essential in Debian, so in every
# node:*-slim base) on every module release; the client asks the operator process over a unix socket.
COPY helm-plugins /app/helm-plugins
# The client compiles with the base's perl and, without the operator's socket, fails closed (exit 1, no output).
RUN perl -c /app/helm-plugins/eva-render-guard/guard-client.pl \
 && { out="$(echo 'kind: Namespace' | perl /app/helm-plugins/eva-render-guard/guard-client.pl 2>/dev/null)"; test $? -eq 1 && test -z "$out"; }
COPY charts/modules /charts/modules
# The operator chart's kubeVersion: the Kubernetes floor `eva-operator preflight` checks (its `helm test`).
COPY charts/eva-operator/Chart.yaml /charts/eva-operator/Chart.yaml
COPY seeds /seeds
COPY images.txt /etc/eva-operator/images.txt
# Everything the operator writes goes to /tmp and /run/helm-secrets (emptyDirs in the chart).
# V8's heap from the container's memory limit (40 % of it for the old space: the rest is for the helm
# server, which shares the limit), and a young generation of 8 MiB: the default one keeps ~80 MiB more
# resident for nothing, 2 MiB spent 10-15 % more CPU on scavenges for 10-15 MiB less (docs/measurements.md).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size-percentage=40" \
    HOME=/tmp \
    TMPDIR=/tmp \
    CHART_BASE_PATH=/charts \
    SEEDS_BASE_PATH=/seeds \
    IMAGES_FILE=/etc/eva-operator/images.txt \
    HELM_BINARY=/usr/local/bin/helm \
    HELM_SERVER_BINARY=/usr/local/bin/eva-helm-server \
    HELM_SECRETS_DIR=/run/helm-secrets \
    HELM_CACHE_HOME=/tmp/helm/cache \
    HELM_CONFIG_HOME=/tmp/helm/config \
    HELM_DATA_HOME=/tmp/helm/data
WORKDIR /app
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["run"]
