package dns

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

var webKey = types.NamespacedName{Namespace: "shop", Name: "web"}

func serviceRecord(spec dnsv1a1.ServiceDNSRecordSpec) *dnsv1a1.ServiceDNSRecord {
	return &dnsv1a1.ServiceDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: webKey.Namespace, Name: webKey.Name, Generation: 1}, Spec: spec}
}

// serviceHarness is a ServiceDNSRecordReconciler over a fake host and members.
type serviceHarness struct {
	t       *testing.T
	client  client.Client
	members *fakeMembers
	ready   fakeReadiness
	r       *ServiceDNSRecordReconciler
}

func newServiceHarness(t *testing.T, objs ...client.Object) *serviceHarness {
	h := &serviceHarness{t: t, client: newClient(t, objs...), members: newFakeMembers(t), ready: fakeReadiness{}}
	h.r = &ServiceDNSRecordReconciler{Client: h.client, Namespace: fedNS, Members: h.members, Readiness: h.ready}
	return h
}

func (h *serviceHarness) reconcile() reconcile.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func (h *serviceHarness) record() *dnsv1a1.ServiceDNSRecord {
	h.t.Helper()
	rec := &dnsv1a1.ServiceDNSRecord{}
	if err := h.client.Get(context.Background(), webKey, rec); err != nil {
		h.t.Fatal(err)
	}
	return rec
}

func readyCondition(t *testing.T, conds []metav1.Condition) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(conds, ConditionReady)
	if c == nil {
		t.Fatalf("no %s condition in %+v", ConditionReady, conds)
	}
	return *c
}

func lbIPs(lb corev1.LoadBalancerStatus) string {
	var ips []string
	for _, in := range lb.Ingress {
		ips = append(ips, in.IP)
	}
	return strings.Join(ips, ",")
}

func TestServiceRecordStatus(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true}),
		domain("fed", "example.com"),
		kubeFedCluster("c2", "west", "c"),
		kubeFedCluster("c1", "east", "a", "b"),
		kubeFedCluster("c3", "north"))
	h.ready["c1"], h.ready["c2"], h.ready["c3"] = true, true, true
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.9", "192.0.2.1"))
	h.members.add("c2", servicesGVR, service("shop", "web", "198.51.100.2"))
	h.members.synced(servicesGVR, "c3")
	h.reconcile()

	rec := h.record()
	if rec.Status.Domain != "example.com" {
		t.Errorf("status.domain = %q", rec.Status.Domain)
	}
	// Sorted by cluster, the load balancer sorted, c3 present without targets
	// so that its zone and region names point up.
	want := "c1/east/a+b/192.0.2.1,192.0.2.9 c2/west/c/198.51.100.2 c3/north//"
	if got := entriesOf(rec); got != want {
		t.Errorf("status.dns = %s, want %s", got, want)
	}
	c := readyCondition(t, rec.Status.Conditions)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonTargetsFound || c.ObservedGeneration != 1 {
		t.Errorf("condition = %+v", c)
	}
	if !strings.Contains(c.Message, "2 of 3") {
		t.Errorf("condition message %q does not count the members", c.Message)
	}

	// Nothing changed: no write.
	rv := rec.ResourceVersion
	h.reconcile()
	if h.record().ResourceVersion != rv {
		t.Error("a reconcile without changes wrote the status")
	}

	// A member that stops being ready loses its targets but keeps its
	// entry; the condition counts the ready members only.
	h.ready["c2"] = false
	h.reconcile()
	rec = h.record()
	if len(rec.Status.DNS) != 3 || rec.Status.DNS[1].Cluster != "c2" || len(rec.Status.DNS[1].LoadBalancer.Ingress) != 0 {
		t.Errorf("not ready member: status.dns = %+v", rec.Status.DNS)
	}
	if c := readyCondition(t, rec.Status.Conditions); !strings.Contains(c.Message, "1 of 2") {
		t.Errorf("condition message %q", c.Message)
	}
}

