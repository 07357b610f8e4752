// Package overrides applies a federated object's per-cluster spec.overrides to
// the object propagated to each cluster. It implements the lax JSON-patch
// semantics of KubeFed (evanphx/json-patch v4) directly on unstructured
// objects, so that existing manifests behave the same without a JSON round trip.
package overrides
