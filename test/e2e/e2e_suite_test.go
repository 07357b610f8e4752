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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// The API server loads policies asynchronously: wait until a dry run
	// of a KubeFedConfig comes back with the gates filled. (Its first
	// seconds without a schema of the federated types' group, when it would
	// refuse a create the sync finalizer policy matches, the
	// controller-manager waits out itself before it lists a type.)
	Eventually(func(g Gomega) {
		probe := &corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
			Spec: corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped}}
		g.Expect(fw.Host.Client.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Spec.FeatureGates).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
})
