package controllermanager

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
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
	if err := serveHealth(ctx, addr, nil); err != nil {
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
	if err := serveHealth(ctx, addr, nil); err == nil {
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
	if err := serveHealth(context.Background(), "0", nil); err != nil {
		t.Errorf("a disabled endpoint: %v", err)
	}
}

// freeAddr is a local address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// An agent whose token the host no longer accepts (join issued another
// into the Secret it read at start) fails its liveness probe once the host
// has refused every request for hostRefusalPeriod, so that the kubelet
// restarts it with the new Secret; a few refusals, or any other answer in
// between, do not. The probe's answer never holds the token.
func TestAgentFailsLivenessWhileTheHostRefusesItsToken(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Unauthorized","code":401}`)
			return
		}
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system"}}`)
	}))
	defer host.Close()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	refused := &hostRefusal{now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}
	cfg := &rest.Config{Host: host.URL, BearerToken: "the-old-token"}
	cfg.Wrap(refused.wrap)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ask := func() {
		t.Helper()
		_, _ = kube.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := serveHealth(ctx, addr, refused.check); err != nil {
		t.Fatal(err)
	}
	healthz := func() (int, string) {
		t.Helper()
		return httpGet(t, "http://"+addr+"/healthz")
	}

	// Refused, but not for long enough, then not often enough.
	ask()
	ask()
	ask()
	advance(hostRefusalPeriod - time.Second)
	if code, body := healthz(); code != http.StatusOK {
		t.Errorf("refused for less than %s: /healthz %d %s", hostRefusalPeriod, code, body)
	}
	refuse.Store(false)
	ask()
	refuse.Store(true)
	ask()
	ask()
	advance(hostRefusalPeriod)
	if code, body := healthz(); code != http.StatusOK {
		t.Errorf("refused twice since the last answer: /healthz %d %s", code, body)
	}

	ask()
	code, body := healthz()
	if code != http.StatusInternalServerError || !strings.Contains(body, "401 Unauthorized") {
		t.Errorf("refused 3 times over %s: /healthz %d %q, want 500 naming the refusal", hostRefusalPeriod, code, body)
	}
	if strings.Contains(body, "the-old-token") {
		t.Errorf("/healthz prints the token: %q", body)
	}
	if code, _ := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d while refused", code)
	}

	// The host accepting the token again makes the agent live again.
	refuse.Store(false)
	ask()
	if code, body := healthz(); code != http.StatusOK {
		t.Errorf("after an accepted request: /healthz %d %s", code, body)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Summarizing a large member (listing its nodes and pods) takes a while;
// the heartbeat renews its Lease meanwhile, on time, and carries the
// summary once it is read.
func TestHeartbeatRenewsWhileTheMemberIsSummarized(t *testing.T) {
	listing := make(chan struct{})
	var listingOnce sync.Once
	release := make(chan struct{})
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/readyz":
			fmt.Fprint(w, "ok")
		case "/version":
			fmt.Fprint(w, `{"major":"1","minor":"31","gitVersion":"v1.31.0"}`)
		case "/api/v1/nodes":
			listingOnce.Do(func() { close(listing) })
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, `{"apiVersion":"v1","kind":"NodeList","items":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer member.Close()
	defer close(release)
	const namespace = "kube-federation-system"
	clients, err := clusterclient.NewRegistry(clusterclient.ConfigOptions{}).SetLocal("edge1", &rest.Config{Host: member.URL})
	if err != nil {
		t.Fatal(err)
	}
	hostKube := fake.NewClientset()
	o := DefaultAgentOptions()
	o.ClusterName, o.Identity = "edge1", "agent-0"
	h := &heartbeat{kube: hostKube, member: clients, readiness: cluster.NewReadinessTracker(namespace), o: o,
		period: 20 * time.Millisecond, timeout: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- h.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("heartbeat stopped with %v", err)
		}
	}()

	select {
	case <-listing:
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat never summarized its member")
	}
	// The node list hangs (for up to DefaultSummaryTimeout); renewals go on.
	lease := func() *coordinationv1.Lease {
		l, err := hostKube.CoordinationV1().Leases(namespace).Get(context.Background(), corev1beta1.AgentLeaseName("edge1"), metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return l
	}
	renewals := map[time.Time]bool{}
	for deadline := time.Now().Add(10 * time.Second); len(renewals) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals while the summary was read, want 3", len(renewals))
		}
		if l := lease(); l != nil && l.Spec.RenewTime != nil {
			renewals[l.Spec.RenewTime.Time] = true
		}
	}
	if l := lease(); l.Annotations[cluster.AgentHealthAnnotation] != "ok" || l.Annotations[cluster.AgentSummaryAnnotation] != "" {
		t.Errorf("while summarizing: annotations %v", l.Annotations)
	}

	release <- struct{}{}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l := lease(); l != nil && strings.Contains(l.Annotations[cluster.AgentSummaryAnnotation], `"kubernetesVersion":"v1.31.0"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the summary never reached the Lease: %v", lease().Annotations)
		}
	}
}
