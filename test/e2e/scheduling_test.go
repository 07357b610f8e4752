//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const schedNS = "e2e-sched"

// KubeFed's seed ReplicaSchedulingPreference examples, on members whose
// pods really run: a federation of its own, three members with two
// simulated nodes each (kube-scheduler and kwok), so that every replica the
// RSP places is scheduled and becomes Ready.
var _ = Describe("Scheduling on real pods", Ordered, func() {
	var sfw *framework.Framework

	// replicas returns a member's Deployment's spec and ready replicas.
	replicas := func(ctx context.Context, c *framework.Cluster, name string) string {
		d := memberObject(ctx, c, "apps/v1", "Deployment", schedNS, name)
		if d == nil {
			return "absent"
		}
		spec, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		ready, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
		return fmt.Sprintf("%d/%d", ready, spec)
	}
	rsp := func(name string, total int64, clusters map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.kubefed.io/v1alpha1",
			"kind":       "ReplicaSchedulingPreference",
			"metadata":   map[string]any{"name": name, "namespace": schedNS},
			"spec":       map[string]any{"targetKind": "FederatedDeployment", "totalReplicas": total, "clusters": clusters},
		}}
		return u
	}
	deployment := func(name string) *unstructured.Unstructured {
		labels := map[string]any{"app": name}
		return fedObject("Deployment", schedNS, name, map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27",
						"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}}},
				},
			},
		}, nil, nil)
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		sfw, err = framework.StartWithNodes(ctx, GinkgoT().TempDir(), 3, GinkgoWriter,
			localcluster.NodeOptions{Count: 2, CPU: "4", Memory: "8Gi", Pods: 110})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return sfw.Stop() })
		crds, err := framework.ReadCRDs(sfw.CRDDirs()...)
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.InstallCRDs(ctx, sfw.Host.Client, crds)).To(Succeed())
		Expect(framework.EnsureNamespace(ctx, sfw.Host.Client, kubefedNS)).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, fastProbeConfig())).To(Succeed())
		_, err = sfw.Kubectl(ctx, sfw.Host.Name, "apply", "--server-side", "-f", filepath.Join(sfw.RepoRoot, "config", "default-types"))
		Expect(err).NotTo(HaveOccurred())
		cm, err := sfw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "cm"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return cm.Stop() })
		for _, m := range sfw.Members {
			_, _, err := sfw.Kubefedctl(ctx, "join", m.Name, "--cluster-context", m.Name, "--host-cluster-context", sfw.Host.Name)
			Expect(err).NotTo(HaveOccurred())
		}
		for _, m := range sfw.Members {
			Eventually(func() bool {
				kfc := &corev1beta1.KubeFedCluster{}
				return sfw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: m.Name}, kfc) == nil && kfc.IsReady()
			}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(BeTrue(), m.Name)
		}
		Expect(framework.EnsureNamespace(ctx, sfw.Host.Client, schedNS)).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, fedObject("Namespace", schedNS, schedNS, map[string]any{}, nil, nil))).To(Succeed())
	})

	It("splits 15 replicas 3/6/6 with \"*\": {weight 2, maxReplicas 12} and one member {min 1, max 3, weight 1}, every pod Ready", func(ctx context.Context) {
		Expect(sfw.Host.Client.Create(ctx, deployment("seed"))).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, rsp("seed", 15, map[string]any{
			"*":       map[string]any{"weight": int64(2), "maxReplicas": int64(12)},
			"member1": map[string]any{"minReplicas": int64(1), "maxReplicas": int64(3), "weight": int64(1)},
		}))).To(Succeed())
		m1, m2, m3 := sfw.Members[0], sfw.Members[1], sfw.Members[2]
		Eventually(func() []string {
			return []string{replicas(ctx, m1, "seed"), replicas(ctx, m2, "seed"), replicas(ctx, m3, "seed")}
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Equal([]string{"3/3", "6/6", "6/6"}))
	})

	It("splits 10 replicas 3/7 over {min 3, max 6, weight 1} and {min 5, max 12, weight 2}, every pod Ready", func(ctx context.Context) {
		Expect(sfw.Host.Client.Create(ctx, deployment("pair"))).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, rsp("pair", 10, map[string]any{
			"member1": map[string]any{"minReplicas": int64(3), "maxReplicas": int64(6), "weight": int64(1)},
			"member2": map[string]any{"minReplicas": int64(5), "maxReplicas": int64(12), "weight": int64(2)},
		}))).To(Succeed())
		m1, m2, m3 := sfw.Members[0], sfw.Members[1], sfw.Members[2]
		// member3 has no preference: placed, as in KubeFed, with 0 replicas
		// (docs/scheduling.md).
		Eventually(func() []string {
			return []string{replicas(ctx, m1, "pair"), replicas(ctx, m2, "pair"), replicas(ctx, m3, "pair")}
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Equal([]string{"3/3", "7/7", "0/0"}))
	})
})