// A name DNS does not allow is left out of the DNSEndpoint; the record
// says so instead of Ready=True.
func TestRecordsWithInvalidNamesSaySo(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true, ExternalName: "shop_front"}),
		domain("fed", "example.com"),
		kubeFedCluster("c1", "east", "a"))
	h.ready["c1"] = true
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	h.reconcile()
	c := readyCondition(t, h.record().Status.Conditions)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidDNSName || !strings.Contains(c.Message, "shop_front.shop.fed.svc.example.com") ||
		!strings.Contains(c.Message, "1 of 1") {
		t.Errorf("service record condition = %+v", c)
	}

	rec := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com", "bad_host.example.com"}}}
	cl := newClient(t, rec, kubeFedCluster("c1", "east"))
	members := newFakeMembers(t)
	members.add("c1", ingressesGVR, ingress("shop", "web", "198.51.100.2"))
	r := &IngressDNSRecordReconciler{Client: cl, Namespace: fedNS, Members: members, Readiness: fakeReadiness{"c1": true}}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey}); err != nil {
		t.Fatal(err)
	}
	got := &dnsv1a1.IngressDNSRecord{}
	if err := cl.Get(context.Background(), webKey, got); err != nil {
		t.Fatal(err)
	}
	if c := readyCondition(t, got.Status.Conditions); c.Reason != ReasonInvalidDNSName || !strings.Contains(c.Message, "bad_host.example.com is not a valid DNS name") {
		t.Errorf("ingress record condition = %+v", c)
	}
}

func TestServiceRecordLeavesOutMembersNeverSeenReady(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true}),
		domain("fed", "example.com"), kubeFedCluster("c1", "east"), kubeFedCluster("down", "west"))
	h.ready["c1"] = true
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	h.reconcile()
	if dns := h.record().Status.DNS; len(dns) != 1 || dns[0].Cluster != "c1" {
		t.Errorf("status.dns = %+v, want only c1", dns)
	}
}

func TestServiceRecordMissingDomain(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "nope", AllowServiceWithoutEndpoints: true}),
		kubeFedCluster("c1", "east"))
	h.ready["c1"] = true
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	h.reconcile()
	rec := h.record()
	c := readyCondition(t, rec.Status.Conditions)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonDomainNotFound || !strings.Contains(c.Message, `"nope"`) {
		t.Errorf("condition = %+v", c)
	}
	if rec.Status.Domain != "" {
		t.Errorf("status.domain = %q, want empty", rec.Status.Domain)
	}
	// The targets are still collected, so the records appear as soon as
	// the Domain does.
	if len(rec.Status.DNS) != 1 || lbIPs(rec.Status.DNS[0].LoadBalancer) != "192.0.2.1" {
		t.Errorf("status.dns = %+v", rec.Status.DNS)
	}

	if err := h.client.Create(context.Background(), domain("nope", "example.org")); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	rec = h.record()
	if c := readyCondition(t, rec.Status.Conditions); c.Reason != ReasonTargetsFound || rec.Status.Domain != "example.org" {
		t.Errorf("after the Domain appeared: condition %+v, domain %q", c, rec.Status.Domain)
	}
}

func TestServiceRecordMissingService(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"}),
		domain("fed", "example.com"), kubeFedCluster("c1", "east", "a"), kubeFedCluster("c2", "west"))
	h.ready["c1"], h.ready["c2"] = true, true
	h.members.synced(servicesGVR, "c1", "c2")
	h.members.synced(endpointSlicesGVR, "c1", "c2")
	h.reconcile()
	rec := h.record()
	c := readyCondition(t, rec.Status.Conditions)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonServiceNotFound || !strings.Contains(c.Message, "shop/web") {
		t.Errorf("condition = %+v", c)
	}
	if len(rec.Status.DNS) != 2 {
		t.Errorf("status.dns = %+v, want both ready members without targets", rec.Status.DNS)
	}
}

