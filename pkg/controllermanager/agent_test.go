package controllermanager

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAgentOptionsValidation(t *testing.T) {
	o := DefaultAgentOptions()
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--cluster-name") || !strings.Contains(err.Error(), "--host-kubeconfig is required") {
		t.Errorf("defaults: %v, want both required flags named", err)
	}
	o.ClusterName, o.HostKubeconfig = "Edge_1", "/etc/kubefed/host/kubeconfig"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `got "Edge_1"`) {
		t.Errorf("bad name: %v", err)
	}
	o.ClusterName = "edge1"
	if err := o.Validate(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

// An agent writes to its own cluster while that is in Pull mode, never to
// another, and owns no finalizer and no cluster name that is not joined.
func TestAgentShard(t *testing.T) {
	pulled := &pullMembers{namespace: "kube-federation-system", pulled: map[string]bool{"edge1": true}}
	s := agentShard{cluster: "edge1", pulled: pulled}
	if !s.Holds("edge1") || s.Holds("edge2") || s.Assigned("federatedconfigmaps/ns/x") || s.Assigned("nowhere") {
		t.Errorf("holds edge1 %v, edge2 %v", s.Holds("edge1"), s.Holds("edge2"))
	}
	if _, ok := s.WriteDeadline("edge2"); ok {
		t.Error("a write deadline for another cluster")
	}
	pulled.pulled = map[string]bool{}
	if s.Holds("edge1") {
		t.Error("the agent still writes to its cluster after it was joined back in push mode")
	}
}

// Two agents of one member: one works at a time; the second starts only
// after the first's work has returned and it released the Lease, and the
// first, stopped, returns without an error.
func TestAgentsElectOneLeader(t *testing.T) {
	kube := fake.NewClientset()
	var running, overlaps atomic.Int32
	started := make(chan string, 2)
	run := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			started <- name
			<-ctx.Done()
			// Writes still under way while stopping.
			time.Sleep(100 * time.Millisecond)
			running.Add(-1)
			return nil
		}
	}
	opts := func(id string) AgentOptions {
		o := DefaultAgentOptions()
		o.ClusterName, o.Identity = "edge1", id
		return o
	}
	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	errA := make(chan error, 1)
	go func() { errA <- leadAgent(ctxA, opts("a"), kube, run("a")) }()
	if got := <-started; got != "a" {
		t.Fatalf("%s leads first", got)
	}
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	errB := make(chan error, 1)
	go func() { errB <- leadAgent(ctxB, opts("b"), kube, run("b")) }()
	// b stands by while a holds the Lease: it has tried (a Get) by then.
	lease := waitForLease(t, kube, "a")
	stopA()
	if err := <-errA; err != nil {
		t.Errorf("a stopped with %v", err)
	}
	select {
	case got := <-started:
		if got != "b" {
			t.Fatalf("%s started again", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b never took over after a released the Lease")
	}
	if overlaps.Load() != 0 {
		t.Error("two agents worked at once")
	}
	if lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 15 {
		t.Errorf("lease duration %v", lease.Spec.LeaseDurationSeconds)
	}
	stopB()
	if err := <-errB; err != nil {
		t.Errorf("b stopped with %v", err)
	}
}

func waitForLease(t *testing.T, kube *fake.Clientset, holder string) *coordinationv1.Lease {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l, err := kube.CoordinationV1().Leases("kube-federation-system").Get(context.Background(), AgentLeaderElectionID, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the Lease never named %s", holder)
	return nil
}

// The agent answers its probes whether it leads or stands by, so that a
// standby's Pod is neither restarted nor kept out of a rolling update, and
// stops answering when it stops.
func TestAgentServesProbesWhileStandingBy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := serveHealth(ctx, addr); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d", path, resp.StatusCode)
		}
	}
	if err := serveHealth(ctx, addr); err == nil {
		t.Error("a second listener on a taken address did not fail")
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			break
		}
		_ = resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still answering after the agent stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := serveHealth(context.Background(), "0"); err != nil {
		t.Errorf("a disabled endpoint: %v", err)
	}
}
