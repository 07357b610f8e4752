# kubefed: a KubeFed-compatible federation control plane.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN ?= $(CURDIR)/bin
LOCAL ?= $(CURDIR)/.local
MEMBERS ?= 2
CONTROLLER_GEN := go tool controller-gen
GINKGO := go tool ginkgo
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/kubefed-io/kubefed/pkg/version.Version=$(VERSION) -X github.com/kubefed-io/kubefed/pkg/version.Commit=$(GIT_COMMIT)
IMG ?= kubefed:$(VERSION)

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: helm ## Generate CRDs, the generic Federated<T> schema, the default federated types and dist/.
	$(CONTROLLER_GEN) crd paths=./api/core/... paths=./api/scheduling/... paths=./api/multiclusterdns/... \
		output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/types/... output:crd:artifacts:config=pkg/federatedtype/schema
	go run ./hack/gen-default-types
	hack/sync-chart.sh
	hack/release-manifests.sh

.PHONY: fmt
fmt:
	go fmt ./...

.PHONY: vet
vet:
	go vet ./...
	go vet -tags integration,e2e ./...

.PHONY: build
build: ## Build the controller-manager and kubefedctl into ./bin.
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/controller-manager ./cmd/controller-manager
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/kubefedctl ./cmd/kubefedctl

.PHONY: dns-tools
dns-tools: ## Build ExternalDNS into ./bin and install BIND (named, dig, tsig-keygen) for the DNS e2e (cached).
	hack/build-dns-tools.sh

.PHONY: helm
helm: ## Build the helm CLI into ./bin (cached).
	hack/build-helm.sh

.PHONY: cluster-tools
cluster-tools: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into ./bin (cached).
	hack/build-cluster-tools.sh

##@ Test

.PHONY: test
test: cluster-tools helm build verify unit integration e2e ## Everything CI runs.

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted or vet complains.
	hack/verify.sh

RACE_PACKAGES := ./controllers/... ./pkg/controllermanager/... ./pkg/informermanager/... ./pkg/clusterclient/... ./pkg/sharding/... ./pkg/kubefedctl/... ./test/framework/...

.PHONY: unit
unit: ## Unit tests (no clusters); the packages that start goroutines again under the race detector.
	go test -count=1 ./...
	go test -count=1 -race $(RACE_PACKAGES)

.PHONY: integration
integration: cluster-tools helm build ## Integration tests against real local control planes; the engine's and the controller-manager's under the race detector.
	go test -count=1 -tags integration -timeout 20m $$(go list ./... | grep -v -e '/controllers/sync$$' -e '/pkg/controllermanager$$')
	go test -count=1 -race -tags integration -timeout 20m ./controllers/sync/ ./pkg/controllermanager/

.PHONY: release-manifests
release-manifests: helm ## Render the chart into dist/: one YAML per scope, for kubectl apply.
	hack/release-manifests.sh

.PHONY: chart-test
chart-test: cluster-tools helm build ## Lint, render and install the Helm chart on a local host cluster.
	go test -count=1 -tags integration -timeout 20m ./test/chart/...

.PHONY: browser-tools
browser-tools: ## Debian's Chromium and test/browser's npm packages, for the dashboard's browser test.
	hack/browser-tools.sh

.PHONY: e2e
e2e: cluster-tools dns-tools browser-tools build ## Ginkgo end-to-end suite on a host and 2 member clusters.
	$(GINKGO) -tags e2e --timeout 40m -v ./test/e2e/...

##@ Local clusters

.PHONY: clusters-up
clusters-up: cluster-tools ## Start a host and $(MEMBERS) member clusters under $(LOCAL).
	go run ./hack/localcluster up --dir $(LOCAL) --members $(MEMBERS)

.PHONY: demo-down
demo-down: clusters-down ## Stop the demo: its controller-manager and clusters.

.PHONY: clusters-down
clusters-down: ## Stop the local clusters.
	hack/demo-down.sh $(LOCAL)

.PHONY: demo
demo: cluster-tools build ## The local federation demo.
	hack/demo.sh

BENCH_ARGS ?=
.PHONY: bench
bench: cluster-tools build ## Propagation benchmark on local clusters, results in docs/performance.md's format (BENCH_ARGS="-n 200" for a quicker run).
	go run ./hack/bench $(BENCH_ARGS)

##@ Build

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	docker build -t $(IMG) --build-arg VERSION=$(VERSION) .

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