func TestServiceRecordEndpoints(t *testing.T) {
	h := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"}),
		domain("fed", "example.com"), kubeFedCluster("c1", "east"), kubeFedCluster("c2", "west"))
	h.ready["c1"], h.ready["c2"] = true, true
	h.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	h.members.add("c2", servicesGVR, service("shop", "web", "198.51.100.2"))
	h.members.add("c1", endpointSlicesGVR, endpointSlice("shop", "web", true))
	h.members.add("c2", endpointSlicesGVR, endpointSlice("shop", "web", false))
	h.reconcile()
	rec := h.record()
	if got := lbIPs(rec.Status.DNS[0].LoadBalancer) + "|" + lbIPs(rec.Status.DNS[1].LoadBalancer); got != "192.0.2.1|" {
		t.Errorf("targets = %s, want only c1's, whose Service has a ready endpoint", got)
	}

	// Without any ready endpoint the Service exists but offers nothing.
	h2 := newServiceHarness(t,
		serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"}),
		domain("fed", "example.com"), kubeFedCluster("c1", "east"))
	h2.ready["c1"] = true
	h2.members.add("c1", servicesGVR, service("shop", "web", "192.0.2.1"))
	h2.members.synced(endpointSlicesGVR, "c1")
	h2.reconcile()
	c := readyCondition(t, h2.record().Status.Conditions)
	if c.Reason != ReasonNoTargets || !strings.Contains(c.Message, "allowServiceWithoutEndpoints") {
		t.Errorf("condition = %+v", c)
	}
}

func TestServiceRecordWaitsForUnsyncedCaches(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", AllowServiceWithoutEndpoints: true})
	rec.Status.DNS = []dnsv1a1.ClusterDNS{{Cluster: "c1", Region: "east", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}}}
	h := newServiceHarness(t, rec, domain("fed", "example.com"), kubeFedCluster("c1", "east"), kubeFedCluster("c2", "west"))
	h.ready["c1"], h.ready["c2"] = true, true
	// c1's cache has no informer yet, c2's is still listing.
	h.members.cache("c2", servicesGVR).synced = false
	res := h.reconcile()
	if res.RequeueAfter != DefaultSyncRetry {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DefaultSyncRetry)
	}
	got := h.record()
	if len(got.Status.DNS) != 1 || lbIPs(got.Status.DNS[0].LoadBalancer) != "192.0.2.1" {
		t.Errorf("status.dns = %+v, want c1's last known targets kept", got.Status.DNS)
	}
	// The known targets still make the record ready; nothing is claimed missing.
	if c := readyCondition(t, got.Status.Conditions); c.Reason != ReasonTargetsFound {
		t.Errorf("condition = %+v", c)
	}

	h2 := newServiceHarness(t, serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"}), domain("fed", "example.com"), kubeFedCluster("c1", "east"))
	h2.r.SyncRetry = time.Second
	h2.ready["c1"] = true
	if res := h2.reconcile(); res.RequeueAfter != time.Second {
		t.Errorf("RequeueAfter = %s", res.RequeueAfter)
	}
	if c := meta.FindStatusCondition(h2.record().Status.Conditions, ConditionReady); c != nil {
		t.Errorf("condition %+v set while no cache could tell", c)
	}
}

func TestServiceRecordGone(t *testing.T) {
	h := newServiceHarness(t)
	h.reconcile()
}

