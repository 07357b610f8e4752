package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestHangingMemberDoesNotDelayOthers runs real workers against one member
// that answers and one whose /readyz never returns within the test: the
// first must be probed every period and reported Ready regardless.
func TestHangingMemberDoesNotDelayOthers(t *testing.T) {
	fast := newFakeMember(t, "t1")
	hung := newFakeMember(t, "t2")
	hung.mode.Store(int32(modeHang))
	fastCluster, fastSecret := fast.objects("fast", "t1")
	hungCluster, hungSecret := hung.objects("hung", "t2")
	h := newHarness(t, Options{
		Period:                 50 * time.Millisecond,
		Timeout:                time.Minute, // the hung probe outlives the test
		ProbeTimeWriteInterval: 50 * time.Millisecond,
	}, fastCluster, fastSecret, hungCluster, hungSecret)

	h.reconcile("hung")
	eventually(t, 5*time.Second, "the hung member's probe to be in flight", func() bool { return hung.requests.Load() == 1 })
	h.reconcile("fast")

	eventually(t, 5*time.Second, "fast to be Ready", func() bool { return h.condition("fast", fedv1b1.ClusterReady) == "True/ClusterReady" })
	before := fast.requests.Load()
	eventually(t, 5*time.Second, "fast to be probed 5 more times", func() bool { return fast.requests.Load() >= before+5 })

	if got := hung.requests.Load(); got != 1 {
		t.Errorf("the hung member got %d probes, want its first still in flight", got)
	}
	if conds := h.cluster("hung").Status.Conditions; len(conds) != 0 {
		t.Errorf("the hung member has conditions before its first probe ended: %+v", conds)
	}
	if !h.r.IsReady("fast") || h.r.IsReady("hung") || fmt.Sprint(h.r.ReadyClusters()) != "[fast]" {
		t.Errorf("ReadyClusters() = %v", h.r.ReadyClusters())
	}
}

func TestProbeTimeoutMakesMemberOffline(t *testing.T) {
	hung := newFakeMember(t, "t")
	hung.mode.Store(int32(modeHang))
	c, s := hung.objects("hung", "t")
	h := newHarness(t, Options{Period: time.Hour, Timeout: 200 * time.Millisecond}, c, s)
	w := h.manualWorker("hung")

	start := time.Now()
	w.cycle(h.ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a probe took %s despite a 200ms timeout", took)
	}
	if got := h.condition("hung", fedv1b1.ClusterOffline); got != "True/ClusterNotReachable" {
		t.Errorf("Offline = %s", got)
	}
	if got := h.condition("hung", fedv1b1.ClusterReady); got != "False/ClusterNotReady" {
		t.Errorf("Ready = %s", got)
	}
	if got, want := h.message("hung", fedv1b1.ClusterOffline), "cluster is not reachable: no answer within 200ms"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if len(h.events.matching("RetrievingClusterHealthFailed")) != 1 {
		t.Errorf("events: %v", h.events.events)
	}
}

// A clusterHealthCheck.timeout longer than the member clients' own request
// timeout bounds the probe, as in KubeFed, whose health client had it.
func TestProbeTimeoutLongerThanTheClients(t *testing.T) {
	slow := newFakeMember(t, "t")
	slow.mode.Store(int32(modeSlow))
	c, s := slow.objects("slow", "t")
	r := &Reconciler{Registry: clusterclient.NewRegistry(clusterclient.ConfigOptions{Timeout: slowAnswer / 3})}
	h := newHarnessFor(t, r, Options{Period: time.Hour, Timeout: 10 * slowAnswer}, c, s)
	h.manualWorker("slow").cycle(h.ctx)
	if got := h.condition("slow", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Errorf("Ready = %s (%s), want True: the member answered within the probe's timeout", got, h.message("slow", fedv1b1.ClusterOffline))
	}
}

