//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubefed-io/kubefed/test/framework"
)

const dashNS = "e2e-dash"

// ScreenshotsEnv names a directory for the dashboard's screenshots; the
// ones in docs/images come from `DASHBOARD_SCREENSHOTS=$PWD/docs/images`.
const screenshotsEnv = "DASHBOARD_SCREENSHOTS"

// kubefedctl dashboard in Debian's Chromium (test/browser/dashboard.mjs,
// playwright-core) against this federation.
var _ = Describe("Dashboard", Ordered, func() {
	var cm *framework.ControllerManager

	BeforeAll(func(ctx context.Context) {
		awaitMemberNamespacesGone(dashNS)
		startFederation(ctx, fastProbeConfig(), dashNS, &cm)
		Expect(fw.Host.Client.Create(ctx, fedObject("Namespace", dashNS, dashNS, map[string]any{}, nil, nil))).To(Succeed())
		labels := map[string]any{"app": "broken"}
		// member2's apiserver refuses a negative replica count: the
		// member's own error is what the page must show.
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", dashNS, "broken", map[string]any{"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}}},
		}}, []string{"member1", "member2"}, []any{map[string]any{"clusterName": "member2", "clusterOverrides": []any{
			map[string]any{"path": "/spec/replicas", "value": int64(-1)}}}}))).To(Succeed())
		// spread is split 4/2 by a ReplicaSchedulingPreference: its page draws the split.
		spread := map[string]any{"app": "spread"}
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", dashNS, "spread", map[string]any{"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": spread},
			"template": map[string]any{"metadata": map[string]any{"labels": spread},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}}},
		}}, []string{"member1", "member2"}, nil))).To(Succeed())
		Expect(fw.Host.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.kubefed.io/v1alpha1", "kind": "ReplicaSchedulingPreference",
			"metadata": map[string]any{"name": "spread", "namespace": dashNS},
			"spec": map[string]any{"targetKind": "FederatedDeployment", "totalReplicas": int64(6), "clusters": map[string]any{
				"member1": map[string]any{"weight": int64(2)}, "member2": map[string]any{"weight": int64(1)}}},
		}})).To(Succeed())
		DeferCleanup(func(ctx context.Context) error {
			rsp := &unstructured.Unstructured{}
			rsp.SetAPIVersion("scheduling.kubefed.io/v1alpha1")
			rsp.SetKind("ReplicaSchedulingPreference")
			rsp.SetNamespace(dashNS)
			rsp.SetName("spread")
			return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, rsp))
		})
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", dashNS, "fine", map[string]any{"data": map[string]any{"k": "v"}}, nil, nil))).To(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "Deployment", dashNS, "broken")) }).
			WithTimeout(60 * time.Second).Should(ContainSubstring("member2=CreationFailed"))
	})

	It("shows a failed placement in red, the member's error one click away, and a kubectl change live", func(ctx context.Context) {
		dash := exec.CommandContext(ctx, fw.Bin("kubefedctl"), "--kubeconfig", fw.Kubeconfig, "--host-cluster-context", fw.Host.Name,
			"dashboard", "--address", "127.0.0.1:0")
		stdout, err := dash.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		dash.Stderr = GinkgoWriter
		Expect(dash.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = dash.Process.Signal(os.Interrupt)
			_ = dash.Wait()
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{32}`).FindString(line)
		Expect(url).NotTo(BeEmpty(), "kubefedctl dashboard said %q", line)

		shots := os.Getenv(screenshotsEnv)
		if shots == "" {
			shots = GinkgoT().TempDir()
		}
		browser := exec.CommandContext(ctx, "node", filepath.Join(fw.RepoRoot, "test", "browser", "dashboard.mjs"), url)
		browser.Env = append(os.Environ(),
			"NAMESPACE="+dashNS, "FAILED_CLUSTER=member2", "SCREENSHOTS="+shots,
			"KUBECTL="+strings.Join([]string{fw.Bin("kubectl"), "--kubeconfig", fw.Kubeconfig, "--context", fw.Host.Name}, " "))
		out, err := browser.CombinedOutput()
		GinkgoWriter.Printf("%s", out)
		Expect(err).NotTo(HaveOccurred(), "the browser test:\n%s", out)
		Expect(string(out)).To(ContainSubstring("dashboard browser test passed"))
		for _, page := range []string{"objects", "object", "split", "clusters", "types"} {
			Expect(filepath.Join(shots, "dashboard-"+page+".png")).To(BeAnExistingFile())
		}
	})
})
