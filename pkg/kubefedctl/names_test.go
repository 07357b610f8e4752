package kubefedctl

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"kind-host": "kind-host",
		"Prod":      "prod",
		"arn:aws:eks:eu-west-1:123456789012:cluster/prod": "arn-aws-eks-eu-west-1-123456789012-cluster-prod",
		"gke_acme_us-east1-b_main":                        "gke-acme-us-east1-b-main",
		"admin@kubernetes":                                "admin-kubernetes",
		"my.Cluster_1.example":                            "my.cluster-1.example",
		"-.-a-.":                                          "a",
		"..x..y":                                          "x.y",
		"::/":                                             "",
	} {
		got := sanitizeName(in)
		if got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
		if got != "" {
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("sanitizeName(%q) = %q is no DNS-1123 subdomain: %v", in, got, errs)
			}
		}
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"kind-host", "arn:aws:eks:x:1:cluster/y", "A..B", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := sanitizeName(s)
		if got == "" {
			return
		}
		if len(got) <= validation.DNS1123SubdomainMaxLength {
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("sanitizeName(%q) = %q: %v", s, got, errs)
			}
		}
	})
}

func TestLabelValue(t *testing.T) {
	short := "member1"
	if got := labelValue(short); got != short {
		t.Errorf("labelValue(%q) = %q", short, got)
	}
	long1 := strings.Repeat("a", 60) + ".example.com"
	long2 := strings.Repeat("a", 60) + ".example.org"
	v1, v2 := labelValue(long1), labelValue(long2)
	if v1 == v2 {
		t.Errorf("distinct long names share the label value %q", v1)
	}
	for _, v := range []string{v1, v2} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("labelValue gave invalid %q: %v", v, errs)
		}
	}
}

func TestNewRegistration(t *testing.T) {
	r, err := newRegistration("member1", "arn:aws:eks:eu-west-1:1:cluster/Host", "kube-federation-system")
	if err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{
		r.serviceAccountName():  "member1-arn-aws-eks-eu-west-1-1-cluster-host",
		r.tokenSecretName():     "member1-arn-aws-eks-eu-west-1-1-cluster-host-token",
		r.roleName():            "kubefed-controller-manager:member1-arn-aws-eks-eu-west-1-1-cluster-host",
		r.healthCheckRoleName(): "kubefed-controller-manager:kube-federation-system:healthcheck-member1-arn-aws-eks-eu-west-1-1-cluster-host",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	for _, tc := range []struct{ cluster, host, ns, want string }{
		{"Member1", "host", "kube-federation-system", "invalid cluster name"},
		{"member1", "::", "kube-federation-system", "pass --host-cluster-name"},
		{"member1", strings.Repeat("h", 250), "kube-federation-system", "longer than 253"},
		{"member1", "host", "Kube", "invalid --kubefed-namespace"},
	} {
		if _, err := newRegistration(tc.cluster, tc.host, tc.ns); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newRegistration(%q, %q, %q): got %v, want %q", tc.cluster, tc.host, tc.ns, err, tc.want)
		}
	}
}