func TestIngressRecordStatus(t *testing.T) {
	rec := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}}}
	c := newClient(t, rec, kubeFedCluster("c1", "east"), kubeFedCluster("c2", "west"), kubeFedCluster("c3", "x"))
	members := newFakeMembers(t)
	ready := fakeReadiness{"c1": true, "c2": true}
	r := &IngressDNSRecordReconciler{Client: c, Namespace: fedNS, Members: members, Readiness: ready}
	members.synced(ingressesGVR, "c1", "c2")
	members.add("c3", ingressesGVR, ingress("shop", "web", "203.0.113.3"))

	get := func() *dnsv1a1.IngressDNSRecord {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: webKey}); err != nil {
			t.Fatal(err)
		}
		out := &dnsv1a1.IngressDNSRecord{}
		if err := c.Get(context.Background(), webKey, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := get()
	if cond := readyCondition(t, got.Status.Conditions); cond.Reason != ReasonIngressNotFound {
		t.Errorf("condition = %+v", cond)
	}
	// As in KubeFed, every ready member has an entry, empty without the
	// Ingress.
	if len(got.Status.DNS) != 2 || got.Status.DNS[0].Cluster != "c1" || got.Status.DNS[1].Cluster != "c2" ||
		len(got.Status.DNS[0].LoadBalancer.Ingress)+len(got.Status.DNS[1].LoadBalancer.Ingress) != 0 {
		t.Errorf("status.dns = %+v, want empty entries of c1 and c2", got.Status.DNS)
	}

	members.add("c1", ingressesGVR, ingress("shop", "web"))
	if cond := readyCondition(t, get().Status.Conditions); cond.Reason != ReasonNoTargets || !strings.Contains(cond.Message, "exists in 1 of 2") {
		t.Errorf("condition = %+v", cond)
	}

	members.add("c2", ingressesGVR, ingress("shop", "web", "198.51.100.2"))
	got = get()
	if cond := readyCondition(t, got.Status.Conditions); cond.Reason != ReasonTargetsFound || cond.Status != metav1.ConditionTrue {
		t.Errorf("condition = %+v", cond)
	}
	// c3 is not ready: its Ingress does not count.
	if len(got.Status.DNS) != 2 || got.Status.DNS[1].Cluster != "c2" || lbIPs(got.Status.DNS[1].LoadBalancer) != "198.51.100.2" {
		t.Errorf("status.dns = %+v", got.Status.DNS)
	}
}

func TestDNSEndpointLifecycle(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", RecordTTL: 60})
	rec.UID = "rec-uid"
	rec.Status = dnsv1a1.ServiceDNSRecordStatus{Domain: "example.com", DNS: []dnsv1a1.ClusterDNS{
		{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}}
	c := newClient(t, rec)
	r := &DNSEndpointReconciler{Client: c, Scheme: c.Scheme()}
	ctx := context.Background()
	epKey := types.NamespacedName{Namespace: "shop", Name: "service-web"}
	endpoint := func() *dnsv1a1.DNSEndpoint {
		t.Helper()
		if _, err := r.ReconcileService(ctx, reconcile.Request{NamespacedName: webKey}); err != nil {
			t.Fatal(err)
		}
		ep := &dnsv1a1.DNSEndpoint{}
		if err := c.Get(ctx, epKey, ep); err != nil {
			t.Fatal(err)
		}
		return ep
	}

	ep := endpoint()
	if len(ep.Spec.Endpoints) != 1 || ep.Spec.Endpoints[0].DNSName != "web.shop.fed.svc.example.com" || ep.Spec.Endpoints[0].RecordTTL != 60 {
		t.Errorf("endpoints = %+v", ep.Spec.Endpoints)
	}
	owner := metav1.GetControllerOf(ep)
	if owner == nil || owner.Kind != "ServiceDNSRecord" || owner.Name != "web" || owner.UID != "rec-uid" {
		t.Errorf("controller reference = %+v", owner)
	}

	rv := ep.ResourceVersion
	if endpoint().ResourceVersion != rv {
		t.Error("an unchanged record rewrote its DNSEndpoint")
	}

	// A new target is written.
	cur := &dnsv1a1.ServiceDNSRecord{}
	if err := c.Get(ctx, webKey, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.DNS = append(cur.Status.DNS, dnsv1a1.ClusterDNS{Cluster: "c2",
		LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.2"}}}})
	if err := c.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := endpoint().Spec.Endpoints[0].Targets; strings.Join(got, ",") != "192.0.2.1,192.0.2.2" {
		t.Errorf("targets = %v", got)
	}

	// Losing the Domain empties the DNSEndpoint, so ExternalDNS withdraws the records.
	cur = &dnsv1a1.ServiceDNSRecord{}
	if err := c.Get(ctx, webKey, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Domain = ""
	if err := c.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := endpoint().Spec.Endpoints; len(got) != 0 {
		t.Errorf("endpoints without a domain = %+v", got)
	}

	// A deleted record is no error; its DNSEndpoint goes by garbage collection.
	if err := c.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReconcileService(ctx, reconcile.Request{NamespacedName: webKey}); err != nil {
		t.Errorf("reconcile of a deleted record: %v", err)
	}
}

// With foreground deletion the garbage collector deletes the record's
// DNSEndpoint while the record waits, with a deletionTimestamp and the
// foregroundDeletion finalizer; the DNSEndpoint must not come back.
func TestNoDNSEndpointForARecordBeingDeleted(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"})
	rec.UID = "rec-uid"
	rec.Finalizers = []string{metav1.FinalizerDeleteDependents}
	rec.Status = dnsv1a1.ServiceDNSRecordStatus{Domain: "example.com", DNS: []dnsv1a1.ClusterDNS{
		{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}}
	ing := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "ing-uid",
		Finalizers: []string{metav1.FinalizerDeleteDependents}},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}},
		Status: dnsv1a1.IngressDNSRecordStatus{DNS: []dnsv1a1.ClusterIngressDNS{
			{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}}}}}
	c := newClient(t, rec, ing)
	ctx := context.Background()
	for _, o := range []client.Object{rec, ing} {
		if err := c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
	}
	r := &DNSEndpointReconciler{Client: c, Scheme: c.Scheme()}
	req := reconcile.Request{NamespacedName: webKey}
	if _, err := r.ReconcileService(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReconcileIngress(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"service-web", "ingress-web"} {
		if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: name}, &dnsv1a1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
			t.Errorf("DNSEndpoint %s written for a record being deleted: %v", name, err)
		}
	}
}

