#!/usr/bin/env bash
# The local federation demo: a host and two member clusters on this machine,
# the KubeFed CRDs and default federated types installed in the host.
# Everything runs as local processes; `make clusters-down` stops them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
dir=${LOCAL:-$root/.local}
ns=kube-federation-system
kubeconfig=$dir/kubeconfig
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting a host and 2 member clusters (etcd + kube-apiserver + kube-controller-manager each)"
go run ./hack/localcluster down --dir "$dir" >/dev/null 2>&1 || true
go run ./hack/localcluster up --dir "$dir" --members 2

step "Installing the KubeFed CRDs into the host"
kubectl --context host apply --server-side -f config/crd/bases -f config/crd/federated >/dev/null
kubectl --context host wait --for condition=established --timeout=60s crd --all >/dev/null
kubectl --context host get crd -o name | grep kubefed.io

step "Enabling the default federated types"
kubectl --context host create namespace "$ns" --dry-run=client -o yaml | kubectl --context host apply -f - >/dev/null
kubectl --context host apply --server-side -f config/default-types >/dev/null
kubectl --context host -n "$ns" get federatedtypeconfigs

step "Done"
cat <<MSG
Clusters: host, member1, member2 (kubeconfig: $kubeconfig)
  $root/bin/kubectl --kubeconfig $kubeconfig --context host get crd
  $root/bin/kubectl --kubeconfig $kubeconfig --context member1 get ns
Stop them with: make clusters-down
MSG
