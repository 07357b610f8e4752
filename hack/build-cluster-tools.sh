#!/usr/bin/env bash
# Builds the binaries a local federation runs on — etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and kwok (simulated
# nodes) — from the Go module proxy into ./bin.
# Each tools module is rebuilt only when its go.mod/go.sum (or this script)
# changed since the last build; the Go build cache makes a rebuild a relink.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${KUBEFED_BIN_DIR:-$root/bin}
mkdir -p "$bin"

kube_version=v1.37.2
# k8s.io/component-base/version defaults to v0.0.0-master; stamp the release so
# `kube-apiserver --version` and /version report what was built.
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X ${pkg}.gitVersion=${kube_version}"
  kube_ldflags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=37"
  kube_ldflags+=" -X ${pkg}.gitTreeState=clean"
  kube_ldflags+=" -X ${pkg}.buildDate=2026-01-01T00:00:00Z"
done

stamp_of() { # module dir -> content hash of what decides the build
  cat "$1/go.mod" "$1/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}

out_name() { # package path -> binary name
  case "$1" in
    go.etcd.io/etcd/server/v3) echo etcd ;;
    *) basename "$1" ;;
  esac
}

build_module() { # name, module dir, ldflags, package...
  local name=$1 dir=$2 ldflags=$3; shift 3
  local want have=""
  want=$(stamp_of "$dir")
  [[ -f "$bin/.$name.stamp" ]] && have=$(cat "$bin/.$name.stamp")
  local missing=0
  for pkg in "$@"; do [[ -x "$bin/$(out_name "$pkg")" ]] || missing=1; done
  if [[ "$want" == "$have" && $missing == 0 ]]; then
    echo "build-cluster-tools: $name is up to date"
    return
  fi
  echo "build-cluster-tools: building $name (the first build takes minutes)"
  for pkg in "$@"; do
    local out="$bin/$(out_name "$pkg")"
    (cd "$dir" && CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out" "$pkg")
  done
  echo "$want" > "$bin/.$name.stamp"
}

build_module etcd "$root/hack/tools/etcd" "" go.etcd.io/etcd/server/v3
build_module kube "$root/hack/tools/kube" "$kube_ldflags" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl
# kwok (sigs.k8s.io/kwok) in a module of its own: it is written against its
# own k8s.io release, which the kube module's replaces would override.
build_module kwok "$root/hack/tools/kwok" "" sigs.k8s.io/kwok/cmd/kwok
# kwok v0.8.0 has no built-in stages: the ones that make nodes Ready and keep
# them so, and pods Ready (Job pods Succeeded) and deleted, from its module.
stages="$bin/kwok-stages.yaml"
if [[ ! -s "$stages" || "$bin/kwok" -nt "$stages" ]]; then
  kwok_dir=$(cd "$root/hack/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  {
    for s in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
      echo "---"
      cat "$kwok_dir/kustomize/stage/$s.yaml"
    done
  } > "$stages.tmp"
  mv "$stages.tmp" "$stages"
fi
