#!/usr/bin/env bash
# Renders the Helm chart into the plain manifests of dist/, for installs with
# kubectl alone (`kubectl create namespace kube-federation-system` then
# `kubectl apply -f dist/kubefed.yaml`), as KubeFed users install:
#   dist/kubefed.yaml             Cluster scope
#   dist/kubefed-namespaced.yaml  Namespaced scope (federates only its namespace)
# Each holds the CRDs, RBAC, the controller-manager Deployment and the
# KubeFedConfig defaulting policy (for Kubernetes 1.36 and later, which serve
# admissionregistration.k8s.io/v1 MutatingAdmissionPolicy), all in
# kube-federation-system. No custom
# resource: applied in one file with their CRDs they would race the CRDs'
# registration, so the controller-manager creates the KubeFedConfig and the
# default FederatedTypeConfigs on its first start. test/chart fails when
# dist/ differs from what this script renders.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helm=${HELM:-$root/bin/helm}
out=${1:-$root/dist}
mkdir -p "$out"

render() {
  local scope=$1 file=$2
  {
    echo "# KubeFed-compatible federation control plane, ${scope} scope: rendered from"
    echo "# charts/kubefed by hack/release-manifests.sh; do not edit. Install with:"
    echo "#   kubectl create namespace kube-federation-system"
    echo "#   kubectl apply -f ${file##*/}"
    "$helm" template kubefed "$root/charts/kubefed" \
      --namespace kube-federation-system --include-crds \
      --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy \
      --set global.scope="$scope" \
      --set kubefedConfig.create=false \
      --set defaultTypes.install=false \
      --set defaultTypes.installOnFirstStart=true
  } > "$file"
}

render Cluster "$out/kubefed.yaml"
render Namespaced "$out/kubefed-namespaced.yaml"
echo "release-manifests: wrote $out/kubefed.yaml and $out/kubefed-namespaced.yaml"