// Members whose load balancers have hostnames only (AWS) share the global
// name through their resolved addresses, looked up again every TTL.
func TestDNSEndpointResolvesTheHostnamesOfSeveralMembers(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", RecordTTL: 60})
	rec.UID = "rec-uid"
	rec.Status = dnsv1a1.ServiceDNSRecordStatus{Domain: "example.com", DNS: []dnsv1a1.ClusterDNS{
		{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "a.elb.example.net"}}}},
		{Cluster: "c2", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "b.elb.example.net"}}}},
	}}
	c := newClient(t, rec)
	addrs := map[string][]string{"a.elb.example.net": {"192.0.2.1"}, "b.elb.example.net": {"192.0.2.2"}}
	r := &DNSEndpointReconciler{Client: c, Scheme: c.Scheme(), Resolve: func(host string) ([]string, error) { return addrs[host], nil }}
	ctx := context.Background()
	res, err := r.ReconcileService(ctx, reconcile.Request{NamespacedName: webKey})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("RequeueAfter = %v, want the record's TTL of 60s", res.RequeueAfter)
	}
	ep := &dnsv1a1.DNSEndpoint{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "service-web"}, ep); err != nil {
		t.Fatal(err)
	}
	if len(ep.Spec.Endpoints) != 1 || ep.Spec.Endpoints[0].RecordType != "A" || strings.Join(ep.Spec.Endpoints[0].Targets, ",") != "192.0.2.1,192.0.2.2" {
		t.Errorf("endpoints = %+v, want one A record with both members' addresses", ep.Spec.Endpoints)
	}
}

