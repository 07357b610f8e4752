package cluster

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// A Pull-mode member is judged by its agent's heartbeat Lease, never by
// connecting to it: no Lease is Offline, a changing one Ready (or NotReady
// with what the agent's own probe said), however skewed the agent's clock,
// one that stopped changing Offline again.
func TestPullModeMemberHealthFromTheAgentsHeartbeat(t *testing.T) {
	kfc := &fedv1b1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: ns},
		// An endpoint nobody answers and no Secret: only the Lease counts.
		Spec: fedv1b1.KubeFedClusterSpec{Mode: fedv1b1.ClusterModePull, APIEndpoint: "https://192.0.2.1:6443"},
	}
	heard := &heartbeats{}
	h := newHarnessFor(t, &Reconciler{Heartbeats: heard}, Options{Period: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, ProbeTimeWriteInterval: 50 * time.Millisecond,
		FailureThreshold: 1, SuccessThreshold: 1}, kfc)
	h.reconcile("edge")
	eventually(t, 5*time.Second, "edge Offline without a heartbeat", func() bool {
		return h.condition("edge", fedv1b1.ClusterOffline) == "True/ClusterNotReachable"
	})
	if msg := h.message("edge", fedv1b1.ClusterReady); msg == "" {
		t.Error("no message on Ready")
	}

	summary := `{"kubernetesVersion":"v1.37.2","nodes":{"totalNum":3,"readyNum":2},"zones":["r1-a","r1-b"],"region":"r1","allocatable":{"cpu":"12"},"allocated":{"cpu":"1500m"},` +
		`"apiEnablements":[{"groupVersion":"apps/v1","resources":[{"name":"deployments","kind":"Deployment"}]}]}`
	renew := func(health string) {
		t.Helper()
		// The agent's clock is an hour behind: only changes of the Lease
		// count, by the controller's own clock.
		h.renewLease("edge", time.Now().Add(-time.Hour), map[string]string{AgentHealthAnnotation: health, AgentSummaryAnnotation: summary})
	}
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				renew("ok")
			}
		}
	}()
	eventually(t, 5*time.Second, "edge Ready on its agent's heartbeat", func() bool {
		return h.condition("edge", fedv1b1.ClusterReady) == "True/ClusterReady"
	})
	// What the agent read of its cluster is the KubeFedCluster's status,
	// as the control plane's own reading of a push member would be.
	eventually(t, 5*time.Second, "edge's version, nodes and resources from the heartbeat", func() bool {
		got := &fedv1b1.KubeFedCluster{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(kfc), got); err != nil {
			return false
		}
		st := got.Status
		return st.KubernetesVersion == "v1.37.2" && st.NodeSummary != nil && st.NodeSummary.TotalNum == 3 && st.NodeSummary.ReadyNum == 2 &&
			st.Region != nil && *st.Region == "r1" && len(st.Zones) == 2 && st.ResourceSummary != nil &&
			st.ResourceSummary.Allocatable.Cpu().String() == "12" && st.ResourceSummary.Allocated.Cpu().String() == "1500m" &&
			len(st.APIEnablements) == 1 && st.APIEnablements[0].GroupVersion == "apps/v1" && st.APIEnablements[0].Resources[0].Kind == "Deployment"
	})
	// Whoever listens hears the heartbeats, with what came with them.
	if got := heard.last("edge"); got == nil || got.Annotations[AgentHealthAnnotation] != "ok" {
		t.Errorf("the heartbeat listener heard %v", got)
	}
	// The tracker is told right after the status is written.
	eventually(t, 5*time.Second, "the readiness tracker to say edge is ready", func() bool { return h.r.IsReady("edge") })
	if _, ok := h.r.Registry.Get("edge"); ok {
		t.Error("clients were built for a Pull-mode member")
	}
	close(stop)
	<-beating

	renew("/readyz answered 500: etcd failed")
	eventually(t, 5*time.Second, "edge NotReady with the agent's message", func() bool {
		return h.condition("edge", fedv1b1.ClusterReady) == "False/ClusterNotReady" &&
			h.message("edge", fedv1b1.ClusterReady) == "the agent reports: /readyz answered 500: etcd failed"
	})
	// No more heartbeats: stale after period + timeout.
	eventually(t, 5*time.Second, "edge Offline once the heartbeat is stale", func() bool {
		return h.condition("edge", fedv1b1.ClusterOffline) == "True/ClusterNotReachable"
	})
	// A stale heartbeat is heard no more: after a later probe, shown by
	// its lastProbeTime, the listener has heard nothing new.
	n, offlineAt := heard.count(), time.Now()
	eventually(t, 5*time.Second, "a probe of the stale Lease", func() bool {
		c := findCondition(h.cluster("edge").Status.Conditions, fedv1b1.ClusterOffline)
		return c != nil && c.LastProbeTime.After(offlineAt.Add(time.Second))
	})
	if heard.count() != n {
		t.Error("a stale heartbeat was handed to the listener")
	}
	// Joined again in push mode, it has no agent: what it reported is
	// forgotten.
	got := h.cluster("edge")
	got.Spec.Mode = fedv1b1.ClusterModePush
	if err := h.client.Update(h.ctx, got); err != nil {
		t.Fatal(err)
	}
	h.reconcile("edge")
	eventually(t, 5*time.Second, "edge forgotten once in push mode", func() bool {
		heard.mu.Lock()
		defer heard.mu.Unlock()
		return slices.Contains(heard.forgotten, "edge")
	})
}

