package sync

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// deploymentStatus is a member Deployment's status as the remote status of
// an entry.
func deploymentStatus(available int64) map[string]any {
	return map[string]any{
		"observedGeneration": int64(1), "replicas": int64(2), "availableReplicas": available,
		"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
			"message": "Deployment has minimum availability.", "lastUpdateTime": "2026-12-05T10:00:00Z"}},
	}
}

// withStatus is a federated object placed on member1 and member2 whose
// status lists both with their copies' statuses.
func withStatus(now time.Time) *unstructured.Unstructured {
	fed := placedOn("a", "member1")
	fed.SetUID("u1")
	fed.SetGeneration(1)
	fed.SetResourceVersion("5")
	fed.Object["status"] = buildStatus(nil, 1, []outcome{
		{cluster: "member1", listed: true, remote: deploymentStatus(2)},
		{cluster: "member2", listed: true, remote: deploymentStatus(1)},
	}, "", "", now, nil)
	return fed
}

// The host cache holds digests of the entries' remote statuses, not the
// statuses: an unchanged status compares equal to the cached one (nothing
// is written in steady state or after a restart), a changed remote status
// does not.
func TestTheHostCacheHoldsDigestsOfRemoteStatuses(t *testing.T) {
	now := time.Now()
	live := withStatus(now)
	cached := live.DeepCopy()
	compactRemoteStatus(cached)
	raw, _ := json.Marshal(cached.Object)
	if strings.Contains(string(raw), "remoteStatus\"") || strings.Contains(string(raw), "minimum availability") {
		t.Fatalf("the cached object still holds remote statuses: %s", raw)
	}
	if !carriesDigests(cached.Object["status"].(map[string]any)) {
		t.Fatal("no digests in the cached object")
	}
	old := cached.Object["status"].(map[string]any)
	same := buildStatus(old, 1, []outcome{
		{cluster: "member1", listed: true, remote: deploymentStatus(2)},
		{cluster: "member2", listed: true, remote: deploymentStatus(1)},
	}, "", "", now.Add(time.Minute), nil)
	if !sameStatus(old, same) || !sameStatus(same, old) {
		t.Error("an unchanged status differs from its cached form")
	}
	changed := buildStatus(old, 1, []outcome{
		{cluster: "member1", listed: true, remote: deploymentStatus(2)},
		{cluster: "member2", listed: true, remote: deploymentStatus(2)},
	}, "", "", now.Add(time.Minute), nil)
	if sameStatus(old, changed) {
		t.Error("a changed remote status compares equal to the cached one")
	}
	if carriesDigests(changed) || carriesDigests(same) {
		t.Error("a status built from the engine's own outcomes carries digests")
	}
}

// A replica whose guarded merge patch writes the whole list of entries
// takes the other writers' entries from the object as it is on the host,
// not from its cache's digests, and never sends a digest.
func TestAGuardedStatusWriteSendsOthersRemoteStatusesWhole(t *testing.T) {
	now := time.Now()
	live := withStatus(now)
	cached := live.DeepCopy()
	compactRemoteStatus(cached)
	host := fakedynamic.NewSimpleDynamicClient(runtime.NewScheme())
	gets := 0
	var patched map[string]any
	host.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		return true, live.DeepCopy(), nil
	})
	host.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if err := json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &patched); err != nil {
			t.Fatal(err)
		}
		out := live.DeepCopy()
		out.SetResourceVersion("6")
		return true, out, nil
	})
	w := &typeWorker{e: &Engine{host: host}, fedGVR: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"},
		recorder: record.NewFakeRecorder(10), log: logr.Discard(), statusWritten: map[string]statusRecord{}}
	keep := func(c string) bool { return c == "member2" }
	// member2, ours, now has both replicas available.
	outcomes := []outcome{{cluster: "member2", listed: true, remote: deploymentStatus(2)}}
	if _, err := w.writeStatus(context.Background(), "ns/a", cached, outcomes, "", "", keep, false); err != nil {
		t.Fatal(err)
	}
	if gets != 1 || patched == nil {
		t.Fatalf("%d reads, patch %v: want the object read once, then patched", gets, patched)
	}
	raw, _ := json.Marshal(patched)
	if strings.Contains(string(raw), remoteDigestKey) {
		t.Fatalf("the patch sends a digest: %s", raw)
	}
	if rv, _, _ := unstructured.NestedString(patched, "metadata", "resourceVersion"); rv != "5" {
		t.Errorf("patch guarded by resourceVersion %q, want the read object's 5", rv)
	}
	entries, _, _ := unstructured.NestedSlice(patched, "status", "clusters")
	remotes := map[string]any{}
	for _, e := range entries {
		m := e.(map[string]any)
		remotes[m["name"].(string)] = m["remoteStatus"]
	}
	if !sameJSON(remotes["member1"], deploymentStatus(2)) {
		t.Errorf("member1's entry (another replica's) sent with remote status %v, want it whole", remotes["member1"])
	}
	if !sameJSON(remotes["member2"], deploymentStatus(2)) {
		t.Errorf("member2's entry sent with remote status %v", remotes["member2"])
	}

	// Our own entries alone (one active replica): no read, no digest.
	gets, patched = 0, nil
	w.statusWritten = map[string]statusRecord{}
	all := []outcome{
		{cluster: "member1", listed: true, remote: deploymentStatus(1)},
		{cluster: "member2", listed: true, remote: deploymentStatus(2)},
	}
	if _, err := w.writeStatus(context.Background(), "ns/a", cached, all, "", "", nil, false); err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(patched)
	if gets != 0 || patched == nil || strings.Contains(string(raw), remoteDigestKey) {
		t.Fatalf("one replica's write: %d reads, patch %s", gets, raw)
	}
	// Nothing changed: nothing is read or written.
	gets, patched = 0, nil
	w.statusWritten = map[string]statusRecord{}
	unchanged := []outcome{
		{cluster: "member1", listed: true, remote: deploymentStatus(2)},
		{cluster: "member2", listed: true, remote: deploymentStatus(1)},
	}
	if _, err := w.writeStatus(context.Background(), "ns/a", cached, unchanged, "", "", nil, false); err != nil {
		t.Fatal(err)
	}
	if gets != 0 || patched != nil {
		t.Fatalf("an unchanged status: %d reads, patch %v", gets, patched)
	}
}