// TestDebounceAndTransitions drives probes one by one through health
// changes of a member.
func TestDebounceAndTransitions(t *testing.T) {
	m := newFakeMember(t, "tok")
	c, s := m.objects("m", "tok")
	h := newHarness(t, Options{Period: time.Hour, FailureThreshold: 2, SuccessThreshold: 2}, c, s)
	w := h.manualWorker("m")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 0
	probe := func(mode memberMode) {
		step++
		m.mode.Store(int32(mode))
		h.setClock(t0.Add(time.Duration(step) * time.Minute))
		w.cycle(h.ctx)
	}
	readyTransition := func() time.Time {
		return findCondition(h.cluster("m").Status.Conditions, fedv1b1.ClusterReady).LastTransitionTime.Time
	}

	probe(modeHealthy) // first observation: at once
	if got := h.condition("m", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Fatalf("after the first probe Ready = %s", got)
	}
	if got := h.message("m", fedv1b1.ClusterReady); got != "/healthz responded with ok" {
		t.Errorf("Ready message = %q", got)
	}
	firstTransition := readyTransition()

	probe(modeUnhealthy) // 1 of 2 failures: still Ready, but an event
	if got := h.condition("m", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Fatalf("after one failure Ready = %s, want it debounced", got)
	}
	if n := len(h.events.matching("RetrievingClusterHealthFailed")); n != 1 {
		t.Errorf("%d RetrievingClusterHealthFailed events after the first failure, want 1", n)
	}

	probe(modeUnhealthy) // 2 of 2: not ready, reachable
	if got := h.condition("m", fedv1b1.ClusterReady); got != "False/ClusterNotReady" {
		t.Fatalf("after two failures Ready = %s", got)
	}
	if got := h.condition("m", fedv1b1.ClusterOffline); got != "False/ClusterReachable" {
		t.Errorf("Offline = %s", got)
	}
	if got := h.message("m", fedv1b1.ClusterReady); !strings.Contains(got, "/readyz responded with 500 Internal Server Error: [-]etcd failed") {
		t.Errorf("Ready message %q does not say what /readyz returned", got)
	}
	if n := len(h.events.matching("RetrievingClusterHealthFailed")); n != 1 {
		t.Errorf("the same problem was reported %d times, want once", n)
	}
	if h.r.IsReady("m") {
		t.Error("listeners still see the member ready")
	}
	notReadySince := readyTransition()
	if !notReadySince.After(firstTransition) {
		t.Errorf("lastTransitionTime did not move: %v", notReadySince)
	}

	probe(modeHealthy) // 1 of 2 successes
	if got := h.condition("m", fedv1b1.ClusterReady); got != "False/ClusterNotReady" {
		t.Fatalf("after one success Ready = %s, want it debounced", got)
	}
	probe(modeHealthy) // 2 of 2
	if got := h.condition("m", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Fatalf("after two successes Ready = %s", got)
	}
	if !readyTransition().After(notReadySince) {
		t.Error("lastTransitionTime did not move on recovery")
	}
	if !h.r.IsReady("m") {
		t.Error("listeners do not see the member ready")
	}
}

func TestWrongTokenIsReachableButNotReadyAndASecretFixHealsIt(t *testing.T) {
	m := newFakeMember(t, "right")
	c, s := m.objects("m", "wrong")
	h := newHarness(t, Options{Period: time.Hour}, c, s)
	w := h.manualWorker("m")

	w.cycle(h.ctx)
	if got := h.condition("m", fedv1b1.ClusterReady); got != "False/ClusterNotReady" {
		t.Errorf("Ready = %s", got)
	}
	if got := h.condition("m", fedv1b1.ClusterOffline); got != "False/ClusterReachable" {
		t.Errorf("Offline = %s", got)
	}
	if got := h.message("m", fedv1b1.ClusterReady); !strings.Contains(got, "401 Unauthorized") || strings.Contains(got, "wrong") {
		t.Errorf("Ready message = %q; want the 401 and never the token", got)
	}
	if len(h.events.matching("m Warning RetrievingClusterHealthFailed ProbeHealth: cluster health check failed: /readyz responded with 401")) != 1 {
		t.Errorf("events: %v", h.events.events)
	}

	s.Data["token"] = []byte("right")
	if err := h.client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	w.cycle(h.ctx)
	if got := h.condition("m", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Errorf("after fixing the token Ready = %s", got)
	}
}

