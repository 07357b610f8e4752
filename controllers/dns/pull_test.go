package dns

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

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
		kubeFedCluster("edge", "south", "s1"))
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

	// edge is not ready: the control plane writes its entry without
	// targets; its agent, which knows it is not ready, writes nothing.
	agentMembers.add("edge", servicesGVR, service("shop", "web", "203.0.113.7"))
	reconcileWith(agent)
	h.ready["edge"] = false
	h.reconcile()
	if got := entriesOf(h.record()); got != "c1/east/a/192.0.2.1 edge/south/s1/" {
		t.Errorf("status.dns with edge not ready = %s", got)
	}
	agent.Readiness = fakeReadiness{"edge": false}
	rv = h.record().ResourceVersion
	reconcileWith(agent)
	if h.record().ResourceVersion != rv {
		t.Error("the agent of a member that is not ready wrote its entry")
	}
}

// A pull member's agent writes its entry of an IngressDNSRecord while its
// copy of the Ingress exists, and removes it when it goes; the control
// plane keeps it meanwhile.
func TestIngressRecordOfAPullMember(t *testing.T) {
	rec := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}}}
	c := newClient(t, rec, kubeFedCluster("c1", "east"), kubeFedCluster("edge", "south"))
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
