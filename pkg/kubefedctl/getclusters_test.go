package kubefedctl

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/sharding"
)

// TestGetClustersGolden covers a ready cluster with its version, nodes,
// zones and region, an unreachable one and one not probed yet, in every
// output format.
func TestGetClustersGolden(t *testing.T) {
	fixClock(t)
	h := newStatusHost(t)
	// Replicas scaling out: member1 and member2 are served, member3's
	// fence is being handed over.
	for cluster, holder := range map[string]string{"member1": "kubefed-controller-manager-5f7c-a", "member2": "kubefed-controller-manager-5f7c-b", "member3": ""} {
		if err := h.fed.Create(context.Background(), fenceLease(cluster, holder)); err != nil {
			t.Fatal(err)
		}
	}
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

func fenceLease(cluster, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: sharding.FenceLeaseName(cluster),
			Labels:      map[string]string{sharding.LeaseRoleLabel: sharding.RoleFence},
			Annotations: map[string]string{sharding.ClusterAnnotation: cluster}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
}

// TestGetClustersWideNamesTheLeaderWithoutScaleOut: one active replica
// serves every cluster.
func TestGetClustersWideNamesTheLeaderWithoutScaleOut(t *testing.T) {
	h := newStatusHost(t)
	out, _, err := h.run(t, "", "get", "clusters", "member1", "-o", "wide")
	if err != nil || !strings.Contains(out, "REPLICA") || !strings.Contains(out, "6443   <none>    ClusterReady") {
		t.Fatalf("without a leader Lease: %v\n%s", err, out)
	}
	holder := "kubefed-controller-manager-5f7c-leader"
	if err := h.fed.Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: corev1beta1.ControllerManagerLeaseName},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}); err != nil {
		t.Fatal(err)
	}
	out, _, err = h.run(t, "", "get", "clusters", "-o", "wide")
	// member3 is in Pull mode: its agent serves it.
	if err != nil || strings.Count(out, holder) != 2 || !strings.Contains(out, "<agent>") {
		t.Fatalf("with a leader: %v\n%s", err, out)
	}
}

// A Pull-mode member is shown as such, served by its agent.
func TestGetClustersWideShowsPullMode(t *testing.T) {
	h := newStatusHost(t)
	kfc := &corev1beta1.KubeFedCluster{}
	if err := h.fed.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: "member3"}, kfc); err != nil {
		t.Fatal(err)
	}
	kfc.Spec.Mode, kfc.Spec.SecretRef.Name = corev1beta1.ClusterModePull, ""
	if err := h.fed.Update(context.Background(), kfc); err != nil {
		t.Fatal(err)
	}
	out, _, err := h.run(t, "", "get", "clusters", "member3", "-o", "wide")
	if err != nil || !strings.Contains(out, "6443   <agent>") || !strings.HasSuffix(strings.TrimSpace(out), "Pull") {
		t.Fatalf("%v\n%s", err, out)
	}
}
