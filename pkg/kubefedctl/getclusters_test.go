package kubefedctl

import (
	"strings"
	"testing"
)

// TestGetClustersGolden covers a ready cluster with its version, nodes,
// zones and region, an unreachable one and one not probed yet, in every
// output format.
func TestGetClustersGolden(t *testing.T) {
	fixClock(t)
	h := newStatusHost(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"getclusters", []string{"get", "clusters"}},
		{"getclusters_wide", []string{"get", "clusters", "-o", "wide"}},
		// Named clusters come in the order named.
		{"getclusters_named", []string{"get", "cluster", "member3", "member1"}},
		{"getclusters_json", []string{"get", "clusters", "member2", "-o", "json"}},
		{"getclusters_yaml", []string{"get", "kubefedclusters", "-o", "yaml"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, err := h.run(t, "", tc.args...)
			if err != nil {
				t.Fatalf("kubefedctl %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

func TestGetClustersMessagesAndErrors(t *testing.T) {
	h := newStatusHost(t)
	out, errOut, err := h.run(t, "", "get", "clusters", "--kubefed-namespace", "elsewhere")
	if err != nil || out != "" || errOut != "No member clusters joined in namespace elsewhere.\n" {
		t.Errorf("no clusters: out %q, stderr %q, err %v", out, errOut, err)
	}
	for args, want := range map[string]string{
		"get clusters member1 nope gone": `KubeFedCluster nope, gone not found in namespace "kube-federation-system" of host`,
		"get clusters -o name":           `invalid --output "name"`,
	} {
		if _, _, err := h.run(t, "", strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", args, err, want)
		}
	}
}
