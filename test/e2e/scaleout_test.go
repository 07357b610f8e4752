//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/test/framework"
)

const scaleNS = "e2e-scale-out"

// requestCount is a cluster's count of verb requests on resource (not a
// subresource) that answered code.
func requestCount(ctx context.Context, c *framework.Cluster, verb, resource, code string) int {
	GinkgoHelper()
	return apiserverRequests(ctx, c, func(line string) bool {
		return strings.Contains(line, `resource="`+resource+`"`) && strings.Contains(line, `verb="`+verb+`"`) &&
			strings.Contains(line, `code="`+code+`"`) && strings.Contains(line, `subresource=""`)
	})
}

var _ = Describe("Scale-out", Ordered, func() {
	var (
		first, second *framework.ControllerManager
		ids           [2]string
		clusters      []*framework.Cluster
		names         []string
	)

	// fences maps each cluster to the replica holding its fence Lease.
	fences := func(ctx context.Context) map[string]string {
		f, err := sharding.FenceHolders(ctx, fw.Host.Client, kubefedNS)
		Expect(err).NotTo(HaveOccurred())
		return f
	}

	BeforeAll(func(ctx context.Context) {
		clusters = fw.Clusters()
		for _, c := range clusters {
			names = append(names, c.Name)
		}
		// Two replica names that split these clusters, so both write.
	pick:
		for i := 0; i < 26; i++ {
			for j := i + 1; j < 26; j++ {
				a, b := "replica-"+string(rune('a'+i)), "replica-"+string(rune('a'+j))
				owners := sharding.Assign(names, []string{a, b})
				seen := map[string]bool{}
				for _, o := range owners {
					seen[o] = true
				}
				if len(seen) == 2 {
					ids = [2]string{a, b}
					break pick
				}
			}
		}
		Expect(ids[0]).NotTo(BeEmpty())
		cmDir := startFederation(ctx, fastProbeConfig(), scaleNS, &first, "--scale-out", "--replica-id="+ids[0])
		var err error
		second, err = fw.StartControllerManager(ctx, filepath.Join(cmDir, "second"), "--zap-log-level=debug", "--scale-out", "--replica-id="+ids[1])
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return second.Stop() })

		want := sharding.Assign(names, ids[:])
		Eventually(fences).WithContext(ctx).WithTimeout(60*time.Second).Should(Equal(want), "every member fenced by its rendezvous owner")
		Expect(fw.Host.Client.Create(ctx, fedObject("Namespace", scaleNS, scaleNS, map[string]any{}, nil, nil))).To(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "Namespace", scaleNS, scaleNS)) }).WithTimeout(30 * time.Second).
			Should(Equal("True| " + strings.Join(names, " ")))
	})

	It("splits the members between two active replicas, and after one is killed mid-wave its members move within 30 s with no copy created twice", func(ctx context.Context) {
		out, _, err := fw.Kubefedctl(ctx, "get", "clusters", "-o", "wide", "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred())
		for c, id := range sharding.Assign(names, ids[:]) {
			Expect(out).To(MatchRegexp(`(?m)^`+c+`\s.*\s`+id+`\s`), "get clusters -o wide names the serving replica")
		}

		posts := func(c *framework.Cluster) int {
			return apiserverRequests(ctx, c, func(line string) bool {
				return strings.Contains(line, `resource="configmaps"`) && strings.Contains(line, `verb="POST"`) && strings.Contains(line, `subresource=""`)
			})
		}
		deletes := func(c *framework.Cluster) int {
			return apiserverRequests(ctx, c, func(line string) bool {
				return strings.Contains(line, `resource="configmaps"`) && strings.Contains(line, `verb="DELETE"`)
			})
		}
		created, refused, attempted, deleted := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
		for _, c := range clusters {
			created[c.Name] = requestCount(ctx, c, "POST", "configmaps", "201")
			refused[c.Name] = requestCount(ctx, c, "POST", "configmaps", "409")
			attempted[c.Name] = posts(c)
			deleted[c.Name] = deletes(c)
		}
		const n = 40
		mk := func(i int) {
			GinkgoHelper()
			Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", scaleNS, "wave-"+strconv.Itoa(i),
				map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, nil, nil))).To(Succeed())
		}
		for i := range n / 2 {
			mk(i)
		}
		// Kill the second replica while the first half is under way.
		var victims []string
		for c, id := range fences(ctx) {
			if id == ids[1] {
				victims = append(victims, c)
			}
		}
		Expect(victims).NotTo(BeEmpty())
		Expect(second.Kill()).To(Succeed())
		killed := time.Now()
		for i := n / 2; i < n; i++ {
			mk(i)
		}

		Eventually(func() []string {
			var left []string
			f := fences(ctx)
			for _, c := range victims {
				if f[c] != ids[0] {
					left = append(left, c)
				}
			}
			return left
		}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(BeEmpty(), "the killed replica's members move to the survivor")
		AddReportEntry("ownership moved after", time.Since(killed).String())

		all := "True| " + strings.Join(names, " ")
		for i := range n {
			Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", scaleNS, "wave-"+strconv.Itoa(i))) }).
				WithTimeout(60*time.Second).Should(Equal(all), "wave-%d", i)
		}
		for _, c := range clusters {
			served := requestCount(ctx, c, "POST", "configmaps", "201") - created[c.Name]
			AddReportEntry("creates in "+c.Name, fmt.Sprintf("%d requests, %d served (201), %d refused as existing (409)",
				posts(c)-attempted[c.Name], served, requestCount(ctx, c, "POST", "configmaps", "409")-refused[c.Name]))
			Expect(framework.WaveCopies(ctx, c, scaleNS, "wave-")).To(Equal(n), c.Name)
			// No copy created twice: no create refused as existing (a
			// replica trying a copy another had made), none deleted to be
			// made again, and at most one served create per copy. The
			// killed replica's creates in flight may fail without effect
			// (made again by the survivor) or be carried out after its
			// client is gone and counted as a timeout (504), so requests
			// and 201s need not add up to the copies exactly.
			Expect(requestCount(ctx, c, "POST", "configmaps", "409")-refused[c.Name]).To(BeZero(), "creates refused as existing in %s", c.Name)
			Expect(deletes(c)-deleted[c.Name]).To(BeZero(), "copies deleted in %s", c.Name)
			Expect(served).To(BeNumerically("<=", n), "creates served in %s", c.Name)
		}
	})

	It("deletes across replicas: the finalizer goes once every replica's members dropped their copies", func(ctx context.Context) {
		Expect(fences(ctx)).To(HaveLen(len(names)))
		restarted, err := fw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "again"), "--zap-log-level=debug", "--scale-out", "--replica-id="+ids[1])
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return restarted.Stop() })
		want := sharding.Assign(names, ids[:])
		// A joining replica is handed its members without waiting for
		// Leases to expire.
		Eventually(fences).WithContext(ctx).WithTimeout(20 * time.Second).Should(Equal(want))

		for i := range 10 {
			Expect(fw.Host.Client.Delete(ctx, fedGet(ctx, "ConfigMap", scaleNS, "wave-"+strconv.Itoa(i)))).To(Succeed())
		}
		for i := range 10 {
			name := "wave-" + strconv.Itoa(i)
			Eventually(func() *unstructured.Unstructured { return fedGet(ctx, "ConfigMap", scaleNS, name) }).
				WithTimeout(60*time.Second).Should(BeNil(), name)
			for _, c := range clusters {
				Expect(memberObject(ctx, c, "v1", "ConfigMap", scaleNS, name)).To(BeNil(), fmt.Sprintf("%s in %s", name, c.Name))
			}
		}
		for _, c := range clusters {
			Expect(framework.WaveCopies(ctx, c, scaleNS, "wave-")).To(Equal(30), c.Name)
		}
	})
})
