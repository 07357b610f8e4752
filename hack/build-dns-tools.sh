#!/usr/bin/env bash
# Installs what the multi-cluster DNS end-to-end spec runs: ExternalDNS, built
# from the Go module proxy into ./bin, and BIND (named, dig, tsig-keygen) from
# Debian's packages. ExternalDNS is rebuilt only when its tools module (or this
# script) changed since the last build; a cold build takes minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${KUBEFED_BIN_DIR:-$root/bin}
mkdir -p "$bin"

# ExternalDNS v0.20.0 is the last release whose CRD source honours
# --crd-source-apiversion/--crd-source-kind, which point it at
# multiclusterdns.kubefed.io/v1alpha1 DNSEndpoints; the tools module pins it.
tools=$root/hack/tools/externaldns
want=$(cat "$tools/go.mod" "$tools/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
have=""
[[ -f "$bin/.externaldns.stamp" ]] && have=$(cat "$bin/.externaldns.stamp")
if [[ "$want" == "$have" && -x "$bin/external-dns" ]]; then
  echo "build-dns-tools: external-dns is up to date"
else
  echo "build-dns-tools: building external-dns (the first build takes minutes)"
  version=$(cd "$tools" && go list -m -f '{{.Version}}' sigs.k8s.io/external-dns)
  (cd "$tools" && CGO_ENABLED=0 go build \
    -ldflags "-X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$version" \
    -o "$bin/external-dns" sigs.k8s.io/external-dns)
  echo "$want" > "$bin/.externaldns.stamp"
fi

if command -v named >/dev/null && command -v dig >/dev/null && command -v tsig-keygen >/dev/null; then
  echo "build-dns-tools: named, dig and tsig-keygen are installed"
  exit 0
fi
echo "build-dns-tools: installing bind9 and bind9-dnsutils from Debian"
sudo=""
if [[ $(id -u) != 0 ]]; then
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q --no-install-recommends bind9 bind9-dnsutils; then
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends bind9 bind9-dnsutils
fi
# The package's service is not wanted: the spec runs its own named on a
# loopback port. Debian's policy usually keeps it from starting in a
# container; where it did start, it is left alone.
for tool in named dig tsig-keygen; do
  command -v "$tool" >/dev/null || { echo "build-dns-tools: $tool is missing after the install" >&2; exit 1; }
done
