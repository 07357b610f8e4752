package sync

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Where several writers share an object's status (the replicas of a
// scaled-out control plane), each applies the entries of its own members
// server-side under a field manager of its own: entries are keyed by name
// in the CRD, so two writers' entries merge on the server, no write needs
// the object's resourceVersion, and none is refused with a 409 because
// another writer's landed first. The Propagation condition and
// the sums of an aggregated type, which add up every member, are applied by
// every writer (forced: the last one's stands); each writer also looks again
// whenever another's write changes the status, and writes when what it
// computes from the status it now sees differs, so the last write is one
// computed from every writer's final entries. A writer is the only one to
// write its members' entries, so it never undoes another's. What an apply
// cannot do, a guarded merge patch does: removing an entry (or a field of
// one) that another field manager set, such as a replica gone since.

// statusClustersKeyed reports whether the CRD of the federated type gvr keys
// status.clusters by name in its version, so that entries can be applied.
// A CRD made before this schema (KubeFed's, or an older one of ours) has
// an atomic list: its entries are written the guarded way.
func (e *Engine) statusClustersKeyed(gvr schema.GroupVersionResource) bool {
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd, err := e.host.Resource(crds).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
	if err != nil {
		e.opts.Log.Info("Cannot read the federated type's CRD; status entries are written with a guarded merge patch",
			"crd", gvr.Resource+"."+gvr.Group, "error", err.Error())
		return false
	}
	return keyedByName(crd.Object, gvr.Version)
}

// keyedByName reports whether a CRD's schema of version keys
// status.clusters by name alone.
func keyedByName(crd map[string]any, version string) bool {
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != version {
			continue
		}
		clusters, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", "status", "properties", "clusters")
		keys, _, _ := unstructured.NestedStringSlice(clusters, "x-kubernetes-list-map-keys")
		return clusters["x-kubernetes-list-type"] == "map" && slices.Equal(keys, []string{"name"})
	}
	return false
}

// ownPart is what of status a writer applies: every field but the entries
// of the members keep does not accept.
func ownPart(status map[string]any, keep func(string) bool) map[string]any {
	out := maps.Clone(status)
	delete(out, "clusters")
	entries, _ := status["clusters"].([]any)
	var own []any
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if name, _ := m["name"].(string); keep(name) {
				own = append(own, m)
			}
		}
	}
	if len(own) > 0 {
		out["clusters"] = own
	}
	return out
}

// sameStatus reports whether two statuses are alike, whatever the order of
// their entries (applied entries are kept in the order the server merged
// them, not sorted) and whether remote statuses are whole or digests (the
// host cache holds digests).
func sameStatus(a, b map[string]any) bool {
	return sameJSON(sortedEntries(digestForm(a)), sortedEntries(digestForm(b)))
}

// sortedEntries is status with its entries in the order of their names (a
// shallow copy when they are not already).
func sortedEntries(status map[string]any) map[string]any {
	entries, ok := status["clusters"].([]any)
	if !ok || slices.IsSortedFunc(entries, compareEntries) {
		return status
	}
	out := maps.Clone(status)
	out["clusters"] = slices.SortedStableFunc(slices.Values(entries), compareEntries)
	return out
}

func compareEntries(a, b any) int {
	an, _ := a.(map[string]any)
	bn, _ := b.(map[string]any)
	x, _ := an["name"].(string)
	y, _ := bn["name"].(string)
	return strings.Compare(x, y)
}

// applyOwnStatus applies the part of status this engine writes (keep's
// entries and the fields that add up every member) under its field manager
// and returns the object as written, and whether it shows that part as
// wanted: not when another manager set a field ours no longer has (an
// entry of a member we took over, dropped now), which the caller then
// writes the guarded way.
func (w *typeWorker) applyOwnStatus(ctx context.Context, fed *unstructured.Unstructured, status map[string]any, keep func(string) bool) (*unstructured.Unstructured, bool, error) {
	meta := map[string]any{"name": fed.GetName(), "uid": string(fed.GetUID())}
	if ns := fed.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": fed.GetAPIVersion(), "kind": fed.GetKind(), "metadata": meta,
		"status": ownPart(status, keep),
	})
	if err != nil {
		return nil, false, err
	}
	updated, err := w.hostResource(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: w.e.opts.StatusManager, Force: ptr.To(true)}, "status")
	statusWrites.Inc()
	if err != nil {
		return nil, false, err
	}
	got, _ := updated.Object["status"].(map[string]any)
	return updated, sameStatus(ownPart(got, keep), ownPart(status, keep)), nil
}

// isGone reports whether a status write found the object deleted or
// replaced by another of the same name.
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsInvalid(err)
}

// statusGone is isGone for a status write of the object at key, which it
// logs when the API server refused what it carried.
func (w *typeWorker) statusGone(key string, err error) bool {
	if refusedContent(err) {
		w.log.Error(err, "The API server refused this status; it is not written", "federatedObject", key)
	}
	return isGone(err)
}

// refusedContent reports whether err refuses a status write for what it
// carries, not because the object was replaced (a new UID is refused as a
// change of metadata.uid): a write of ours the schema does not accept,
// which isGone would pass over in silence.
func refusedContent(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return true
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return false
		}
	}
	return true
}
