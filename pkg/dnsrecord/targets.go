package dnsrecord

import (
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Targets are the load-balancer addresses behind one DNS name, split by the
// record they need. Each list is sorted and free of duplicates.
type Targets struct {
	IPv4      []string
	IPv6      []string
	Hostnames []string
}

// Empty says whether there is nothing to point the name at.
func (t Targets) Empty() bool {
	return len(t.IPv4) == 0 && len(t.IPv6) == 0 && len(t.Hostnames) == 0
}

// add classifies the addresses of one load-balancer ingress point. An IP
// field that does not parse is ignored rather than published as a broken
// record.
func (t *Targets) add(ip, hostname string) {
	if ip != "" {
		if parsed := net.ParseIP(ip); parsed != nil {
			if parsed.To4() != nil {
				t.IPv4 = append(t.IPv4, parsed.String())
			} else {
				t.IPv6 = append(t.IPv6, parsed.String())
			}
		}
		// An ingress point with an IP is reached by it; its hostname,
		// when a provider sets both, is only informational.
		return
	}
	if h := normalizeName(hostname); h != "" {
		t.Hostnames = append(t.Hostnames, h)
	}
}

func (t *Targets) merge(o Targets) {
	t.IPv4 = append(t.IPv4, o.IPv4...)
	t.IPv6 = append(t.IPv6, o.IPv6...)
	t.Hostnames = append(t.Hostnames, o.Hostnames...)
}

func (t Targets) normalized() Targets {
	return Targets{IPv4: sortedUnique(t.IPv4), IPv6: sortedUnique(t.IPv6), Hostnames: sortedUnique(t.Hostnames)}
}

// LoadBalancerTargets returns the addresses of a Service's load-balancer status.
func LoadBalancerTargets(lb corev1.LoadBalancerStatus) Targets {
	var t Targets
	for _, in := range lb.Ingress {
		t.add(in.IP, in.Hostname)
	}
	return t.normalized()
}

// IngressLoadBalancer converts an Ingress's load-balancer status to the
// Service shape the IngressDNSRecord status holds.
func IngressLoadBalancer(lb networkingv1.IngressLoadBalancerStatus) corev1.LoadBalancerStatus {
	out := corev1.LoadBalancerStatus{}
	for _, in := range lb.Ingress {
		out.Ingress = append(out.Ingress, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname})
	}
	return SortedLoadBalancer(out)
}

// SortedLoadBalancer returns lb with its ingress points in a stable order,
// so that statuses built from it compare equal when nothing changed.
func SortedLoadBalancer(lb corev1.LoadBalancerStatus) corev1.LoadBalancerStatus {
	out := *lb.DeepCopy()
	slices.SortStableFunc(out.Ingress, func(a, b corev1.LoadBalancerIngress) int {
		if c := strings.Compare(a.IP, b.IP); c != 0 {
			return c
		}
		return strings.Compare(a.Hostname, b.Hostname)
	})
	if len(out.Ingress) == 0 {
		out.Ingress = nil
	}
	return out
}

// ServiceLoadBalancer is what a member's Service contributes to its
// ServiceDNSRecord: its load-balancer status, sorted, or nothing when no
// EndpointSlice of the Service has a ready endpoint and
// allowWithoutEndpoints is false, because traffic sent there would go
// nowhere. slices are the Service's EndpointSlices in that member.
func ServiceLoadBalancer(svc *corev1.Service, slices []*discoveryv1.EndpointSlice, allowWithoutEndpoints bool) corev1.LoadBalancerStatus {
	if svc == nil {
		return corev1.LoadBalancerStatus{}
	}
	if !allowWithoutEndpoints && !HasReadyEndpoint(slices) {
		return corev1.LoadBalancerStatus{}
	}
	return SortedLoadBalancer(svc.Status.LoadBalancer)
}

// HasReadyEndpoint says whether any endpoint of the slices is ready. A
// missing ready condition means ready, as the EndpointSlice API defines.
func HasReadyEndpoint(slices []*discoveryv1.EndpointSlice) bool {
	for _, s := range slices {
		if s == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true
			}
		}
	}
	return false
}

func sortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
