#!/usr/bin/env bash
# Fails when generated files are stale, Go code is not gofmt'd, or go vet
# complains. It regenerates in place, so a failure leaves the fresh files in
# the tree for `git diff` to show.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated() {
  find api config/crd config/default-types config/admission pkg/federatedtype/schema charts/kubefed/crds charts/kubefed/files dist -type f \
    \( -name 'zz_generated*.go' -o -name '*.yaml' \) -print0 | sort -z | xargs -0 sha256sum
}

before=$(generated)
make -s generate manifests >/dev/null
after=$(generated)
if [[ "$before" != "$after" ]]; then
  echo "verify: generated files are stale; run 'make generate manifests' and commit:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi

unformatted=$(find . -name '*.go' -not -path './bin/*' -not -path './.local/*' -print0 | xargs -0 gofmt -l)
if [[ -n "$unformatted" ]]; then
  echo "verify: not gofmt'd:" >&2
  echo "$unformatted" >&2
  exit 1
fi

go vet ./...
go vet -tags integration,e2e ./...
echo "verify: ok"
