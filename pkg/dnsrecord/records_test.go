package dnsrecord

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

// render writes endpoints one per line as "name TYPE ttl target,target", so
// that a failing case shows the whole record set.
func render(eps []dnsv1a1.Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		out = append(out, fmt.Sprintf("%s %s %d %s", ep.DNSName, ep.RecordType, ep.RecordTTL, strings.Join(ep.Targets, ",")))
	}
	return out
}

func lb(addrs ...string) corev1.LoadBalancerStatus {
	var s corev1.LoadBalancerStatus
	for _, a := range addrs {
		if h, ok := strings.CutPrefix(a, "host:"); ok {
			s.Ingress = append(s.Ingress, corev1.LoadBalancerIngress{Hostname: h})
		} else {
			s.Ingress = append(s.Ingress, corev1.LoadBalancerIngress{IP: a})
		}
	}
	return s
}

func member(name, region string, zones []string, addrs ...string) dnsv1a1.ClusterDNS {
	return dnsv1a1.ClusterDNS{Cluster: name, Region: region, Zones: zones, LoadBalancer: lb(addrs...)}
}

func serviceRecord(spec dnsv1a1.ServiceDNSRecordSpec, domain string, dns ...dnsv1a1.ClusterDNS) *dnsv1a1.ServiceDNSRecord {
	if spec.DomainRef == "" {
		spec.DomainRef = "fed"
	}
	return &dnsv1a1.ServiceDNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       spec,
		Status:     dnsv1a1.ServiceDNSRecordStatus{Domain: domain, DNS: dns},
	}
}

const (
	global = "web.shop.fed.svc.example.com"
	east   = "web.shop.fed.svc.east.example.com"
	west   = "web.shop.fed.svc.west.example.com"
	eastA  = "web.shop.fed.svc.a.east.example.com"
	eastB  = "web.shop.fed.svc.b.east.example.com"
	westC  = "web.shop.fed.svc.c.west.example.com"
)

