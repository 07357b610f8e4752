package cluster

import (
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		now := metav1.NewMicroTime(time.Now().Add(-time.Hour))
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fedv1b1.AgentLeaseName("edge"), Namespace: ns,
			Annotations: map[string]string{AgentHealthAnnotation: health, AgentSummaryAnnotation: summary}}, Spec: coordinationv1.LeaseSpec{RenewTime: &now}}
		existing := &coordinationv1.Lease{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(lease), existing); err == nil {
			existing.Annotations, existing.Spec.RenewTime = lease.Annotations, lease.Spec.RenewTime
			if err := h.client.Update(h.ctx, existing); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := h.client.Create(h.ctx, lease); err != nil {
			t.Fatal(err)
		}
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
