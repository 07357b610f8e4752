//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubefed-io/kubefed/test/framework"
)

const gitopsNS = "e2e-gitops"

// gitopsManifests are what a team keeps in Git for one app, under a name
// prefix: a FederatedDeployment with a per-cluster override, one scaled by
// a ReplicaSchedulingPreference that also carries an override of its own,
// and a FederatedService. The namespace's FederatedNamespace is applied
// once for both ways of applying.
func gitopsManifests(prefix string, withOverrideOnScaled bool) string {
	scaledOverrides := ""
	if withOverrideOnScaled {
		scaledOverrides = `
  overrides:
  - clusterName: member2
    clusterOverrides:
    - path: /spec/template/spec/containers/0/image
      value: nginx:1.27-alpine`
	}
	return fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata:
  name: %[1]s-web
  namespace: %[2]s
spec:
  template:
    metadata:
      labels: {app: %[1]s-web}
    spec:
      replicas: 2
      selector:
        matchLabels: {app: %[1]s-web}
      template:
        metadata:
          labels: {app: %[1]s-web}
        spec:
          containers:
          - name: web
            image: nginx:1.27
  placement:
    clusters:
    - name: member1
    - name: member2
  overrides:
  - clusterName: member1
    clusterOverrides:
    - path: /spec/replicas
      value: 3
    - path: /metadata/labels/tier
      value: front
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata:
  name: %[1]s-scaled
  namespace: %[2]s
spec:
  template:
    metadata:
      labels: {app: %[1]s-scaled}
    spec:
      selector:
        matchLabels: {app: %[1]s-scaled}
      template:
        metadata:
          labels: {app: %[1]s-scaled}
        spec:
          containers:
          - name: web
            image: nginx:1.27
  placement:
    clusterSelector: {}%[3]s
---
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata:
  name: %[1]s-scaled
  namespace: %[2]s
spec:
  targetKind: FederatedDeployment
  totalReplicas: 6
  clusters:
    member1: {weight: 1}
    member2: {weight: 2}
---
apiVersion: types.kubefed.io/v1beta1
kind: FederatedService
metadata:
  name: %[1]s-web
  namespace: %[2]s
spec:
  template:
    spec:
      selector: {app: %[1]s-web}
      ports:
      - name: http
        port: 80
        targetPort: 8080
  placement:
    clusterSelector: {}
`, prefix, gitopsNS, scaledOverrides)
}

// What Argo CD, Flux and Fleet do with Federated* manifests, without the
// tools: apply the same files again and again, server-side (Argo CD's
// ServerSideApply, Flux) and client-side (kubectl apply, Argo CD's
// default), while the controller-manager adds finalizers, writes status and
// the RSP writes placement and replica overrides into its
// FederatedDeployment. Re-applying must change nothing, conflict with
// nothing and leave every generation as it was.
var _ = Describe("GitOps coexistence", Ordered, func() {
	var cm *framework.ControllerManager

	BeforeAll(func(ctx context.Context) {
		awaitMemberNamespacesGone(gitopsNS)
		startFederation(ctx, fastProbeConfig(), gitopsNS, &cm)
		fns := fedObject("Namespace", gitopsNS, gitopsNS, map[string]any{}, nil, nil)
		Expect(fw.Host.Client.Create(ctx, fns)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			for _, prefix := range []string{"ssa", "csa"} {
				rsp := &unstructured.Unstructured{}
				rsp.SetAPIVersion("scheduling.kubefed.io/v1alpha1")
				rsp.SetKind("ReplicaSchedulingPreference")
				rsp.SetNamespace(gitopsNS)
				rsp.SetName(prefix + "-scaled")
				_ = client.IgnoreNotFound(fw.Host.Client.Delete(ctx, rsp))
			}
		})
	})

	manifestFile := func(prefix string, withOverrideOnScaled bool) string {
		path := filepath.Join(GinkgoT().TempDir(), prefix+".yaml")
		Expect(os.WriteFile(path, []byte(gitopsManifests(prefix, withOverrideOnScaled)), 0o644)).To(Succeed())
		return path
	}
	objects := func(ctx context.Context, prefix string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, kn := range [][2]string{
			{"types.kubefed.io/v1beta1/FederatedDeployment", prefix + "-web"},
			{"types.kubefed.io/v1beta1/FederatedDeployment", prefix + "-scaled"},
			{"scheduling.kubefed.io/v1alpha1/ReplicaSchedulingPreference", prefix + "-scaled"},
			{"types.kubefed.io/v1beta1/FederatedService", prefix + "-web"},
			{"types.kubefed.io/v1beta1/FederatedNamespace", gitopsNS},
		} {
			i := strings.LastIndex(kn[0], "/")
			out = append(out, memberObject(ctx, fw.Host, kn[0][:i], kn[0][i+1:], gitopsNS, kn[1]))
		}
		return out
	}
	// versions are the generation of every object: its spec's version.
	// (Its resourceVersion moves with status, which the members' rollouts
	// keep changing.)
	versions := func(ctx context.Context, prefix string) map[string]int64 {
		out := map[string]int64{}
		for _, o := range objects(ctx, prefix) {
			Expect(o).NotTo(BeNil())
			out[o.GetKind()+"/"+o.GetName()] = o.GetGeneration()
		}
		return out
	}
	// settled waits until the federation converged on what was applied:
	// every object propagated, the RSP's 6 replicas split 2/4 and written.
	settled := func(ctx context.Context, prefix string) {
		GinkgoHelper()
		for _, kind := range []string{"Deployment/" + prefix + "-web", "Deployment/" + prefix + "-scaled", "Service/" + prefix + "-web"} {
			k, name, _ := strings.Cut(kind, "/")
			Eventually(func() string { return propagationState(fedGet(ctx, k, gitopsNS, name)) }).
				WithTimeout(90*time.Second).Should(HavePrefix("True|"), kind)
		}
		Eventually(func(g Gomega) {
			for c, want := range map[*framework.Cluster]int64{fw.Members[0]: 2, fw.Members[1]: 4} {
				d := memberObject(ctx, c, "apps/v1", "Deployment", gitopsNS, prefix+"-scaled")
				g.Expect(d).NotTo(BeNil(), c.Name)
				r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
				g.Expect(r).To(Equal(want), c.Name)
			}
		}).WithTimeout(90 * time.Second).Should(Succeed())
	}
	// drained waits for a positive signal that the controllers caught up
	// after the re-applies: a sentinel ConfigMap federated afterwards has
	// reached both members.
	drained := func(ctx context.Context, name string) {
		GinkgoHelper()
		sentinel := fedObject("ConfigMap", gitopsNS, name, map[string]any{"data": map[string]any{"at": "after"}}, nil, nil)
		Expect(fw.Host.Client.Create(ctx, sentinel)).To(Succeed())
		for _, m := range fw.Members {
			Eventually(func() any { return memberObject(ctx, m, "v1", "ConfigMap", gitopsNS, name) }).
				WithTimeout(60*time.Second).ShouldNot(BeNil(), m.Name)
		}
	}

	It("server-side apply: re-applying changes nothing and conflicts with nothing, the RSP's overrides beside Git's", func(ctx context.Context) {
		file := manifestFile("ssa", true)
		apply := func() string {
			GinkgoHelper()
			out, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--server-side", "--field-manager=argocd-controller", "-f", file)
			Expect(err).NotTo(HaveOccurred(), "kubectl apply --server-side:\n%s", out)
			return out
		}
		apply()
		settled(ctx, "ssa")
		// The RSP wrote its replicas overrides next to the one from Git.
		scaled := fedGet(ctx, "Deployment", gitopsNS, "ssa-scaled")
		overrides, _, _ := unstructured.NestedSlice(scaled.Object, "spec", "overrides")
		Expect(fmt.Sprint(overrides)).To(And(ContainSubstring("nginx:1.27-alpine"), ContainSubstring("/spec/replicas")))

		before := versions(ctx, "ssa")
		for range 3 {
			apply()
			// kubectl diff exits 0 only when the server would change nothing.
			out, err := fw.Kubectl(ctx, fw.Host.Name, "diff", "--server-side", "--field-manager=argocd-controller", "-f", file)
			Expect(err).NotTo(HaveOccurred(), "kubectl diff --server-side reports a change:\n%s", out)
		}
		drained(ctx, "ssa-sentinel")
		Expect(versions(ctx, "ssa")).To(Equal(before))
		// A Git change of its own override still lands, the RSP's stay.
		changed := strings.Replace(gitopsManifests("ssa", true), "nginx:1.27-alpine", "nginx:1.28-alpine", 1)
		Expect(os.WriteFile(file, []byte(changed), 0o644)).To(Succeed())
		apply()
		Eventually(func() string {
			d := memberObject(ctx, fw.Members[1], "apps/v1", "Deployment", gitopsNS, "ssa-scaled")
			if d == nil {
				return ""
			}
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			return fmt.Sprintf("%v %d", containers[0].(map[string]any)["image"], r)
		}).WithTimeout(60 * time.Second).Should(Equal("nginx:1.28-alpine 4"))
	})

	It("client-side apply: re-applying reports every object unchanged", func(ctx context.Context) {
		// Client-side apply replaces a list it sets as a whole: an
		// RSP-scheduled object keeps its overrides out of Git
		// (docs/gitops.md).
		file := manifestFile("csa", false)
		out, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "-f", file)
		Expect(err).NotTo(HaveOccurred(), "kubectl apply:\n%s", out)
		settled(ctx, "csa")
		before := versions(ctx, "csa")
		for range 3 {
			out, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "-f", file)
			Expect(err).NotTo(HaveOccurred(), "kubectl apply:\n%s", out)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(lines).To(HaveLen(4), out)
			for _, l := range lines {
				Expect(l).To(HaveSuffix(" unchanged"), out)
			}
		}
		drained(ctx, "csa-sentinel")
		Expect(versions(ctx, "csa")).To(Equal(before))
	})
})

// awaitMemberNamespacesGone makes the last of a container's cleanups wait
// until the members' namespace controllers have deleted namespace and what
// was propagated into it, before later specs count requests.
func awaitMemberNamespacesGone(namespace string) {
	DeferCleanup(func(ctx context.Context) {
		for _, m := range fw.Members {
			Eventually(gone(ctx, m.Client, &corev1.Namespace{}, client.ObjectKey{Name: namespace})).
				WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "namespace %s in %s", namespace, m.Name)
		}
	})
}