// heartbeats records the heartbeats a HeartbeatListener hears.
type heartbeats struct {
	mu        sync.Mutex
	heard     []*coordinationv1.Lease
	names     []string
	forgotten []string
}

func (h *heartbeats) Heartbeat(cluster string, lease *coordinationv1.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard, h.names = append(h.heard, lease.DeepCopy()), append(h.names, cluster)
}

func (h *heartbeats) Forget(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forgotten = append(h.forgotten, cluster)
}

func (h *heartbeats) last(cluster string) *coordinationv1.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.names) - 1; i >= 0; i-- {
		if h.names[i] == cluster {
			return h.heard[i]
		}
	}
	return nil
}

func (h *heartbeats) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.heard)
}

// renewLease creates or renews cluster's heartbeat Lease as its agent would,
// with renewTime by the agent's clock.
func (h *harness) renewLease(cluster string, renewTime time.Time, annotations map[string]string) {
	h.t.Helper()
	at := metav1.NewMicroTime(renewTime)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fedv1b1.AgentLeaseName(cluster), Namespace: ns, Annotations: annotations},
		Spec: coordinationv1.LeaseSpec{RenewTime: &at}}
	existing := &coordinationv1.Lease{}
	if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(lease), existing); err == nil {
		existing.Annotations, existing.Spec.RenewTime = lease.Annotations, lease.Spec.RenewTime
		if err := h.client.Update(h.ctx, existing); err != nil {
			h.t.Fatal(err)
		}
		return
	}
	if err := h.client.Create(h.ctx, lease); err != nil {
		h.t.Fatal(err)
	}
}

// pullCluster is a Pull-mode KubeFedCluster reporting conds.
func pullCluster(name string, conds []fedv1b1.ClusterCondition) *fedv1b1.KubeFedCluster {
	return &fedv1b1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       fedv1b1.KubeFedClusterSpec{Mode: fedv1b1.ClusterModePull, APIEndpoint: "https://192.0.2.1:6443"},
		Status:     fedv1b1.KubeFedClusterStatus{Conditions: conds},
	}
}

// A restarted controller-manager finds the Lease of an agent that died long
// ago still saying ok, and the member reported Offline. A Lease first seen
// tells nothing of when it was renewed: the member must not turn Ready, nor
// its readiness listeners hear so, until the Lease changes.
func TestRestartDoesNotTakeAnOldHeartbeatForAFreshOne(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	wentOffline := t0.Add(-time.Hour)
	kfc := pullCluster("edge", toConds(
		cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "cluster is not reachable: gone", wentOffline, wentOffline},
		cond{fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, "cluster is not reachable: gone", wentOffline, wentOffline},
	))
	heard := &heartbeats{}
	h := newHarnessFor(t, &Reconciler{Heartbeats: heard}, Options{Period: 10 * time.Second, Timeout: 5 * time.Second, ProbeTimeWriteInterval: time.Minute}, kfc)
	listened := readinessChanges(h.r.Readiness)
	ok := map[string]string{AgentHealthAnnotation: "ok"}
	h.renewLease("edge", wentOffline.Add(-time.Minute), ok)

	w := h.manualWorker("edge")
	for i := range 5 {
		h.setClock(t0.Add(time.Duration(i) * 10 * time.Second))
		w.cycle(h.ctx)
		if got := h.condition("edge", fedv1b1.ClusterReady); got != "False/ClusterNotReady" || h.r.IsReady("edge") {
			t.Fatalf("probe %d of the unchanged Lease: Ready = %s, tracker ready = %v", i+1, got, h.r.IsReady("edge"))
		}
	}
	if got := h.condition("edge", fedv1b1.ClusterOffline); got != "True/ClusterNotReachable" {
		t.Errorf("Offline = %s", got)
	}
	if n := heard.count(); n != 0 {
		t.Errorf("the heartbeat listener heard the old Lease %d times", n)
	}
	if got := listened(); got != "[]" {
		t.Errorf("readiness listeners heard %s", got)
	}

	// The agent is back: its next renewal makes the member Ready.
	h.renewLease("edge", t0, ok)
	h.setClock(t0.Add(50 * time.Second))
	w.cycle(h.ctx)
	if got := h.condition("edge", fedv1b1.ClusterReady); got != "True/ClusterReady" {
		t.Errorf("after a renewal Ready = %s", got)
	}
	if got := listened(); got != "[edge=true]" {
		t.Errorf("readiness listeners heard %s", got)
	}
	if n := heard.count(); n != 1 {
		t.Errorf("the heartbeat listener heard %d heartbeats, want the renewal", n)
	}
}

