//go:build e2e

// Package e2e holds the end-to-end suites: they run the real binaries
// against a real host and member control planes started on this machine.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
})