func TestServiceEndpoints(t *testing.T) {
	tests := []struct {
		name string
		rec  *dnsv1a1.ServiceDNSRecord
		want []string
	}{{
		name: "every level of two members in different regions has A records",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", []string{"a"}, "192.0.2.1"),
			member("c2", "west", []string{"c"}, "198.51.100.2")),
		want: []string{
			global + " A 180 192.0.2.1,198.51.100.2",
			east + " A 180 192.0.2.1",
			west + " A 180 198.51.100.2",
			eastA + " A 180 192.0.2.1",
			westC + " A 180 198.51.100.2",
		},
	}, {
		name: "a zone without targets is a CNAME to its region, a region without targets a CNAME to the global name",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", []string{"a"}, "192.0.2.1"),
			member("c2", "east", []string{"b"}),
			member("c3", "west", []string{"c"})),
		want: []string{
			global + " A 180 192.0.2.1",
			east + " A 180 192.0.2.1",
			west + " CNAME 180 " + global,
			eastA + " A 180 192.0.2.1",
			eastB + " CNAME 180 " + east,
			westC + " CNAME 180 " + west,
		},
	}, {
		name: "members of one zone share its name, and IPs are deduplicated and sorted",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c2", "east", []string{"a"}, "192.0.2.9", "192.0.2.1"),
			member("c1", "east", []string{"a"}, "192.0.2.1", "192.0.2.3")),
		want: []string{
			global + " A 180 192.0.2.1,192.0.2.3,192.0.2.9",
			east + " A 180 192.0.2.1,192.0.2.3,192.0.2.9",
			eastA + " A 180 192.0.2.1,192.0.2.3,192.0.2.9",
		},
	}, {
		name: "a member in several zones contributes to each",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", []string{"b", "a"}, "192.0.2.1")),
		want: []string{
			global + " A 180 192.0.2.1",
			east + " A 180 192.0.2.1",
			eastA + " A 180 192.0.2.1",
			eastB + " A 180 192.0.2.1",
		},
	}, {
		name: "no targets anywhere gives no records at all",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", []string{"a"}), member("c2", "west", nil)),
		want: nil,
	}, {
		name: "no members gives no records",
		rec:  serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com"),
		want: nil,
	}, {
		name: "no domain in the status gives no records",
		rec:  serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "", member("c1", "east", []string{"a"}, "192.0.2.1")),
		want: nil,
	}, {
		name: "recordTTL replaces the default",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{RecordTTL: 30}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: []string{global + " A 30 192.0.2.1"},
	}, {
		name: "load-balancer hostnames without IPs give a CNAME to the first hostname",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", []string{"a"}, "host:lb-2.elb.example.net"),
			member("c2", "west", []string{"c"}, "host:LB-1.elb.example.net.")),
		want: []string{
			global + " CNAME 180 lb-1.elb.example.net",
			east + " CNAME 180 lb-2.elb.example.net",
			west + " CNAME 180 lb-1.elb.example.net",
			eastA + " CNAME 180 lb-2.elb.example.net",
			westC + " CNAME 180 lb-1.elb.example.net",
		},
	}, {
		name: "a level with IPs publishes them and leaves hostnames out, as a CNAME cannot sit beside an A record",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "east", nil, "192.0.2.1"),
			member("c2", "west", nil, "host:lb.elb.example.net")),
		want: []string{
			global + " A 180 192.0.2.1",
			east + " A 180 192.0.2.1",
			west + " CNAME 180 lb.elb.example.net",
		},
	}, {
		name: "IPv6 addresses are AAAA records beside the A records; unparsable IPs are dropped",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "", nil, "2001:DB8::1", "192.0.2.1", "not-an-ip")),
		want: []string{
			global + " A 180 192.0.2.1",
			global + " AAAA 180 2001:db8::1",
		},
	}, {
		name: "dnsPrefix adds a CNAME under the domain to the global name",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: "www"}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: []string{
			global + " A 180 192.0.2.1",
			"www.example.com CNAME 180 " + global,
		},
	}, {
		name: "dnsPrefix adds nothing while there are no targets",
		rec:  serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: "www"}, "example.com", member("c1", "", nil)),
		want: nil,
	}, {
		name: "externalName replaces the Service's name in every name",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{ExternalName: "shopfront"}, "example.com",
			member("c1", "east", []string{"a"}, "192.0.2.1")),
		want: []string{
			"shopfront.shop.fed.svc.example.com A 180 192.0.2.1",
			"shopfront.shop.fed.svc.east.example.com A 180 192.0.2.1",
			"shopfront.shop.fed.svc.a.east.example.com A 180 192.0.2.1",
		},
	}, {
		name: "the domain's trailing dot and case do not reach the names",
		rec:  serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "Example.COM.", member("c1", "", nil, "192.0.2.1")),
		want: []string{global + " A 180 192.0.2.1"},
	}, {
		name: "a member without a region has no zone or region names; invalid labels are skipped",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
			member("c1", "", []string{"a"}, "192.0.2.1"),
			member("c2", "East", []string{"zone_b", "A"}, "192.0.2.2"),
			member("c3", "no.dots", []string{"c"}, "192.0.2.3")),
		want: []string{
			global + " A 180 192.0.2.1,192.0.2.2,192.0.2.3",
			east + " A 180 192.0.2.2",
			eastA + " A 180 192.0.2.2",
		},
	}, {
		name: "names DNS does not allow are left out",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: "bad..prefix"}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: []string{global + " A 180 192.0.2.1"},
	}, {
		name: "an externalName DNS does not allow leaves no valid name",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{ExternalName: "shop_front"}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: nil,
	}, {
		name: "an invalid externalName leaves no prefix CNAME to a name never published",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{ExternalName: "shop_front", DNSPrefix: "www"}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: nil,
	}, {
		name: "a label longer than 63 characters is left out",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: strings.Repeat("a", 64)}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: []string{global + " A 180 192.0.2.1"},
	}, {
		name: "the federation is the Domain's name from domainRef",
		rec: serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "galaxy"}, "example.com",
			member("c1", "", nil, "192.0.2.1")),
		want: []string{"web.shop.galaxy.svc.example.com A 180 192.0.2.1"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(ServiceEndpoints(tc.rec))
			if !slices.Equal(got, tc.want) {
				t.Errorf("ServiceEndpoints:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
			}
		})
	}
}

func TestServiceEndpointsIsDeterministic(t *testing.T) {
	a := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
		member("c1", "east", []string{"a", "b"}, "192.0.2.2", "192.0.2.1"),
		member("c2", "west", []string{"c"}, "198.51.100.2"))
	b := a.DeepCopy()
	slices.Reverse(b.Status.DNS)
	slices.Reverse(b.Status.DNS[1].Zones)
	if ga, gb := render(ServiceEndpoints(a)), render(ServiceEndpoints(b)); !slices.Equal(ga, gb) {
		t.Errorf("member order changed the records:\n%v\n%v", ga, gb)
	}
}

