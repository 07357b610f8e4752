//go:build e2e

// Package e2e holds the end-to-end suites: they run the real binaries
// against a real host and member control planes started on this machine.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

var fw *framework.Framework

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubefed end-to-end")
}

var _ = BeforeSuite(func(ctx context.Context) {
	dir := os.Getenv("KUBEFED_E2E_WORKDIR")
	if dir == "" {
		dir = GinkgoT().TempDir()
	}
	var err error
	fw, err = framework.Start(ctx, dir, 2, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() error { return fw.Stop() })

	crds, err := framework.ReadCRDs(fw.CRDDirs()...)
	Expect(err).NotTo(HaveOccurred())
	Expect(framework.InstallCRDs(ctx, fw.Host.Client, crds)).To(Succeed())
	// The admission policies the chart installs: KubeFedConfig defaulting,
	// and the sync controller's finalizer at creation (the engine's own
	// finalizer write stays covered by controllers/sync's tests, which
	// install no policy).
	out, err := fw.Kubectl(ctx, "host", "apply", "--server-side", "-f", filepath.Join(fw.RepoRoot, "config", "admission"))
	Expect(err).NotTo(HaveOccurred(), out)
	// The API server loads policies asynchronously, and for up to 5 s after
	// an API group is first served it answers a write that a mutating
	// policy matches with 503 (it has no schema of the group yet), whatever
	// the policy's failurePolicy: wait until a dry run of a KubeFedConfig
	// comes back with the gates filled; the federated types' group is
	// awaited on its own (awaitFinalizerPolicyTypes).
	Eventually(func(g Gomega) {
		probe := &corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped}}
		g.Expect(fw.Host.Client.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Spec.FeatureGates).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	awaitFinalizerPolicyTypes(ctx, crds)
})

// awaitFinalizerPolicyTypes waits until the API server can apply the sync
// finalizer policy to a create of every federated type installed. Its
// schema of the federated group is refreshed every few seconds, and until
// it has a kind, a create of that kind which the policy matches is refused
// with 503 ("Resource kind … not found"), whatever the failurePolicy. The
// policy matches only types its param, the propagating-types ConfigMap,
// lists — which no controller-manager has written yet — so the wait writes
// one listing every type, dry-runs a create of each until none is refused,
// and removes it again: the first spec's first create must not be refused.
func awaitFinalizerPolicyTypes(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) {
	GinkgoHelper()
	Expect(framework.EnsureNamespace(ctx, fw.Host.Client, kubefedNS)).To(Succeed())
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: kubefedNS, Name: corev1beta1.PropagatingTypesConfigMap},
		Data: map[string]string{}}
	var probes []*unstructured.Unstructured
	for _, crd := range crds {
		if crd.Spec.Group != "types.kubefed.io" || len(crd.Spec.Versions) == 0 {
			continue
		}
		params.Data[crd.Spec.Names.Plural+"."+crd.Spec.Group] = crd.Spec.Names.Kind
		probe := &unstructured.Unstructured{}
		probe.SetAPIVersion(crd.Spec.Group + "/" + crd.Spec.Versions[0].Name)
		probe.SetKind(crd.Spec.Names.Kind)
		probe.SetName("policy-probe")
		if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			probe.SetNamespace(metav1.NamespaceDefault)
		}
		probes = append(probes, probe)
	}
	Expect(fw.Host.Client.Create(ctx, params)).To(Succeed())
	DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, params)) })
	for _, probe := range probes {
		Eventually(func(g Gomega) {
			obj := probe.DeepCopy()
			g.Expect(fw.Host.Client.Create(ctx, obj, client.DryRunAll)).To(Succeed())
			g.Expect(obj.GetFinalizers()).To(ContainElement(corev1beta1.SyncControllerFinalizer), "the policy has not loaded its param yet")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), probe.GetKind())
	}
	Expect(fw.Host.Client.Delete(ctx, params)).To(Succeed())
}
