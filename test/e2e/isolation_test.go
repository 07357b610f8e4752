//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

const isoNS = "e2e-isolation"

// isolationWorkers is the controller-manager's worker count in these specs:
// few, so that an engine whose workers wait for a slow member would show it
// with a small wave.
const isolationWorkers = 4

var _ = Describe("Member isolation", Ordered, func() {
	var (
		cm               *framework.ControllerManager
		member1, member2 *framework.Cluster
	)

	BeforeAll(func(ctx context.Context) {
		member1, member2 = fw.Members[0], fw.Members[1]
		cfg := fastProbeConfig()
		// Probes that outlast the delaying proxy, so the slow member stays
		// Ready, and a hung member found NotReady only after a while.
		cfg.Spec.ClusterHealthCheck.Timeout = &metav1.Duration{Duration: 6 * time.Second}
		cfg.Spec.SyncController = &corev1beta1.SyncControllerConfig{MaxConcurrentReconciles: ptr.To[int64](isolationWorkers)}
		startFederation(ctx, cfg, isoNS, &cm)
		Expect(fw.Host.Client.Create(ctx, fedObject("Namespace", isoNS, isoNS, map[string]any{}, nil, nil))).To(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "Namespace", isoNS, isoNS)) }).WithTimeout(30 * time.Second).
			Should(Equal(fmt.Sprintf("True| %s %s %s", fw.Host.Name, member1.Name, member2.Name)))
	})

	copies := func(ctx context.Context, c *framework.Cluster, prefix string) int {
		GinkgoHelper()
		n, err := framework.WaveCopies(ctx, c, isoNS, prefix)
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	wave := func(ctx context.Context, prefix string, n int) {
		GinkgoHelper()
		for i := range n {
			Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", isoNS, prefix+strconv.Itoa(i),
				map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, []string{member1.Name, member2.Name}, nil))).To(Succeed())
		}
	}
	allPropagated := func(ctx context.Context, prefix string, n int) {
		GinkgoHelper()
		for i := range n {
			Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", isoNS, prefix+strconv.Itoa(i))) }).
				WithTimeout(90*time.Second).Should(Equal(fmt.Sprintf("True| %s %s", member1.Name, member2.Name)), prefix+strconv.Itoa(i))
		}
	}

	It("propagates to the other members while one member's apiserver hangs (SIGSTOP), and the hung one converges after SIGCONT", func(ctx context.Context) {
		// More objects than workers: an engine that waits for the hung
		// member's writes (30 s each) would leave most of them waiting.
		const n = 5 * isolationWorkers
		Expect(member2.Local.PauseAPIServer()).To(Succeed())
		resumed := false
		DeferCleanup(func() {
			if !resumed {
				_ = member2.Local.ResumeAPIServer()
			}
		})
		stopped := time.Now()
		wave(ctx, "hung-", n)
		Eventually(func() int { return copies(ctx, member1, "hung-") }).WithTimeout(20*time.Second).WithPolling(200*time.Millisecond).
			Should(Equal(n), "every copy in the healthy member while the other hangs, well within one 30 s write timeout")
		AddReportEntry("all copies in the healthy member while one hangs", time.Since(stopped).String())
		// The object's status tells of the hung member rather than waiting for it.
		Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", isoNS, "hung-0")) }).WithTimeout(20 * time.Second).
			Should(MatchRegexp(`^False/CheckClusters\| %s %s=(Propagating|CreationTimedOut|ClusterNotReady)$`, member1.Name, member2.Name))

		Expect(member2.Local.ResumeAPIServer()).To(Succeed())
		resumed = true
		waitReady(ctx, member2.Name, 90*time.Second)
		allPropagated(ctx, "hung-", n)
		Expect(copies(ctx, member2, "hung-")).To(Equal(n), "nothing missing in the member that hung")
		Expect(copies(ctx, member1, "hung-")).To(Equal(n))
	})

	It("propagates to the other members at full speed while one member answers every request a second late", func(ctx context.Context) {
		const n = 12 * isolationWorkers
		u, err := url.Parse(member2.Config.Host)
		Expect(err).NotTo(HaveOccurred())
		proxy, err := framework.StartDelayProxy(u.Host, time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)

		var original string
		setEndpoint := func(ctx context.Context, endpoint string) {
			GinkgoHelper()
			Eventually(func() error {
				kfc := &corev1beta1.KubeFedCluster{}
				if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, kfc); err != nil {
					return err
				}
				if original == "" {
					original = kfc.Spec.APIEndpoint
				}
				kfc.Spec.APIEndpoint = endpoint
				return fw.Host.Client.Update(ctx, kfc)
			}).Should(Succeed())
		}
		setEndpoint(ctx, "https://"+proxy.Addr())
		DeferCleanup(func(ctx context.Context) {
			setEndpoint(ctx, original)
			waitReady(ctx, member2.Name, 60*time.Second)
		})
		// The member is reached through the proxy, slow but Ready.
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", isoNS, "through-proxy",
			map[string]any{"data": map[string]any{"i": "x"}}, []string{member2.Name}, nil))).To(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", isoNS, "through-proxy")) }).WithTimeout(60 * time.Second).
			Should(Equal("True| " + member2.Name))
		// The member's clients and caches move to the proxy when the
		// KubeFedCluster's change is seen, which may come after the copy
		// above was written (its federated object carries its finalizer
		// from the admission policy, so it is dispatched at once): the
		// proxy carries the member's traffic before the wave starts.
		Eventually(proxy.Chunks).WithTimeout(30 * time.Second).Should(BeNumerically(">", 0))
		Expect(conditionState(ctx, member2.Name, corev1beta1.ClusterReady)).To(Equal("True/ClusterReady"))

		start := time.Now()
		wave(ctx, "slow-", n)
		var inSlow int
		Eventually(func() int {
			done := copies(ctx, member1, "slow-")
			inSlow = copies(ctx, member2, "slow-")
			return done
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(n))
		AddReportEntry("all copies in the healthy member while one is slow", fmt.Sprintf("%s; the slow member had %d of %d", time.Since(start), inSlow, n))
		// The slow member writes isolationWorkers objects a second. An
		// engine that waited for it would have written all but the last
		// few there by the time the healthy member had them all.
		Expect(inSlow).To(BeNumerically("<", n/2), "the healthy member was held back by the slow one")

		allPropagated(ctx, "slow-", n)
		Expect(copies(ctx, member2, "slow-")).To(Equal(n))
	})
})