func TestServiceNames(t *testing.T) {
	n := NewServiceNames(serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DomainRef: "fed"}, "example.com."))
	for got, want := range map[string]string{
		n.Global():                 global,
		n.Region("east"):           east,
		n.Zone("a", "east"):        eastA,
		ServiceEndpointName("web"): "service-web",
		IngressEndpointName("web"): "ingress-web",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestIngressEndpoints(t *testing.T) {
	ingress := func(ttl dnsv1a1.TTL, hosts []string, dns ...dnsv1a1.ClusterIngressDNS) *dnsv1a1.IngressDNSRecord {
		return &dnsv1a1.IngressDNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec:       dnsv1a1.IngressDNSRecordSpec{Hosts: hosts, RecordTTL: ttl},
			Status:     dnsv1a1.IngressDNSRecordStatus{DNS: dns},
		}
	}
	in := func(cluster string, addrs ...string) dnsv1a1.ClusterIngressDNS {
		return dnsv1a1.ClusterIngressDNS{Cluster: cluster, LoadBalancer: lb(addrs...)}
	}
	tests := []struct {
		name string
		rec  *dnsv1a1.IngressDNSRecord
		want []string
	}{{
		name: "every host answers every member's IPs",
		rec:  ingress(0, []string{"shop.example.com", "www.example.com"}, in("c1", "192.0.2.1"), in("c2", "198.51.100.2", "192.0.2.1")),
		want: []string{
			"shop.example.com A 180 192.0.2.1,198.51.100.2",
			"www.example.com A 180 192.0.2.1,198.51.100.2",
		},
	}, {
		name: "hosts are deduplicated and normalized, the TTL is the record's",
		rec:  ingress(60, []string{"WWW.example.com.", "www.example.com"}, in("c1", "192.0.2.1")),
		want: []string{"www.example.com A 60 192.0.2.1"},
	}, {
		name: "hostnames only give a CNAME",
		rec:  ingress(0, []string{"www.example.com"}, in("c1", "host:b.lb.example.net"), in("c2", "host:a.lb.example.net")),
		want: []string{"www.example.com CNAME 180 a.lb.example.net"},
	}, {
		name: "a wildcard host is kept, an invalid one dropped",
		rec:  ingress(0, []string{"*.shop.example.com", "bad host.example.com"}, in("c1", "192.0.2.1")),
		want: []string{"*.shop.example.com A 180 192.0.2.1"},
	}, {
		name: "no targets give no records",
		rec:  ingress(0, []string{"www.example.com"}, in("c1")),
		want: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(IngressEndpoints(tc.rec))
			if !slices.Equal(got, tc.want) {
				t.Errorf("IngressEndpoints:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
			}
		})
	}
}

func TestTTL(t *testing.T) {
	for in, want := range map[dnsv1a1.TTL]dnsv1a1.TTL{0: 180, -5: 180, 1: 1, 300: 300} {
		if got := TTL(in); got != want {
			t.Errorf("TTL(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestInvalidNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		spec dnsv1a1.ServiceDNSRecordSpec
		want []string
	}{
		{name: "valid", spec: dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: "www"}},
		{name: "externalName", spec: dnsv1a1.ServiceDNSRecordSpec{ExternalName: "shop_front"}, want: []string{"shop_front.shop.fed.svc.example.com"}},
		{name: "dnsPrefix with a long label", spec: dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: long + ".x"}, want: []string{long + ".x.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InvalidServiceNames(serviceRecord(tc.spec, "example.com")); !slices.Equal(got, tc.want) {
				t.Errorf("InvalidServiceNames = %v, want %v", got, tc.want)
			}
		})
	}
	if got := InvalidServiceNames(serviceRecord(dnsv1a1.ServiceDNSRecordSpec{ExternalName: "shop_front"}, "")); got != nil {
		t.Errorf("without a domain: %v, want none", got)
	}
	ing := &dnsv1a1.IngressDNSRecord{Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"*.shop.example.com", "Bad_Host.example.com.", "bad_host.example.com", long + ".example.com"}}}
	if got, want := InvalidIngressHosts(ing), []string{long + ".example.com", "bad_host.example.com"}; !slices.Equal(got, want) {
		t.Errorf("InvalidIngressHosts = %v, want %v", got, want)
	}
}

