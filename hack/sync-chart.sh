#!/usr/bin/env bash
# Copies the generated CRDs, default FederatedTypeConfigs and admission
# policies into the Helm chart, verbatim: config/ is their source, and
# test/chart fails when the chart's copies differ from it. Run it after
# `make manifests`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chart=$root/charts/kubefed

# Helm installs crds/ before rendering the templates, so the KubeFedConfig
# and FederatedTypeConfigs in templates/ find their types served.
rm -rf "$chart/crds" "$chart/files/default-types" "$chart/files/admission"
mkdir -p "$chart/crds" "$chart/files/default-types" "$chart/files/admission"
cp "$root"/config/crd/bases/*.yaml "$root"/config/crd/federated/*.yaml "$chart/crds/"
# templates/federatedtypeconfigs.yaml moves these into the release namespace.
cp "$root"/config/default-types/*.yaml "$chart/files/default-types/"
# templates/kubefedconfig-defaults.yaml installs these, renamed for a
# Namespaced control plane.
cp "$root"/config/admission/*.yaml "$chart/files/admission/"
echo "sync-chart: copied $(ls "$chart/crds" | wc -l) CRDs and $(ls "$chart/files/default-types" | wc -l) FederatedTypeConfigs into charts/kubefed"
