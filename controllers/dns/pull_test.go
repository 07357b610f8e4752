package dns

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

// pullCluster is a Pull-mode member's KubeFedCluster, Ready as the control
// plane last wrote it.
func pullCluster(name, region string, zones ...string) *fedv1b1.KubeFedCluster {
	c := kubeFedCluster(name, region, zones...)
	c.Spec.Mode = fedv1b1.ClusterModePull
	setClusterReady(c, true)
	return c
}

func setClusterReady(c *fedv1b1.KubeFedCluster, ready bool) {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	c.Status.Conditions = []fedv1b1.ClusterCondition{{Type: fedv1b1.ClusterReady, Status: status}}
}

// markReady writes a KubeFedCluster's Ready condition, as the control
// plane's cluster controller would.
func markReady(t *testing.T, c client.Client, name string, ready bool) {
	t.Helper()
	kfc := &fedv1b1.KubeFedCluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: fedNS, Name: name}, kfc); err != nil {
		t.Fatal(err)
	}
	setClusterReady(kfc, ready)
	if err := c.Status().Update(context.Background(), kfc); err != nil {
		t.Fatal(err)
	}
}

func entriesOf(rec *dnsv1a1.ServiceDNSRecord) string {
	var got []string
	for _, d := range rec.Status.DNS {
		got = append(got, d.Cluster+"/"+d.Region+"/"+strings.Join(d.Zones, "+")+"/"+lbIPs(d.LoadBalancer))
	}
	return strings.Join(got, " ")
}

// A Pull-mode member's entry of a ServiceDNSRecord is written by its agent,
// from its own copy of the Service, beside the control plane's entries of
// the push members; each keeps the other's, and the control plane counts
// the agent's targets in the condition. While the pull member is not
// ready, the control plane writes its entry without targets, as for any
// member.
func TestServiceRecordOfAPullMember(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true}),
		domain("fed", "example.com"),
		kubeFedCluster("c1", "east", "a"),
		pullCluster("edge", "south", "s1"))
	h.ready["c1"], h.ready["edge"] = true, true
	h.r.Pulled = func(c string) bool { return c == "edge" }
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	// The control plane has no cache of edge, and does not wait for one.
	if res := h.reconcile(); res.RequeueAfter != 0 {
		t.Errorf("the control plane waits for a pull member's cache: %+v", res)
	}
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1" {
		t.Fatalf("status.dns = %s", got)
	}

	// edge's agent: its own members' cache, its own KubeFedCluster.
	agentMembers := newFakeMembers(t)
	agentMembers.add("edge", servicesGVR, service("shop", "web", "203.0.113.7"))
	agent := &ServiceDNSRecordReconciler{Client: h.client, Namespace: fedNS, Members: agentMembers, Readiness: fakeReadiness{"edge": true}, Agent: "edge"}
	reconcileWith := func(r reconcile.Reconciler) {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey}); err != nil {
			t.Fatal(err)
		}
	}
	reconcileWith(agent)
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1 edge/south/s1/203.0.113.7" {
		t.Fatalf("status.dns after the agent = %s", got)
	}
	// The agent wrote its entry only: the condition is the control plane's.
	c := readyCondition(t, h.record().Status.Conditions)
	if !strings.Contains(c.Message, "1 of 2") {
		t.Errorf("condition before the control plane looked again: %q", c.Message)
	}
	h.reconcile()
	rec := h.record()
	if got := entriesOf(rec); got != "c1/east/a/192.0.2.1 edge/south/s1/203.0.113.7" {
		t.Fatalf("the control plane rewrote the agent's entry: %s", got)
	}
	if c := readyCondition(t, rec.Status.Conditions); !strings.Contains(c.Message, "2 of 2") {
		t.Errorf("condition = %q, want both members' targets counted", c.Message)
	}
	// Nothing changed for either: no write.
	rv := rec.ResourceVersion
	reconcileWith(agent)
	h.reconcile()
	if h.record().ResourceVersion != rv {
		t.Error("an unchanged record was written again")
	}

	// The agent's Service loses its address: its entry follows.
	agentMembers.add("edge", servicesGVR, service("shop", "web"))
	reconcileWith(agent)
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1 edge/south/s1/" {
		t.Errorf("status.dns = %s", got)
	}

	// edge is not ready for the control plane, though its agent's own
	// probe says it is (the control plane's thresholds, a stale
	// heartbeat): the control plane writes its entry without targets, and
	// the agent, which reads the same Ready condition, leaves it so rather
	// than write it back, which would undo and be undone in a loop.
	agentMembers.add("edge", servicesGVR, service("shop", "web", "203.0.113.7"))
	reconcileWith(agent)
	h.ready["edge"] = false
	markReady(t, h.client, "edge", false)
	h.reconcile()
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1 edge/south/s1/" {
		t.Errorf("status.dns with edge not ready = %s", got)
	}
	rv = h.record().ResourceVersion
	reconcileWith(agent)
	if h.record().ResourceVersion != rv {
		t.Error("the agent of a member the control plane sees not ready wrote its entry")
	}
	// Ready again: the agent's entry is back.
	h.ready["edge"] = true
	markReady(t, h.client, "edge", true)
	reconcileWith(agent)
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1 edge/south/s1/203.0.113.7" {
		t.Errorf("status.dns with edge ready again = %s", got)
	}
	// Joined again in push mode: the control plane writes its entry from
	// its own cache, and the agent, still running, stands back.
	kfc := &fedv1b1.KubeFedCluster{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: fedNS, Name: "edge"}, kfc); err != nil {
		t.Fatal(err)
	}
	kfc.Spec.Mode = fedv1b1.ClusterModePush
	if err := h.client.Update(context.Background(), kfc); err != nil {
		t.Fatal(err)
	}
	agentMembers.add("edge", servicesGVR, service("shop", "web", "203.0.113.99"))
	rv = h.record().ResourceVersion
	reconcileWith(agent)
	if h.record().ResourceVersion != rv {
		t.Error("the agent of a member in push mode wrote its entry")
	}
}

