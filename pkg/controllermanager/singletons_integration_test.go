//go:build integration

package controllermanager

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubefed-io/kubefed/test/localcluster"
)

// TestSingletonsOutliveALostLease runs the singleton terms in a manager on
// a real host: a replica whose leader Lease is taken keeps its manager
// running, stops the term's controllers and their event handlers, stands
// again and, once the Lease is free, runs a second term with controllers
// built anew on the same cache (its field index set up once).
func TestSingletonsOutliveALostLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{Clusters: []string{"host"}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the host: %v", err)
	}
	t.Cleanup(func() { _ = fed.Stop() })
	host := fed.Cluster("host")
	kube := kubernetes.NewForConfigOrDie(host.RESTConfig())
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(host.RESTConfig(), ctrl.Options{
		Scheme: scheme, Logger: testr.New(t),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	const ns, identity = "default", "replica-a"
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		t.Fatal(err)
	}

	// Each term's controller reconciles ConfigMaps, counts what its event
	// handler sees and lists through a field index it sets up.
	var (
		mu         sync.Mutex
		seen       = map[int64]map[string]int{} // term → ConfigMap → handler calls
		reconciled = map[int64]map[string]bool{}
		indexed    = map[int64]int{} // term → ConfigMaps found by the index
	)
	s := &singletons{mgr: mgr, lock: lock, identity: identity,
		lease: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond, log: testr.New(t)}
	var building atomic.Int64
	s.setup = func(m manager.Manager) error {
		term := building.Add(1)
		if err := m.GetFieldIndexer().IndexField(ctx, &corev1.ConfigMap{}, "data.term", func(o client.Object) []string {
			return []string{o.(*corev1.ConfigMap).Data["term"]}
		}); err != nil {
			return err
		}
		mu.Lock()
		seen[term], reconciled[term] = map[string]int{}, map[string]bool{}
		mu.Unlock()
		return ctrl.NewControllerManagedBy(m).Named("singleton-test").
			For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				mu.Lock()
				defer mu.Unlock()
				seen[term][o.GetName()]++
				return o.GetNamespace() == ns
			}))).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				list := &corev1.ConfigMapList{}
				if err := m.GetClient().List(ctx, list, client.MatchingFields{"data.term": "x"}); err != nil {
					return reconcile.Result{}, err
				}
				mu.Lock()
				defer mu.Unlock()
				reconciled[term][req.Name] = true
				indexed[term] = len(list.Items)
				return reconcile.Result{}, nil
			}))
	}
	if err := mgr.Add(s); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()

	createCM := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"term": "x"}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			select {
			case err := <-mgrDone:
				t.Fatalf("the manager stopped (%v) while waiting for %s", err, what)
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	createCM("one")
	waitFor("the first term to reconcile one", func() bool { return reconciled[1]["one"] })
	if !s.Leading() {
		t.Fatal("Leading() is false during a term")
	}

	// Another holder takes the Lease: the renewals fail, the term ends.
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = ptr.To("thief"), ptr.To[int32](3)
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	if _, err := kube.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the first term to end", func() bool { return !s.Leading() })

	// The thief never renews: the replica wins the Lease again, in the
	// same manager, and the second term's controller is a new one.
	waitFor("a second term", func() bool { return s.terms.Load() == 2 })
	createCM("two")
	waitFor("the second term to reconcile one and two", func() bool { return reconciled[2]["one"] && reconciled[2]["two"] })
	createCM("three")
	waitFor("the second term to reconcile three", func() bool { return reconciled[2]["three"] })
	mu.Lock()
	if seen[1]["two"] != 0 || seen[1]["three"] != 0 {
		t.Errorf("the first term's event handler still sees ConfigMaps: two %d, three %d times", seen[1]["two"], seen[1]["three"])
	}
	if indexed[2] < 2 {
		t.Errorf("the second term's field index found %d ConfigMaps, want the three", indexed[2])
	}
	mu.Unlock()
	if !s.Leading() {
		t.Fatal("Leading() is false during the second term")
	}

	// A clean stop gives the Lease up.
	stopMgr()
	if err := <-mgrDone; err != nil {
		t.Fatalf("the manager stopped with %v", err)
	}
	lease, err = kube.CoordinationV1().Leases(ns).Get(ctx, LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after a clean stop", h)
	}
}