func TestMalformedConfig(t *testing.T) {
	m := newFakeMember(t, "tok")
	tests := []struct {
		name   string
		mutate func(*fedv1b1.KubeFedCluster, *corev1.Secret)
		// noSecret leaves the Secret out.
		noSecret bool
		want     string
	}{
		{name: "missing Secret", noSecret: true, want: "Secret kube-federation-system/m-secret referenced by KubeFedCluster m does not exist"},
		{name: "no token", mutate: func(_ *fedv1b1.KubeFedCluster, s *corev1.Secret) { s.Data = map[string][]byte{"ca.crt": []byte("x")} },
			want: `Secret kube-federation-system/m-secret has no "token" key with a bearer token`},
		{name: "bad CA", mutate: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Spec.CABundle = []byte("not PEM") },
			want: "spec.caBundle of KubeFedCluster m holds no PEM-encoded certificate"},
		{name: "bad endpoint", mutate: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Spec.APIEndpoint = "http://10.0.0.1" },
			want: `apiEndpoint "http://10.0.0.1" must use https, not http`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, s := m.objects("m", "tok")
			if tc.mutate != nil {
				tc.mutate(c, s)
			}
			objs := []client.Object{c}
			if !tc.noSecret {
				objs = append(objs, s)
			}
			h := newHarness(t, Options{Period: time.Hour}, objs...)
			w := h.manualWorker("m")
			w.cycle(h.ctx)
			w.cycle(h.ctx)

			if got := h.condition("m", fedv1b1.ClusterReady); got != "False/ClusterNotReady" {
				t.Errorf("Ready = %s", got)
			}
			if got, want := h.message("m", fedv1b1.ClusterReady), "malformed cluster config: "+tc.want; got != want {
				t.Errorf("Ready message = %q, want %q", got, want)
			}
			if got := h.condition("m", fedv1b1.ClusterOffline); got != "" {
				t.Errorf("Offline = %s, want none: reachability was not probed", got)
			}
			if evs := h.events.matching("MalformedClusterConfig BuildClient: malformed cluster config: " + tc.want); len(evs) != 1 {
				t.Errorf("want one MalformedClusterConfig event, got %v", h.events.events)
			}
			if m.requests.Load() != 0 {
				t.Error("a malformed cluster was probed")
			}
			if state := clusterStates(t)["m"]; state != "notready" {
				t.Errorf("kubefedcluster_total state = %q, want notready", state)
			}
		})
	}
}

// TestProbeTimeOnlyWritesAreRateLimited checks that an unchanged status is
// rewritten only when lastProbeTime is ProbeTimeWriteInterval old.
func TestProbeTimeOnlyWritesAreRateLimited(t *testing.T) {
	m := newFakeMember(t, "tok")
	c, s := m.objects("m", "tok")
	h := newHarness(t, Options{Period: 10 * time.Second, ProbeTimeWriteInterval: time.Minute, SummaryPeriod: time.Hour}, c, s)
	w := h.manualWorker("m")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	rv := func() string { return h.cluster("m").ResourceVersion }
	h.setClock(t0)
	w.cycle(h.ctx)
	written := rv()
	for _, at := range []time.Duration{10 * time.Second, 30 * time.Second, 50 * time.Second} {
		h.setClock(t0.Add(at))
		w.cycle(h.ctx)
		if rv() != written {
			t.Fatalf("status rewritten %s after the last write though only lastProbeTime changed", at)
		}
	}
	h.setClock(t0.Add(time.Minute))
	w.cycle(h.ctx)
	if rv() == written {
		t.Fatal("status not rewritten after ProbeTimeWriteInterval")
	}
	probe := findCondition(h.cluster("m").Status.Conditions, fedv1b1.ClusterReady).LastProbeTime.Time
	if !probe.Equal(t0.Add(time.Minute)) {
		t.Errorf("lastProbeTime = %v, want %v", probe, t0.Add(time.Minute))
	}
}

func TestDeletedClusterIsForgotten(t *testing.T) {
	m := newFakeMember(t, "tok")
	c, s := m.objects("m", "tok")
	h := newHarness(t, Options{Period: 50 * time.Millisecond}, c, s)
	changes := readinessChanges(h.r.Readiness)

	h.reconcile("m")
	eventually(t, 5*time.Second, "m to be ready", func() bool { return h.r.IsReady("m") })
	if _, ok := h.r.Registry.Get("m"); !ok {
		t.Fatal("no clients registered for m")
	}
	if clusterStates(t)["m"] != "ready" {
		t.Fatalf("kubefedcluster_total: %v", clusterStates(t))
	}

	if err := h.client.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.reconcile("m")
	if _, ok := h.r.Registry.Get("m"); ok {
		t.Error("clients of the deleted cluster are still registered")
	}
	if _, ok := clusterStates(t)["m"]; ok {
		t.Error("metrics of the deleted cluster remain")
	}
	if h.r.IsReady("m") {
		t.Error("the deleted cluster is still ready")
	}
	// The worker is gone: its goroutine, the only one left, ends, so no
	// probe comes after it.
	exited := make(chan struct{})
	go func() {
		h.r.wg.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the deleted cluster's worker still runs: it is still probed")
	}
	if got := changes(); got != "[m=true m=false]" {
		t.Errorf("listener saw %v", got)
	}
}

