package informermanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/go-logr/logr/testr"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

const testNamespace = "default"

// newMember returns a fake member holding objs. Unlike the plain fake, its
// watches honour the label selector, as a real apiserver's do.
func newMember(objs ...runtime.Object) *fake.FakeDynamicClient {
	c := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", secrets: "SecretList"}, objs...)
	c.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		wa, ok := action.(clienttesting.WatchActionImpl)
		if !ok {
			return false, nil, nil
		}
		selector, err := labels.Parse(wa.ListOptions.LabelSelector)
		if err != nil {
			return true, nil, err
		}
		w, err := c.Tracker().Watch(action.GetResource(), action.GetNamespace(), wa.ListOptions)
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			return e, err == nil && selector.Matches(labels.Set(m.GetLabels()))
		}), nil
	})
	return c
}

func configMap(name string, managed bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(testNamespace)
	u.SetName(name)
	if managed {
		u.SetLabels(map[string]string{fedv1b1.ManagedByKubeFedLabelKey: fedv1b1.ManagedByKubeFedLabelValue})
	}
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"key": name}, "data")
	return u
}

// testManager builds a Manager whose clusters are the fakes in members,
// found by the Host of the configuration AddCluster gets.
type testManager struct {
	*Manager
	mu      sync.Mutex
	members map[string]*fake.FakeDynamicClient
	configs map[string][]*rest.Config
}

func newTestManager(t *testing.T, o Options, members map[string]*fake.FakeDynamicClient) *testManager {
	t.Helper()
	o.Logger = testr.New(t)
	tm := &testManager{Manager: New(o), members: members, configs: map[string][]*rest.Config{}}
	tm.newClient = func(cfg *rest.Config) (dynamic.Interface, error) {
		tm.mu.Lock()
		defer tm.mu.Unlock()
		tm.configs[cfg.Host] = append(tm.configs[cfg.Host], cfg)
		c, ok := tm.members[cfg.Host]
		if !ok {
			return nil, fmt.Errorf("no fake member %q", cfg.Host)
		}
		return c, nil
	}
	t.Cleanup(tm.Stop)
	return tm
}

func (tm *testManager) add(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := tm.AddCluster(name, &rest.Config{Host: name, Timeout: 30 * time.Second}); err != nil {
			t.Fatalf("AddCluster(%s): %v", name, err)
		}
	}
}

// recorder is a Handler that remembers every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) handle(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// seen says whether an event of type typ for the named object in cluster
// was recorded.
func (r *recorder) seen(cluster string, typ EventType, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Cluster == cluster && e.Type == typ && e.Object.GetName() == name {
			return true
		}
	}
	return false
}

// names returns cluster/name of every recorded event, in order.
func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.events))
	for _, e := range r.events {
		out = append(out, e.Cluster+"/"+e.Object.GetName())
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *recorder) waitSeen(t *testing.T, cluster string, typ EventType, name string) {
	t.Helper()
	r.waitSeenWithin(t, 10*time.Second, cluster, typ, name)
}

func (r *recorder) waitSeenWithin(t *testing.T, timeout time.Duration, cluster string, typ EventType, name string) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%s event of %s in %s", typ, name, cluster), func() bool {
		return r.seen(cluster, typ, name)
	})
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// actions counts the list and watch requests a fake received for gvr and
// returns the label selectors they carried.
func actions(c *fake.FakeDynamicClient, verb string, gvr schema.GroupVersionResource) (n int, selectors []string) {
	for _, a := range c.Actions() {
		if a.GetVerb() != verb || a.GetResource() != gvr {
			continue
		}
		n++
		switch a := a.(type) {
		case clienttesting.ListActionImpl:
			selectors = append(selectors, a.ListOptions.LabelSelector)
		case clienttesting.WatchActionImpl:
			selectors = append(selectors, a.ListOptions.LabelSelector)
		}
	}
	return n, selectors
}

func create(t *testing.T, c dynamic.Interface, obj *unstructured.Unstructured) {
	t.Helper()
	if _, err := c.Resource(configMaps).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// metricValue reads a sample of the informer metrics the way a scrape
// does; ok is false when the series does not exist.
func metricValue(t *testing.T, name, cluster string, gvr schema.GroupVersionResource) (v float64, ok bool) {
	t.Helper()
	series, err := framework.MetricSeries(name, "cluster", cluster, "resource", resourceLabel(gvr))
	if err != nil && !errors.Is(err, framework.ErrNoMetric) {
		t.Fatalf("gathering metrics: %v", err)
	}
	if len(series) == 0 {
		return 0, false
	}
	return series[0].Value, true
}

// readiness is a ReadinessChecker the test sets.
type readiness struct {
	mu    sync.Mutex
	ready map[string]bool
}

func (r *readiness) IsReady(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready[name]
}

func (r *readiness) set(name string, ready bool) {
	r.mu.Lock()
	r.ready[name] = ready
	r.mu.Unlock()
}

var errConnectionRefused = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