// A member joining with its agent's Lease already there has no status: it
// gets none from the Lease as found, and is Ready at the first renewal.
func TestJoinWithAnExistingHeartbeatIsReadyAtItsFirstRenewal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(t, Options{Period: 10 * time.Second, Timeout: 5 * time.Second, ProbeTimeWriteInterval: time.Minute}, pullCluster("edge", nil))
	ok := map[string]string{AgentHealthAnnotation: "ok"}
	h.renewLease("edge", t0, ok)
	w := h.manualWorker("edge")

	h.setClock(t0)
	w.cycle(h.ctx)
	if conds := h.cluster("edge").Status.Conditions; len(conds) != 0 {
		t.Errorf("conditions from a Lease not yet seen to change: %+v", conds)
	}
	h.renewLease("edge", t0.Add(10*time.Second), ok)
	h.setClock(t0.Add(10 * time.Second))
	w.cycle(h.ctx)
	if got := h.condition("edge", fedv1b1.ClusterReady); got != "True/ClusterReady" || !h.r.IsReady("edge") {
		t.Errorf("after the first renewal Ready = %s, tracker ready = %v", got, h.r.IsReady("edge"))
	}
}

// A stale heartbeat's Offline message stays the same from one probe to the
// next, so the status is written once, not every period.
func TestStaleHeartbeatIsWrittenOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(t, Options{Period: 10 * time.Second, Timeout: 5 * time.Second, ProbeTimeWriteInterval: time.Minute}, pullCluster("edge", nil))
	h.renewLease("edge", t0, map[string]string{AgentHealthAnnotation: "ok"})
	w := h.manualWorker("edge")
	h.probeAt(w, t0)

	h.probeAt(w, t0.Add(20*time.Second))
	if got := h.condition("edge", fedv1b1.ClusterOffline); got != "True/ClusterNotReachable" {
		t.Fatalf("Offline = %s", got)
	}
	if h.probeAt(w, t0.Add(30*time.Second)) {
		t.Errorf("status rewritten 10s later, message now %q", h.message("edge", fedv1b1.ClusterOffline))
	}
	if want := "cluster is not reachable: its agent's Lease kubefed-agent-edge has not been renewed for more than 15s (last renewed 2026-01-01T00:00:00Z by its own clock)"; h.message("edge", fedv1b1.ClusterOffline) != want {
		t.Errorf("message = %q, want %q", h.message("edge", fedv1b1.ClusterOffline), want)
	}
}

// What an agent reports goes into the conditions and the event cut to a
// bounded size, and stays put once written.
func TestLongAgentReportIsCut(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(t, Options{Period: 10 * time.Second, Timeout: 5 * time.Second, ProbeTimeWriteInterval: time.Minute}, pullCluster("edge", nil))
	report := strings.Repeat("é", 2500) // 5000 bytes
	w := h.manualWorker("edge")
	h.setClock(t0)
	w.cycle(h.ctx) // no Lease yet
	h.renewLease("edge", t0, map[string]string{AgentHealthAnnotation: report})
	h.setClock(t0.Add(10 * time.Second))
	w.cycle(h.ctx)

	msg := h.message("edge", fedv1b1.ClusterReady)
	if want := "the agent reports: " + strings.Repeat("é", maxBodyInMessage/2) + "..."; msg != want {
		t.Errorf("Ready message has %d bytes, want %d", len(msg), len(want))
	}
	evs := h.events.matching("the agent reports")
	if len(evs) != 1 || !strings.HasSuffix(evs[0], eventNotePrefix+msg) {
		t.Errorf("want one event with the message, got %d", len(evs))
	}
}

// A worker stopped in the middle of a probe, its cluster deleted meanwhile,
// must not hand the heartbeat it read to the listener after forget.
func TestStoppedWorkerHandsNoHeartbeatOn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	kfc := pullCluster("edge", nil)
	heard := &heartbeats{}
	h := newHarnessFor(t, &Reconciler{Heartbeats: heard}, Options{Period: 10 * time.Second, Timeout: 5 * time.Second}, kfc)
	ok := map[string]string{AgentHealthAnnotation: "ok"}
	h.renewLease("edge", t0, ok)
	w := h.manualWorker("edge")
	h.setClock(t0)
	w.cycle(h.ctx)
	h.renewLease("edge", t0.Add(10*time.Second), ok)

	h.r.forget("edge")
	if _, err := w.observeAgent(h.ctx, kfc); err != nil {
		t.Fatal(err)
	}
	if n := heard.count(); n != 0 {
		t.Errorf("the listener heard %d heartbeats after the cluster was forgotten", n)
	}
}