// The agent's write touches status.dns alone, guarded by the
// resourceVersion: a status field it does not know (written by a newer
// control plane) stays as it is.
func TestAgentPatchesItsEntryOnly(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true})
	rec.Status.Domain = "example.com"
	rec.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonTargetsFound, Message: "m", LastTransitionTime: metav1.Now()}}
	var patches []string
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(rec, pullCluster("edge", "south")).
		WithStatusSubresource(&dnsv1a1.ServiceDNSRecord{}, &fedv1b1.KubeFedCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				patches = append(patches, string(data))
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				t.Error("the agent replaced the whole status")
				return nil
			},
		}).Build()
	members := newFakeMembers(t)
	members.add("edge", servicesGVR, service("shop", "web", "203.0.113.7"))
	agent := &ServiceDNSRecordReconciler{Client: c, Namespace: fedNS, Members: members, Readiness: fakeReadiness{"edge": true}, Agent: "edge"}
	if _, err := agent.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey}); err != nil {
		t.Fatal(err)
	}
	got := &dnsv1a1.ServiceDNSRecord{}
	if err := c.Get(context.Background(), webKey, got); err != nil {
		t.Fatal(err)
	}
	if entriesOf(got) != "edge/south//203.0.113.7" || got.Status.Domain != "example.com" || len(got.Status.Conditions) != 1 {
		t.Errorf("status after the agent's write: %+v", got.Status)
	}
	if len(patches) != 1 || !strings.Contains(patches[0], `"resourceVersion"`) ||
		strings.Contains(patches[0], "conditions") || strings.Contains(patches[0], "domain") {
		t.Errorf("patches %v, want one of status.dns guarded by the resourceVersion", patches)
	}
}

// A pull member's agent writes its entry of an IngressDNSRecord while its
// copy of the Ingress exists, and removes it when it goes; the control
// plane keeps it meanwhile.
func TestIngressRecordOfAPullMember(t *testing.T) {
	rec := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}}}
	c := newClient(t, rec, kubeFedCluster("c1", "east"), pullCluster("edge", "south"))
	members := newFakeMembers(t)
	members.add("c1", ingressesGVR, ingress("shop", "web", "198.51.100.1"))
	ready := fakeReadiness{"c1": true, "edge": true}
	cp := &IngressDNSRecordReconciler{Client: c, Namespace: fedNS, Members: members, Readiness: ready, Pulled: func(n string) bool { return n == "edge" }}
	agentMembers := newFakeMembers(t)
	agentMembers.add("edge", ingressesGVR, ingress("shop", "web", "203.0.113.7"))
	agent := &IngressDNSRecordReconciler{Client: c, Namespace: fedNS, Members: agentMembers, Readiness: ready, Agent: "edge"}
	run := func(r reconcile.Reconciler) string {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey}); err != nil {
			t.Fatal(err)
		}
		out := &dnsv1a1.IngressDNSRecord{}
		if err := c.Get(context.Background(), webKey, out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range out.Status.DNS {
			got = append(got, d.Cluster+"/"+lbIPs(d.LoadBalancer))
		}
		return strings.Join(got, " ")
	}
	if got := run(cp); got != "c1/198.51.100.1" {
		t.Fatalf("status.dns = %s", got)
	}
	if got := run(agent); got != "c1/198.51.100.1 edge/203.0.113.7" {
		t.Fatalf("status.dns after the agent = %s", got)
	}
	if got := run(cp); got != "c1/198.51.100.1 edge/203.0.113.7" {
		t.Fatalf("status.dns after the control plane again = %s", got)
	}
	agentMembers.remove("edge", ingressesGVR, "shop", "web")
	if got := run(agent); got != "c1/198.51.100.1" {
		t.Errorf("status.dns after edge's Ingress went = %s", got)
	}
}