// TestRestartForgetsClustersDeletedMeanwhile models the controller-manager
// restarting its manager: the second run must drop what the first published
// about a cluster deleted in between, for which no Reconcile will come.
func TestRestartForgetsClustersDeletedMeanwhile(t *testing.T) {
	m := newFakeMember(t, "tok")
	kept, keptSecret := m.objects("kept", "tok")
	gone, goneSecret := m.objects("gone", "tok")

	first := newHarness(t, Options{Period: time.Hour}, kept, keptSecret, gone, goneSecret)
	for _, name := range []string{"kept", "gone"} {
		first.manualWorker(name).cycle(first.ctx)
	}
	if fmt.Sprint(first.r.ReadyClusters()) != "[gone kept]" {
		t.Fatalf("first run: ReadyClusters() = %v", first.r.ReadyClusters())
	}

	// The next run has a new Reconciler sharing Registry and tracker, as
	// the controller-manager does; "gone" was deleted while no manager ran.
	first.stop()
	r := &Reconciler{Registry: first.r.Registry, Readiness: first.r.Readiness}
	var notified []string
	r.Readiness.AddListener(ReadinessListenerFunc(func(name string, ready bool) {
		notified = append(notified, fmt.Sprintf("%s=%v", name, ready))
	}))
	second := newHarnessFor(t, r, Options{Period: time.Hour}, kept, keptSecret, goneSecret)
	eventually(t, 5*time.Second, "gone to be forgotten", func() bool {
		_, hasClients := r.Registry.Get("gone")
		return !hasClients && !r.IsReady("gone")
	})
	if _, ok := clusterStates(t)["gone"]; ok {
		t.Error("metrics of the cluster deleted meanwhile remain")
	}
	if !second.r.IsReady("kept") {
		t.Error("the remaining cluster was forgotten too")
	}
	if fmt.Sprint(notified) != "[gone=false]" {
		t.Errorf("listeners saw %v", notified)
	}
}

func TestClustersForSecret(t *testing.T) {
	m := newFakeMember(t, "tok")
	a, s := m.objects("a", "tok")
	b, _ := m.objects("b", "tok")
	b.Spec.SecretRef.Name = s.Name // two clusters share one Secret
	other, _ := m.objects("other", "tok")
	h := newHarness(t, Options{}, a, b, other, s)

	reqs := h.r.clustersForSecret(context.Background(), s)
	var names []string
	for _, r := range reqs {
		names = append(names, r.Name)
	}
	if fmt.Sprint(names) != "[a b]" {
		t.Errorf("Secret %s maps to %v, want [a b]", s.Name, names)
	}
}

func TestReconcileIgnoresOtherNamespaces(t *testing.T) {
	h := newHarness(t, Options{})
	if _, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "elsewhere", Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	if len(h.r.workers) != 0 {
		t.Error("a worker was started for a cluster outside the KubeFed namespace")
	}
}

func TestReadinessSourceEnqueuesOnChange(t *testing.T) {
	tr := NewReadinessTracker(ns)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	src := ReadinessSource(tr, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "app", Name: "placed-on-" + o.GetName() + "-in-" + o.GetNamespace()}}}
	}))
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	tr.set("c1", true)
	tr.set("c1", true) // no change, no event
	if q.Len() != 1 {
		t.Fatalf("queue has %d items, want 1", q.Len())
	}
	item, _ := q.Get()
	if item.Name != "placed-on-c1-in-"+ns {
		t.Errorf("enqueued %v", item)
	}
	q.Done(item)

	cancel()
	eventually(t, time.Second, "the listener to be removed", func() bool {
		tr.mu.RLock()
		defer tr.mu.RUnlock()
		return len(tr.listeners) == 0
	})
	tr.set("c1", false)
	if q.Len() != 0 {
		t.Error("a stopped source still enqueues")
	}
	if fmt.Sprint(tr.ReadyClusters()) != "[]" {
		t.Errorf("ReadyClusters() = %v", tr.ReadyClusters())
	}
}

