#!/usr/bin/env bash
# Builds the helm CLI from the Go module proxy into ./bin, for the chart's
# lint, template and install tests. The version is the one pinned in
# hack/tools/helm/go.mod; helm is rebuilt only when that module (or this
# script) changed since the last build.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${KUBEFED_BIN_DIR:-$root/bin}
dir=$root/hack/tools/helm
mkdir -p "$bin"

want=$(cat "$dir/go.mod" "$dir/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
have=""
[[ -f "$bin/.helm.stamp" ]] && have=$(cat "$bin/.helm.stamp")
if [[ "$want" == "$have" && -x "$bin/helm" ]]; then
  echo "build-helm: helm is up to date"
  exit 0
fi

version=$(cd "$dir" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
echo "build-helm: building helm $version"
# Without the stamp `helm version` reports only the minor release.
(cd "$dir" && CGO_ENABLED=0 go build \
  -ldflags "-X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
  -o "$bin/helm" helm.sh/helm/v4/cmd/helm)
echo "$want" > "$bin/.helm.stamp"