// Lookups that fail after they succeeded keep the last addresses in the
// records; lookups that never succeeded are tried again every TTL.
func TestDNSEndpointWhenLookupsFail(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed", RecordTTL: 60})
	rec.UID = "rec-uid"
	rec.Status = dnsv1a1.ServiceDNSRecordStatus{Domain: "example.com", DNS: []dnsv1a1.ClusterDNS{
		{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "a.elb.example.net"}}}},
		{Cluster: "c2", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "b.elb.example.net"}}}},
	}}
	c := newClient(t, rec)
	failing := true
	r := &DNSEndpointReconciler{Client: c, Scheme: c.Scheme(), Resolve: func(host string) ([]string, error) {
		if failing {
			return nil, errors.New("i/o timeout")
		}
		return map[string][]string{"a.elb.example.net": {"192.0.2.1"}, "b.elb.example.net": {"192.0.2.2"}}[host], nil
	}}
	ctx := context.Background()
	global := func() string {
		t.Helper()
		ep := &dnsv1a1.DNSEndpoint{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "service-web"}, ep); err != nil {
			t.Fatal(err)
		}
		e := ep.Spec.Endpoints[0]
		return e.RecordType + " " + strings.Join(e.Targets, ",")
	}
	reconcileOnce := func() {
		t.Helper()
		res, err := r.ReconcileService(ctx, reconcile.Request{NamespacedName: webKey})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != time.Minute {
			t.Errorf("RequeueAfter = %v, want the record's TTL of 60s", res.RequeueAfter)
		}
	}

	// Nothing resolved yet: a CNAME to the first hostname, tried again.
	reconcileOnce()
	if got := global(); got != "CNAME a.elb.example.net" {
		t.Errorf("global name %s", got)
	}
	failing = false
	reconcileOnce()
	if got := global(); got != "A 192.0.2.1,192.0.2.2" {
		t.Errorf("global name %s once resolved", got)
	}
	// The resolver times out: the last addresses stand in.
	failing = true
	reconcileOnce()
	if got := global(); got != "A 192.0.2.1,192.0.2.2" {
		t.Errorf("global name %s while lookups fail, want the last addresses", got)
	}
}

func TestDNSEndpointOfIngressAndForeignOwner(t *testing.T) {
	rec := &dnsv1a1.IngressDNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "ing-uid"},
		Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}},
		Status: dnsv1a1.IngressDNSRecordStatus{DNS: []dnsv1a1.ClusterIngressDNS{
			{Cluster: "c1", LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}}}}}
	isController := true
	foreign := &dnsv1a1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "ingress-other",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "x", Controller: &isController}}}}
	other := rec.DeepCopy()
	other.Name, other.UID = "other", "other-uid"
	c := newClient(t, rec, other, foreign)
	r := &DNSEndpointReconciler{Client: c, Scheme: c.Scheme()}
	ctx := context.Background()
	if _, err := r.ReconcileIngress(ctx, reconcile.Request{NamespacedName: webKey}); err != nil {
		t.Fatal(err)
	}
	ep := &dnsv1a1.DNSEndpoint{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "ingress-web"}, ep); err != nil {
		t.Fatal(err)
	}
	if len(ep.Spec.Endpoints) != 1 || ep.Spec.Endpoints[0].DNSName != "shop.example.com" || ep.Spec.Endpoints[0].RecordType != "A" {
		t.Errorf("endpoints = %+v", ep.Spec.Endpoints)
	}
	// A DNSEndpoint another object controls is left alone, with an error
	// and a warning on the record.
	recorder := events.NewFakeRecorder(10)
	r.Recorder = recorder
	if _, err := r.ReconcileIngress(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "other"}}); err == nil {
		t.Error("overwrote a DNSEndpoint controlled by another object")
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning "+EventDNSEndpointNotWritten+" ") || !strings.Contains(e, "ingress-other") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event on the record whose DNSEndpoint another object controls")
	}
	got := &dnsv1a1.DNSEndpoint{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "ingress-other"}, got); err != nil || len(got.Spec.Endpoints) != 0 {
		t.Errorf("foreign DNSEndpoint changed: %+v, %v", got.Spec, err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "service-web"}, &dnsv1a1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
		t.Errorf("an Ingress record made a service- DNSEndpoint: %v", err)
	}
}