// clusterStates returns cluster → the state kubefedcluster_total reports 1
// for, read through the registry Prometheus scrapes.
func clusterStates(t *testing.T) map[string]string {
	t.Helper()
	series, err := framework.MetricSeries("kubefedcluster_total")
	if err != nil && !errors.Is(err, framework.ErrNoMetric) {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range series {
		if _, ok := out[s.Labels["cluster"]]; !ok {
			out[s.Labels["cluster"]] = ""
		}
		if s.Value == 1 {
			out[s.Labels["cluster"]] = s.Labels["state"]
		}
	}
	return out
}

// A problem whose message changed from one probe to the next would be
// written, with an event and a log line, every period: a message cut inside
// a rune comes back from the API server changed (invalid UTF-8 replaced),
// and Go's error for an expired certificate names the current time. Both
// must be written once.
func TestLastingProblemIsWrittenOnce(t *testing.T) {
	cert, parsed := expiredCert(t)
	tests := []struct {
		name   string
		member func() *fakeMember
		want   string
	}{
		{
			name: "answer cut between runes",
			member: func() *fakeMember {
				m := newFakeMember(t, "tok")
				m.answer.Store(&memberAnswer{code: 500, body: "x" + strings.Repeat("é", 300)})
				m.mode.Store(int32(modeAnswer))
				return m
			},
			want: "/readyz responded with 500 Internal Server Error: x" + strings.Repeat("é", (maxBodyInMessage-1)/2) + "...",
		},
		{
			name:   "expired certificate",
			member: func() *fakeMember { return newFakeMember(t, "tok", cert) },
			want: "cluster is not reachable: tls: failed to verify certificate: x509: certificate has expired or is not yet valid: it is valid from " +
				parsed.NotBefore.UTC().Format(time.RFC3339) + " until " + parsed.NotAfter.UTC().Format(time.RFC3339),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, s := tc.member().objects("m", "tok")
			h := newHarness(t, Options{Period: 10 * time.Second, ProbeTimeWriteInterval: time.Minute}, c, s)
			w := h.manualWorker("m")
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

			h.probeAt(w, t0)
			if h.probeAt(w, t0.Add(10*time.Second)) {
				t.Error("status rewritten 10s later")
			}
			if got := h.message("m", fedv1b1.ClusterReady); got != tc.want {
				t.Errorf("message = %q, want %q", got, tc.want)
			}
		})
	}
}

// Every message is bounded, whatever it quotes, so that the event made of
// it is within what the API server accepts.
func TestEveryMessageIsBounded(t *testing.T) {
	m := newFakeMember(t, "tok")
	c, s := m.objects("m", "tok")
	c.Spec.APIEndpoint = "http://" + strings.Repeat("a", 2000) + ".example"
	h := newHarness(t, Options{Period: time.Hour}, c, s)
	h.manualWorker("m").cycle(h.ctx)

	if msg := h.message("m", fedv1b1.ClusterReady); len(msg) > maxMessage+len(truncationMark) || !strings.HasPrefix(msg, msgMalformed) {
		t.Errorf("Ready message of %d bytes: %.80q", len(msg), msg)
	}
	evs := h.events.matching("MalformedClusterConfig")
	if len(evs) != 1 {
		t.Fatalf("want one event, got %d", len(evs))
	}
	if note := evs[0][strings.Index(evs[0], ": ")+2:]; len(note) > eventNoteLimit {
		t.Errorf("event note of %d bytes", len(note))
	}
}

// A worker stopped in the middle of a probe, its cluster deleted and
// created again meanwhile, must leave what the new worker keeps alone.
func TestStoppedWorkerLeavesTheReCreatedClusterAlone(t *testing.T) {
	m := newFakeMember(t, "tok")
	c, s := m.objects("m", "tok")
	heard := &heartbeats{}
	h := newHarnessFor(t, &Reconciler{Heartbeats: heard}, Options{Period: time.Hour}, c, s)
	stale := h.manualWorker("m")
	h.r.forget("m")
	h.manualWorker("m").cycle(h.ctx)
	if _, ok := h.r.Registry.Get("m"); !ok {
		t.Fatal("the new worker registered no clients")
	}

	// The stale worker read the deleted cluster in Pull mode...
	pull := c.DeepCopy()
	pull.Spec.Mode = fedv1b1.ClusterModePull
	if _, _, err := stale.observe(h.ctx, pull); !errors.Is(err, errWorkerStopped) {
		t.Errorf("observe = %v, want errWorkerStopped", err)
	}
	if _, ok := h.r.Registry.Get("m"); !ok {
		t.Error("the stale worker removed the new cluster's clients")
	}
	// ... or in push mode.
	heard.mu.Lock()
	forgotten := len(heard.forgotten)
	heard.mu.Unlock()
	if _, _, err := stale.observe(h.ctx, c); !errors.Is(err, errWorkerStopped) {
		t.Errorf("observe = %v, want errWorkerStopped", err)
	}
	heard.mu.Lock()
	defer heard.mu.Unlock()
	if len(heard.forgotten) != forgotten {
		t.Error("the stale worker made the listener forget the new cluster's heartbeat")
	}
}
