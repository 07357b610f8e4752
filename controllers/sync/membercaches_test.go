package sync

import (
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

// A member whose clients are gone (its KubeFedCluster deleted, whenever
// that was seen, or its credentials withdrawn) loses its caches when it
// turns not ready, and so stops watching with them; one that is only
// unreachable keeps them. A member added again is cached again.
func TestMembersWithoutClientsLoseTheirCaches(t *testing.T) {
	srv := configMapMember(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	registry, tracker, members := syncedMemberCaches(t, srv, gvr, "gone", "down")

	// The cluster controller forgets a deleted cluster: clients first,
	// then readiness.
	registry.Remove("gone")
	tracker.Set("gone", false)
	tracker.Set("down", false)
	waitUntil(t, "the caches of the member without clients removed", func() bool {
		lister, _ := members.Lister("gone", gvr)
		return lister == nil
	})
	if lister, synced := members.Lister("down", gvr); lister == nil || !synced {
		t.Error("an unreachable member's caches were dropped")
	}
	if members.Ensure("gone") {
		t.Error("Ensure says a member without clients is cached")
	}

	// Joined again.
	if _, err := registry.SetLocal("gone", &rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	tracker.Set("gone", true)
	waitUntil(t, "the member joined again cached", func() bool { return members.HasSynced("gone", gvr) })

	// Credentials withdrawn while the member stays unreachable: the next
	// reconcile's Ensure finds no clients and drops the caches.
	registry.Remove("down")
	if members.Ensure("down") {
		t.Error("Ensure says a member without clients is cached")
	}
	waitUntil(t, "the caches of the member whose clients went removed", func() bool {
		lister, _ := members.Lister("down", gvr)
		return lister == nil
	})
}

// A member's clients rebuilt while it stays Ready (a rotated token, a new
// endpoint) restart its informers with them, with no readiness change and
// no reconcile asking.
func TestRebuiltClientsRestartTheMembersInformers(t *testing.T) {
	before := configMapMember(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`)
	after := configMapMember(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns","resourceVersion":"5"}}`)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	registry, _, members := syncedMemberCaches(t, before, gvr, "up")
	cached := func(name string) bool {
		lister, synced := members.Lister("up", gvr)
		if lister == nil || !synced {
			return false
		}
		_, err := lister.Namespace("ns").Get(name)
		return err == nil
	}
	if !cached("a") {
		t.Fatal("the first clients' object is not cached")
	}
	if _, err := registry.SetLocal("up", &rest.Config{Host: after.URL}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the member cached through its new clients", func() bool { return cached("b") && !cached("a") })
}

// syncedMemberCaches are member caches of gvr in the named members, all
// served by srv, each ready and synced; stopped when the test ends.
func syncedMemberCaches(t *testing.T, srv *httptest.Server, gvr schema.GroupVersionResource, names ...string) (*clusterclient.Registry, *cluster.ReadinessTracker, *MemberCaches) {
	t.Helper()
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	for _, name := range names {
		if _, err := registry.SetLocal(name, &rest.Config{Host: srv.URL}); err != nil {
			t.Fatal(err)
		}
	}
	tracker := cluster.NewReadinessTracker("kube-federation-system")
	members := NewMemberCaches(registry, tracker, "", logr.Discard())
	t.Cleanup(members.Stop)
	t.Cleanup(members.Subscribe(gvr, func(informermanager.Event) {}))
	for _, name := range names {
		members.Ensure(name)
		tracker.Set(name, true)
		waitUntil(t, name+"'s cache synced", func() bool { return members.HasSynced(name, gvr) })
	}
	return registry, tracker, members
}

// A member in the informer Manager that the caches do not count as added
// (an Ensure added it again while a Remove waited for its informers, and
// that Remove then undid the record) goes with the next Remove.
func TestRemoveTakesAMemberAddedDuringAnEarlierRemoval(t *testing.T) {
	srv := configMapMember(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	_, _, members := syncedMemberCaches(t, srv, gvr, "gone")
	members.mu.Lock()
	delete(members.added, "gone")
	members.mu.Unlock()
	members.Remove("gone")
	if lister, _ := members.Lister("gone", gvr); lister != nil {
		t.Fatal("the member's informers outlived its removal")
	}
}
