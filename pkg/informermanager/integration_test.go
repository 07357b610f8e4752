//go:build integration

package informermanager

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubefed-io/kubefed/test/localcluster"
)

// prompt bounds how long an event of a healthy member may take; it is far
// above the usual tens of milliseconds, to stay clear of a loaded machine.
const prompt = 5 * time.Second

// TestIntegration runs the manager against real member clusters, one of
// which goes down and comes back.
func TestIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host", "member1", "member2"}})
	if err != nil {
		t.Fatalf("starting clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping clusters: %v", err)
		}
	})

	m := New(Options{Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1})})
	t.Cleanup(m.Stop)
	members := []string{"member1", "member2"}
	clients := map[string]dynamic.Interface{}
	for _, name := range members {
		cfg := fed.Cluster(name).RESTConfig()
		if err := m.AddCluster(name, cfg); err != nil {
			t.Fatal(err)
		}
		clients[name] = dynamic.NewForConfigOrDie(cfg)
	}

	var r recorder
	unsubscribe := m.Subscribe(configMaps, r.handle)
	defer unsubscribe()

	t.Run("only labelled objects are seen", func(t *testing.T) {
		for _, name := range members {
			create(t, clients[name], configMap("managed", true))
			create(t, clients[name], configMap("plain", false))
			// Events of one member arrive in order, so once this one is
			// seen, the unlabelled one would have been too.
			create(t, clients[name], configMap("barrier", true))
		}
		for _, name := range members {
			r.waitSeen(t, name, Added, "managed")
			r.waitSeen(t, name, Added, "barrier")
			for _, unlabelled := range []string{"plain", "kube-root-ca.crt"} {
				if r.seen(name, Added, unlabelled) {
					t.Errorf("saw unlabelled ConfigMap %s of %s", unlabelled, name)
				}
			}
			if !m.HasSynced(name, configMaps) {
				t.Errorf("cache of %s not synced", name)
			}
		}

		r.mu.Lock()
		for _, e := range r.events {
			if _, found, _ := unstructured.NestedFieldNoCopy(e.Object.Object, "metadata", "managedFields"); found {
				t.Errorf("event object %s/%s has managedFields", e.Cluster, e.Object.GetName())
			}
		}
		r.mu.Unlock()

		lister, synced := m.Lister("member1", configMaps)
		if lister == nil || !synced {
			t.Fatalf("Lister(member1) = %v, %v", lister, synced)
		}
		if _, err := lister.Namespace(testNamespace).Get("managed"); err != nil {
			t.Errorf("Lister Get(managed): %v", err)
		}
		if _, err := lister.Namespace(testNamespace).Get("plain"); !apierrors.IsNotFound(err) {
			t.Errorf("Lister Get(plain) error = %v, want NotFound", err)
		}
		if obj, err := m.Get(ctx, "member1", configMaps, testNamespace, "plain"); err != nil || obj.GetName() != "plain" {
			t.Errorf("live Get(plain) = %v, %v", obj, err)
		}
	})

	member2 := fed.Cluster("member2")
	t.Run("a member that is down does not slow the others", func(t *testing.T) {
		if err := member2.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"outage-1", "outage-2", "outage-3"} {
			start := time.Now()
			create(t, clients["member1"], configMap(name, true))
			r.waitSeenWithin(t, prompt, "member1", Added, name)
			t.Logf("member1 event %s arrived %s after the create while member2 is down", name, time.Since(start))
			// Give member2's informer time to fail and back off meanwhile.
			time.Sleep(2 * time.Second)
		}
		if !m.HasSynced("member1", configMaps) {
			t.Error("member1 not synced while member2 is down")
		}
	})

	t.Run("a member that comes back resumes", func(t *testing.T) {
		if err := member2.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		create(t, clients["member2"], configMap("after-restart", true))
		updated := configMap("managed", true)
		current, err := clients["member2"].Resource(configMaps).Namespace(testNamespace).Get(ctx, "managed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updated.SetResourceVersion(current.GetResourceVersion())
		_ = unstructured.SetNestedField(updated.Object, "changed", "data", "key")
		if _, err := clients["member2"].Resource(configMaps).Namespace(testNamespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The informer retries with client-go's backoff, at most about a
		// minute apart.
		r.waitSeenWithin(t, 2*time.Minute, "member2", Added, "after-restart")
		r.waitSeenWithin(t, prompt, "member2", Updated, "managed")
		t.Logf("member2 events resumed %s after its apiserver came back", time.Since(start))
		if !m.HasSynced("member2", configMaps) {
			t.Error("member2 not synced after it came back")
		}
	})

	t.Run("a removed member delivers nothing", func(t *testing.T) {
		m.RemoveCluster("member1")
		before := countFrom(&r, "member1")
		create(t, clients["member1"], configMap("after-remove", true))
		create(t, clients["member2"], configMap("barrier-2", true))
		r.waitSeenWithin(t, prompt, "member2", Added, "barrier-2")
		time.Sleep(time.Second)
		if n := countFrom(&r, "member1"); n != before {
			t.Errorf("got %d events from member1 after RemoveCluster", n-before)
		}
		if l, _ := m.Lister("member1", configMaps); l != nil {
			t.Error("Lister of a removed member is not nil")
		}
	})
}

func countFrom(r *recorder, cluster string) int {
	n := 0
	for _, s := range r.names() {
		if strings.HasPrefix(s, cluster+"/") {
			n++
		}
	}
	return n
}
