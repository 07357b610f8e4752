package dnsrecord

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
)

func TestLoadBalancerTargets(t *testing.T) {
	got := LoadBalancerTargets(corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
		{IP: "192.0.2.2"},
		{IP: "192.0.2.1", Hostname: "ignored.example.net"},
		{IP: "2001:db8::1"},
		{Hostname: "LB.example.net."},
		{IP: "192.0.2.2"},
		{IP: "garbage"},
		{},
	}})
	want := Targets{IPv4: []string{"192.0.2.1", "192.0.2.2"}, IPv6: []string{"2001:db8::1"}, Hostnames: []string{"lb.example.net"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadBalancerTargets = %+v, want %+v", got, want)
	}
	if !(Targets{}).Empty() || want.Empty() {
		t.Error("Empty is wrong")
	}
}

func TestServiceLoadBalancer(t *testing.T) {
	svc := &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: lb("192.0.2.9", "192.0.2.1")}}
	sorted := lb("192.0.2.1", "192.0.2.9")
	slice := func(ready ...*bool) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{}
		for _, r := range ready {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: r}})
		}
		return s
	}
	tests := []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		allow  bool
		want   corev1.LoadBalancerStatus
	}{
		{name: "no Service contributes nothing", svc: nil, allow: true, want: corev1.LoadBalancerStatus{}},
		{name: "no EndpointSlice: nothing", svc: svc, want: corev1.LoadBalancerStatus{}},
		{name: "no EndpointSlice but allowed: the load balancer", svc: svc, allow: true, want: sorted},
		{name: "only unready endpoints: nothing", svc: svc, slices: []*discoveryv1.EndpointSlice{slice(ptr.To(false)), slice()}, want: corev1.LoadBalancerStatus{}},
		{name: "a ready endpoint in any slice: the load balancer", svc: svc, slices: []*discoveryv1.EndpointSlice{slice(ptr.To(false)), slice(ptr.To(true))}, want: sorted},
		{name: "an endpoint without a ready condition is ready", svc: svc, slices: []*discoveryv1.EndpointSlice{slice(nil)}, want: sorted},
		{name: "no load balancer yet: nothing", svc: &corev1.Service{}, slices: []*discoveryv1.EndpointSlice{slice(nil)}, want: corev1.LoadBalancerStatus{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServiceLoadBalancer(tc.svc, tc.slices, tc.allow); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ServiceLoadBalancer = %+v, want %+v", got, tc.want)
			}
		})
	}
	if svc.Status.LoadBalancer.Ingress[0].IP != "192.0.2.9" {
		t.Error("ServiceLoadBalancer sorted the Service's own status")
	}
}

func TestIngressLoadBalancer(t *testing.T) {
	got := IngressLoadBalancer(networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
		{Hostname: "b.example.net"}, {IP: "192.0.2.1"},
	}})
	want := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: "b.example.net"}, {IP: "192.0.2.1"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IngressLoadBalancer = %+v, want %+v", got, want)
	}
}
