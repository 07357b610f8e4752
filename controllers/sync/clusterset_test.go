package sync

import (
	"context"
	gosync "sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func readyCluster(name string, ready bool) *corev1beta1.KubeFedCluster {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-federation-system", Labels: map[string]string{"region": name}},
		Status:     corev1beta1.KubeFedClusterStatus{Conditions: []corev1beta1.ClusterCondition{{Type: corev1beta1.ClusterReady, Status: status}}},
	}
}

// The cluster set is listed once per change of the KubeFedClusters, not on
// every plan: between two changes the same set serves, a change (a bumped
// generation) lists it again, and without the KubeFedCluster events every
// call lists.
func TestClusterSetIsListedOncePerChange(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var lists int
	var mu gosync.Mutex
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(readyCluster("a", true)).Build()
	counting := &countingLister{Client: c, onList: func() { mu.Lock(); lists++; mu.Unlock() }}
	e := &Engine{opts: Options{Client: counting, Namespace: "kube-federation-system"}, ctx: context.Background()}
	listed := func() int { mu.Lock(); defer mu.Unlock(); return lists }

	// Not watching the clusters yet: every call lists.
	e.clusterSet()
	e.clusterSet()
	if listed() != 2 {
		t.Fatalf("%d lists without cluster events, want 2", listed())
	}
	e.clustersWatched.Store(true)
	first := e.clusterSet()
	for range 10 {
		e.clusterSet()
	}
	if listed() != 3 {
		t.Errorf("%d lists, want one more for 11 calls between changes", listed())
	}
	if a, ok := first.Get("a"); !ok || !a.Ready || a.Labels["region"] != "a" {
		t.Errorf("cluster a: %+v %v", a, ok)
	}
	// b joins, a turns not ready: the informer's store has the change
	// before its event bumps the generation.
	if err := c.Create(context.Background(), readyCluster("b", true)); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.clusterSet().Get("b"); ok {
		t.Error("a change not heard of yet is seen: the set was not cached")
	}
	e.clustersGen.Add(1)
	set := e.clusterSet()
	if _, ok := set.Get("b"); !ok {
		t.Error("b is missing after the change was heard")
	}
	a := readyCluster("a", false)
	existing := &corev1beta1.KubeFedCluster{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(a), existing); err != nil {
		t.Fatal(err)
	}
	existing.Status = a.Status
	if err := c.Update(context.Background(), existing); err != nil {
		t.Fatal(err)
	}
	e.clustersGen.Add(1)
	if got, _ := e.clusterSet().Get("a"); got.Ready {
		t.Error("a is still ready after its change was heard")
	}
}

// A change heard while the set is being listed makes that set stale: it is
// not served after the change.
func TestClusterSetListedAcrossAChangeIsNotKept(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(readyCluster("a", true)).Build()
	e := &Engine{ctx: context.Background()}
	e.clustersWatched.Store(true)
	// The list reads the store without b; then b lands in the store and
	// its event is heard, before the listed set is kept.
	e.opts = Options{Namespace: "kube-federation-system", Client: &countingLister{Client: c, onList: func() {}, afterList: func() {
		_ = c.Create(context.Background(), readyCluster("b", true))
		e.clustersGen.Add(1)
	}}}
	if _, ok := e.clusterSet().Get("b"); ok {
		t.Fatal("the list saw b: the test does not test a stale list")
	}
	e.opts.Client = c
	if _, ok := e.clusterSet().Get("b"); !ok {
		t.Error("the set listed before the change was kept after it")
	}
}

// Readers and changes at once, for the race detector.
func TestClusterSetConcurrentReadersAndChanges(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(readyCluster("a", true)).Build()
	e := &Engine{opts: Options{Client: c, Namespace: "kube-federation-system"}, ctx: context.Background()}
	e.clustersWatched.Store(true)
	var wg gosync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, ok := e.clusterSet().Get("a"); !ok {
					t.Error("a missing")
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			e.clustersGen.Add(1)
		}
	})
	wg.Wait()
}

// countingLister calls onList before each List, and afterList after it.
type countingLister struct {
	client.Client
	onList, afterList func()
}

func (l *countingLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.onList()
	err := l.Client.List(ctx, list, opts...)
	if l.afterList != nil {
		l.afterList()
	}
	return err
}
