//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/test/framework"
)

const scaleNS = "e2e-scale-out"

// peerArg has a replica serve the others on a free loopback port.
const peerArg = "--peer-bind-address=127.0.0.1:0"

// requestCount is a cluster's count of verb requests on resource (not a
// subresource) that answered code.
func requestCount(ctx context.Context, c *framework.Cluster, verb, resource, code string) int {
	GinkgoHelper()
	return apiserverRequests(ctx, c, func(line string) bool {
		return strings.Contains(line, `resource="`+resource+`"`) && strings.Contains(line, `verb="`+verb+`"`) &&
			strings.Contains(line, `code="`+code+`"`) && strings.Contains(line, `subresource=""`)
	})
}

// expectEachWrittenOnce checks what a wave's n copies in cluster went
// through, as w recorded it up to now: each created once, none deleted
// (to be made again) or updated.
func expectEachWrittenOnce(ctx context.Context, w *framework.Writes, n int, cluster string) {
	GinkgoHelper()
	Expect(w.Settle(ctx)).To(Succeed())
	added, modified, deleted, err := w.Counts()
	Expect(err).NotTo(HaveOccurred())
	Expect(added).To(HaveLen(n), "copies created in %s", cluster)
	for name, times := range added {
		Expect(times).To(Equal(1), "%s created in %s", name, cluster)
	}
	Expect(deleted).To(BeEmpty(), "copies deleted in %s: %s", cluster, framework.Names(deleted))
	Expect(modified).To(BeEmpty(), "copies updated in %s: %s", cluster, framework.Names(modified))
}