// Load-balancer hostnames of several members (as AWS gives) are resolved
// into the name's A records, as KubeFed did, so that every member gets
// traffic; a name with one hostname only stays a CNAME to it.
func TestServiceEndpointsResolving(t *testing.T) {
	var asked []string
	resolve := func(host string) ([]string, error) {
		asked = append(asked, host)
		switch host {
		case "a.elb.example.net":
			return []string{"192.0.2.10", "2001:db8::a"}, nil
		case "b.elb.example.net":
			return []string{"192.0.2.20"}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com",
		member("c1", "east", nil, "host:a.elb.example.net"),
		member("c2", "west", nil, "host:b.elb.example.net"),
		member("c3", "west", nil, "host:gone.elb.example.net"))
	eps, resolved := ServiceEndpointsResolving(rec, resolve)
	want := []string{
		global + " A 180 192.0.2.10,192.0.2.20",
		global + " AAAA 180 2001:db8::a",
		east + " CNAME 180 a.elb.example.net",
		west + " A 180 192.0.2.20",
	}
	if got := render(eps); !slices.Equal(got, want) || !resolved {
		t.Errorf("ServiceEndpointsResolving (resolved %v):\n got %s\nwant %s", resolved, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"a.elb.example.net", "b.elb.example.net", "gone.elb.example.net"}) {
		t.Errorf("looked up %v, each hostname once", asked)
	}

	// Beside an IP, a hostname's addresses join it.
	ing := &dnsv1a1.IngressDNSRecord{Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"shop.example.com"}},
		Status: dnsv1a1.IngressDNSRecordStatus{DNS: []dnsv1a1.ClusterIngressDNS{
			{Cluster: "c1", LoadBalancer: lb("198.51.100.1")}, {Cluster: "c2", LoadBalancer: lb("host:b.elb.example.net")}}}}
	eps, resolved = IngressEndpointsResolving(ing, resolve)
	if got := render(eps); !slices.Equal(got, []string{"shop.example.com A 180 192.0.2.20,198.51.100.1"}) || !resolved {
		t.Errorf("IngressEndpointsResolving = %v (resolved %v)", got, resolved)
	}

	// One hostname alone: a CNAME, nothing looked up.
	asked = nil
	one := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{}, "example.com", member("c1", "", nil, "host:a.elb.example.net"))
	eps, resolved = ServiceEndpointsResolving(one, resolve)
	if got := render(eps); !slices.Equal(got, []string{global + " CNAME 180 a.elb.example.net"}) || resolved || len(asked) != 0 {
		t.Errorf("one hostname: %v (resolved %v, looked up %v)", got, resolved, asked)
	}

	// An Ingress host's one hostname is looked up, as KubeFed did: the
	// host may be a zone's apex, where no CNAME may be.
	apex := &dnsv1a1.IngressDNSRecord{Spec: dnsv1a1.IngressDNSRecordSpec{Hosts: []string{"example.com"}},
		Status: dnsv1a1.IngressDNSRecordStatus{DNS: []dnsv1a1.ClusterIngressDNS{{Cluster: "c2", LoadBalancer: lb("host:b.elb.example.net")}}}}
	eps, resolved = IngressEndpointsResolving(apex, resolve)
	if got := render(eps); !slices.Equal(got, []string{"example.com A 180 192.0.2.20"}) || !resolved {
		t.Errorf("an Ingress host's one hostname: %v (resolved %v)", got, resolved)
	}
	// One that does not resolve stays a CNAME, looked up again later.
	apex.Status.DNS[0].LoadBalancer = lb("host:gone.elb.example.net")
	eps, resolved = IngressEndpointsResolving(apex, resolve)
	if got := render(eps); !slices.Equal(got, []string{"example.com CNAME 180 gone.elb.example.net"}) || !resolved {
		t.Errorf("an Ingress host's one hostname that does not resolve: %v (resolved %v)", got, resolved)
	}
}

// The records of a ServiceDNSRecord with an externalName carry the
// record's name in the label serviceName, as in KubeFed; the dnsPrefix
// CNAME does not, nor do the records of one without.
func TestServiceEndpointsOfAnExternalNameAreLabelled(t *testing.T) {
	rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{ExternalName: "api", DNSPrefix: "www"}, "example.com",
		member("c1", "east", []string{"east-1"}, "192.0.2.1"))
	eps := ServiceEndpoints(rec)
	if len(eps) != 4 {
		t.Fatalf("endpoints %v", render(eps))
	}
	for _, ep := range eps {
		want := map[string]string{ServiceNameLabel: "web"}
		if ep.DNSName == "www.example.com" {
			want = nil
		}
		if !maps.Equal(ep.Labels, want) {
			t.Errorf("%s: labels %v, want %v", ep.DNSName, ep.Labels, want)
		}
	}
	rec.Spec.ExternalName = ""
	for _, ep := range ServiceEndpoints(rec) {
		if ep.Labels != nil {
			t.Errorf("%s: labels %v without an externalName", ep.DNSName, ep.Labels)
		}
	}
}
