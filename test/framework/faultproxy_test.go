package framework

import "testing"

func TestResourceAndName(t *testing.T) {
	for _, c := range []struct{ path, resource, name string }{
		{"/api/v1/namespaces/ns/configmaps/cm", "configmaps", "cm"},
		{"/api/v1/namespaces/ns/configmaps", "configmaps", ""},
		{"/apis/apps/v1/namespaces/ns/deployments/d/status", "deployments", "d"},
		{"/api/v1/namespaces/ns", "namespaces", "ns"},
		{"/api/v1/namespaces", "namespaces", ""},
		{"/apis/apps/v1/deployments", "deployments", ""},
		{"/healthz", "", ""},
	} {
		r, n := resourceAndName(c.path)
		if r != c.resource || n != c.name {
			t.Errorf("resourceAndName(%q) = %q, %q; want %q, %q", c.path, r, n, c.resource, c.name)
		}
	}
	if n := createdName([]byte(`{"kind":"ConfigMap","metadata":{"namespace":"ns","name":"cm"}}`)); n != "cm" {
		t.Errorf("createdName = %q, want cm", n)
	}
	if n := createdName([]byte{0x6b, 0x38, 0x73, 0x00}); n != "" {
		t.Errorf("createdName of protobuf = %q, want empty", n)
	}
}