var _ = Describe("Scale-out", Ordered, func() {
	var (
		first, second *framework.ControllerManager
		// restarted is the second replica started again after its kill.
		restarted *framework.ControllerManager
		ids       [2]string
		clusters  []*framework.Cluster
		names     []string
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
		// The replicas reach each other, as the chart has them: each object's
		// owner writes its status and events for both.
		cmDir := startFederation(ctx, fastProbeConfig(), scaleNS, &first, "--scale-out", "--replica-id="+ids[0], peerArg)
		var err error
		second, err = fw.StartControllerManager(ctx, filepath.Join(cmDir, "second"), "--zap-log-level=debug", "--scale-out", "--replica-id="+ids[1], peerArg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return second.Stop() })
		// The second replica started again outlives the spec that starts it.
		DeferCleanup(func() error { return restarted.Stop() })

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
		// updates counts every ConfigMap update of a cluster: a report.
		updates := func(c *framework.Cluster) int {
			return apiserverRequests(ctx, c, func(line string) bool {
				return strings.Contains(line, `resource="configmaps"`) && strings.Contains(line, `subresource=""`) &&
					(strings.Contains(line, `verb="PUT"`) || strings.Contains(line, `verb="PATCH"`) || strings.Contains(line, `verb="APPLY"`))
			})
		}
		created, refused, attempted, updated := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
		// What the wave's copies go through in each cluster, from now on:
		// the request counters count every ConfigMap of a cluster, the
		// host's control plane's own included.
		writes := map[string]*framework.Writes{}
		for _, c := range clusters {
			created[c.Name] = requestCount(ctx, c, "POST", "configmaps", "201")
			refused[c.Name] = requestCount(ctx, c, "POST", "configmaps", "409")
			attempted[c.Name] = posts(c)
			updated[c.Name] = updates(c)
			var err error
			writes[c.Name], err = framework.WatchWrites(ctx, c, scaleNS, "wave-")
			Expect(err).NotTo(HaveOccurred())
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
			// replica trying a copy another had made), and each copy
			// created once and never deleted to be made again. The killed
			// replica's creates in flight may fail without effect (made
			// again by the survivor) or be carried out after its client
			// is gone and counted as a timeout (504), so requests and 201s
			// need not add up to the copies exactly.
			Expect(requestCount(ctx, c, "POST", "configmaps", "409")-refused[c.Name]).To(BeZero(), "creates refused as existing in %s", c.Name)
			AddReportEntry("ConfigMap updates in "+c.Name, fmt.Sprintf("%d requests, of every ConfigMap of the cluster", updates(c)-updated[c.Name]))
			// Nor written twice: the survivor finds the copies the killed
			// replica made up to date, in its cache or read back.
			expectEachWrittenOnce(ctx, writes[c.Name], n, c.Name)
		}
	})

	It("deletes across replicas: the finalizer goes once every replica's members dropped their copies", func(ctx context.Context) {
		Expect(fences(ctx)).To(HaveLen(len(names)))
		var err error
		restarted, err = fw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "again"), "--zap-log-level=debug", "--scale-out", "--replica-id="+ids[1], peerArg)
		Expect(err).NotTo(HaveOccurred())
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

	It("keeps serving its members when another takes the leader Lease, and leads again once it is free", func(ctx context.Context) {
		want := sharding.Assign(names, ids[:])
		Expect(fences(ctx)).To(Equal(want))
		replicas := map[string]*framework.ControllerManager{ids[0]: first, ids[1]: restarted}
		leaseKey := client.ObjectKey{Namespace: kubefedNS, Name: controllermanager.LeaderElectionID}
		holder := func() string {
			lease := &coordinationv1.Lease{}
			if err := fw.Host.Client.Get(ctx, leaseKey, lease); err != nil {
				return ""
			}
			return ptr.Deref(lease.Spec.HolderIdentity, "")
		}
		Eventually(holder).WithTimeout(30 * time.Second).Should(BeElementOf(ids[0], ids[1]))
		leaderID := holder()
		leader := replicas[leaderID]
		var other *framework.ControllerManager
		for id, cm := range replicas {
			if id != leaderID {
				other = cm
			}
		}
		logged := func(what string) func() int {
			return func() int { return strings.Count(framework.ReadFile(leader.LogPath), what) }
		}
		lost, won := logged("lost the leader Lease"), logged("won the leader Lease")
		lostBefore, wonBefore := lost(), won()

		// Another holder takes the Lease, as a replica would whose renewal
		// the leader missed on a busy host, and never renews it.
		lease := &coordinationv1.Lease{}
		Expect(fw.Host.Client.Get(ctx, leaseKey, lease)).To(Succeed())
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = ptr.To("e2e-thief"), ptr.To[int32](20)
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		Expect(fw.Host.Client.Update(ctx, lease)).To(Succeed())
		leaderGauge := func() string {
			m, err := leader.Metrics()
			if err != nil {
				return err.Error()
			}
			return regexp.MustCompile(`(?m)^leader_election_master_status\{name="` + controllermanager.LeaderElectionID + `"\} \d+$`).FindString(m)
		}
		Expect(leaderGauge()).To(HaveSuffix(" 1"))
		Eventually(lost).WithTimeout(60*time.Second).Should(Equal(lostBefore+1), "the leader notices the loss")
		Eventually(leaderGauge).WithTimeout(5*time.Second).Should(HaveSuffix(" 0"), "leader_election_master_status after the loss")

		// It is still running and still serves its members: an object
		// created now reaches every member.
		Expect(leader.Exited()).To(BeFalse(), "the replica that lost the Lease exited")
		Expect(fences(ctx)).To(Equal(want), "no member moved")
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", scaleNS, "after-loss", map[string]any{"data": map[string]any{"k": "v"}}, nil, nil))).To(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", scaleNS, "after-loss")) }).
			WithTimeout(30 * time.Second).Should(Equal("True| " + strings.Join(names, " ")))

		// Once the other replica stopped, only the one that lost the Lease
		// can carry out a preference: it does when it leads again, after
		// the thief's Lease expired, with its second term's controllers.
		Expect(other.Stop()).To(Succeed())
		labels := map[string]any{"app": "after-loss"}
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", scaleNS, "after-loss", map[string]any{"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx:1.27"}}}},
		}}, nil, nil))).To(Succeed())
		Expect(fw.Host.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.kubefed.io/v1alpha1", "kind": "ReplicaSchedulingPreference",
			"metadata": map[string]any{"name": "after-loss", "namespace": scaleNS},
			"spec": map[string]any{"targetKind": "FederatedDeployment", "totalReplicas": int64(2 * len(names)),
				"clusters": map[string]any{"*": map[string]any{"weight": int64(1)}}},
		}})).To(Succeed())
		Eventually(holder).WithTimeout(60*time.Second).Should(Equal(leaderID), "the replica that lost the Lease wins it again")
		Expect(leader.Exited()).To(BeFalse())
		Eventually(won).WithTimeout(10*time.Second).Should(Equal(wonBefore+1), "a second term in the same process")
		Eventually(leaderGauge).WithTimeout(5*time.Second).Should(HaveSuffix(" 1"), "leader_election_master_status in the second term")
		Eventually(func() []string {
			list := &eventsv1.EventList{}
			Expect(fw.Host.Client.List(ctx, list, client.InNamespace(kubefedNS))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "Lease" && e.Regarding.Name == controllermanager.LeaderElectionID && e.Reason == "LeaderElection" {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).WithTimeout(10*time.Second).Should(ContainElement(leaderID+" became leader"), "the election's event on the Lease")
		replicasInMembers := func() int64 {
			var sum int64
			for _, c := range clusters {
				d := memberObject(ctx, c, "apps/v1", "Deployment", scaleNS, "after-loss")
				if d == nil {
					return -1
				}
				n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
				sum += n
			}
			return sum
		}
		Eventually(replicasInMembers).WithTimeout(60*time.Second).Should(Equal(int64(2*len(names))), "the preference's replicas, split over the members")
	})
})
