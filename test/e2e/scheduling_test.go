//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/scheduling"
	"github.com/kubefed-io/kubefed/pkg/kubefedctl"
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
	deployment := func(name, cpu string) *unstructured.Unstructured {
		labels := map[string]any{"app": name}
		return fedObject("Deployment", schedNS, name, map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27",
						"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}}},
				},
			},
		}, nil, nil)
	}

	BeforeAll(func(ctx context.Context) {
		var err error
		// member3 is small: one node of 2 CPUs.
		sfw, err = framework.StartWithNodes(ctx, GinkgoT().TempDir(), 3, GinkgoWriter,
			localcluster.NodeOptions{Count: 2, CPU: "4", Memory: "8Gi", Pods: 110},
			map[string]localcluster.NodeOptions{"member3": {Count: 1, CPU: "2", Memory: "4Gi", Pods: 110}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return sfw.Stop() })
		crds, err := framework.ReadCRDs(sfw.CRDDirs()...)
		Expect(err).NotTo(HaveOccurred())
		Expect(framework.InstallCRDs(ctx, sfw.Host.Client, crds)).To(Succeed())
		Expect(framework.EnsureNamespace(ctx, sfw.Host.Client, kubefedNS)).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, fastProbeConfig())).To(Succeed())
		_, err = sfw.Kubectl(ctx, sfw.Host.Name, "apply", "--server-side", "-f", filepath.Join(sfw.RepoRoot, "config", "default-types"))
		Expect(err).NotTo(HaveOccurred())
		// A short unschedulable threshold keeps the rebalance spec short;
		// a long hold keeps the estimate for the whole spec.
		cm, err := sfw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "cm"),
			"--unschedulable-threshold=10s", "--capacity-hold=10m")
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
		Expect(sfw.Host.Client.Create(ctx, deployment("seed", "100m"))).To(Succeed())
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
		Expect(sfw.Host.Client.Create(ctx, deployment("pair", "100m"))).To(Succeed())
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

	It("sums the workloads' counts over the members into their status, READY in kubectl get and kubefedctl status", func(ctx context.Context) {
		for _, t := range []string{"statefulsets", "daemonsets"} {
			_, errOut, err := sfw.Kubefedctl(ctx, "enable", t, "--host-cluster-context", sfw.Host.Name)
			Expect(err).NotTo(HaveOccurred(), errOut)
		}
		labels := func(app string) map[string]any { return map[string]any{"app": app} }
		podTemplate := func(app string, extra map[string]any) map[string]any {
			spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37"}}}
			for k, v := range extra {
				spec[k] = v
			}
			return map[string]any{"metadata": map[string]any{"labels": labels(app)}, "spec": spec}
		}
		// No CPU requests: they leave member3's room to the next spec.
		objects := []*unstructured.Unstructured{
			fedObject("Deployment", schedNS, "agg-web", map[string]any{"spec": map[string]any{
				"replicas": int64(2), "selector": map[string]any{"matchLabels": labels("agg-web")}, "template": podTemplate("agg-web", nil),
			}}, nil, []any{map[string]any{"clusterName": "member2", "clusterOverrides": []any{
				map[string]any{"path": "/spec/replicas", "value": int64(3)}}}}),
			fedObject("ReplicaSet", schedNS, "agg-rs", map[string]any{"spec": map[string]any{
				"replicas": int64(1), "selector": map[string]any{"matchLabels": labels("agg-rs")}, "template": podTemplate("agg-rs", nil),
			}}, nil, nil),
			fedObject("StatefulSet", schedNS, "agg-db", map[string]any{"spec": map[string]any{
				"replicas": int64(2), "serviceName": "agg-db", "selector": map[string]any{"matchLabels": labels("agg-db")}, "template": podTemplate("agg-db", nil),
			}}, nil, nil),
			fedObject("DaemonSet", schedNS, "agg-node", map[string]any{"spec": map[string]any{
				"selector": map[string]any{"matchLabels": labels("agg-node")}, "template": podTemplate("agg-node", nil),
			}}, nil, nil),
			fedObject("Job", schedNS, "agg-job", map[string]any{"spec": map[string]any{
				"completions": int64(2), "parallelism": int64(2), "template": podTemplate("agg-job", map[string]any{"restartPolicy": "Never"}),
			}}, nil, nil),
		}
		for _, o := range objects {
			// The CRDs enable just created may not be served yet.
			Eventually(func() error { return client.IgnoreAlreadyExists(sfw.Host.Client.Create(ctx, o.DeepCopy())) }).
				WithTimeout(30*time.Second).Should(Succeed(), o.GetKind())
		}
		// What each kind's status sums, read straight from the members:
		// count name → field of the member object; READY is ready/desired.
		type count struct {
			name string
			path []string
		}
		kinds := []struct {
			apiVersion, kind, name string
			counts                 []count
			ready, desired         string
			want                   string
		}{
			{"apps/v1", "Deployment", "agg-web", []count{{"desiredReplicas", []string{"spec", "replicas"}}, {"replicas", []string{"status", "replicas"}},
				{"readyReplicas", []string{"status", "readyReplicas"}}, {"availableReplicas", []string{"status", "availableReplicas"}}, {"updatedReplicas", []string{"status", "updatedReplicas"}}},
				"readyReplicas", "desiredReplicas", "7/7"},
			{"apps/v1", "ReplicaSet", "agg-rs", []count{{"desiredReplicas", []string{"spec", "replicas"}}, {"replicas", []string{"status", "replicas"}},
				{"readyReplicas", []string{"status", "readyReplicas"}}, {"availableReplicas", []string{"status", "availableReplicas"}}},
				"readyReplicas", "desiredReplicas", "3/3"},
			{"apps/v1", "StatefulSet", "agg-db", []count{{"desiredReplicas", []string{"spec", "replicas"}}, {"replicas", []string{"status", "replicas"}},
				{"readyReplicas", []string{"status", "readyReplicas"}}, {"availableReplicas", []string{"status", "availableReplicas"}}, {"updatedReplicas", []string{"status", "updatedReplicas"}}},
				"readyReplicas", "desiredReplicas", "6/6"},
			// Two nodes in member1 and member2, one in member3.
			{"apps/v1", "DaemonSet", "agg-node", []count{{"desiredNumberScheduled", []string{"status", "desiredNumberScheduled"}}, {"numberReady", []string{"status", "numberReady"}},
				{"numberAvailable", []string{"status", "numberAvailable"}}, {"updatedNumberScheduled", []string{"status", "updatedNumberScheduled"}}},
				"numberReady", "desiredNumberScheduled", "5/5"},
			{"batch/v1", "Job", "agg-job", []count{{"completions", []string{"spec", "completions"}}, {"succeeded", []string{"status", "succeeded"}},
				{"active", []string{"status", "active"}}, {"failed", []string{"status", "failed"}}},
				"succeeded", "completions", "6/6"},
		}
		for _, k := range kinds {
			Eventually(func(g Gomega) {
				fed := memberObject(ctx, sfw.Host, "types.kubefed.io/v1beta1", "Federated"+k.kind, schedNS, k.name)
				g.Expect(fed).NotTo(BeNil())
				sums := map[string]int64{}
				perCluster := map[string]any{}
				for _, m := range sfw.Members {
					obj := memberObject(ctx, m, k.apiVersion, k.kind, schedNS, k.name)
					g.Expect(obj).NotTo(BeNil(), m.Name)
					mine := map[string]int64{}
					for _, c := range k.counts {
						n, _, _ := unstructured.NestedInt64(obj.Object, c.path...)
						mine[c.name] = n
						sums[c.name] += n
					}
					perCluster[m.Name] = fmt.Sprintf("%d/%d", mine[k.ready], mine[k.desired])
				}
				counts, _, _ := unstructured.NestedMap(fed.Object, "status", "counts")
				for _, c := range k.counts {
					g.Expect(counts).To(HaveKeyWithValue(c.name, sums[c.name]), "%s status.counts.%s", k.kind, c.name)
				}
				ready, _, _ := unstructured.NestedString(fed.Object, "status", "ready")
				g.Expect(ready).To(Equal(k.want), k.kind)
				clusters, _, _ := unstructured.NestedSlice(fed.Object, "status", "clusters")
				got := map[string]any{}
				for _, c := range clusters {
					e := c.(map[string]any)
					got[e["name"].(string)] = e["ready"]
				}
				g.Expect(got).To(Equal(perCluster), k.kind)
			}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), k.kind)
		}

		out, err := sfw.Kubectl(ctx, sfw.Host.Name, "get", "federateddeployments", "agg-web", "-n", schedNS)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(strings.Split(out, "\n")[0])).To(HaveExactElements("NAME", "READY", "PROPAGATION", "REASON", "AGE"))
		Expect(strings.Fields(strings.Split(out, "\n")[1])[:2]).To(Equal([]string{"agg-web", "7/7"}))
		status, errOut, err := sfw.Kubefedctl(ctx, "status", "deployments", "agg-web", "-n", schedNS, "--host-cluster-context", sfw.Host.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`FederatedDeployment\s+agg-web\s+OK\s+7/7\s+OK 2/2\s+OK 3/3\s+OK 2/2`))
	})

	It("moves the replicas a member too small for its share cannot run to members with room, with rebalance, and shows the capacity estimate", func(ctx context.Context) {
		// One CPU a pod: member3 (2 CPUs, some taken by the specs above)
		// cannot run its preferred share of 3.
		Expect(sfw.Host.Client.Create(ctx, deployment("big", "1"))).To(Succeed())
		pref := rsp("big", 9, map[string]any{"*": map[string]any{"weight": int64(1)}})
		Expect(unstructured.SetNestedField(pref.Object, true, "spec", "rebalance")).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, pref)).To(Succeed())
		m3 := sfw.Members[2]
		// First member3 is asked for its share and leaves pods pending.
		Eventually(func() int { return unschedulablePods(ctx, m3, "big") }).
			WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeNumerically(">", 0))
		expectRebalanced(ctx, sfw, "big")
	})

	It("fails a stopped member's replicas over after the toleration without taking any from the healthy ones, and gives them back when it returns", func(ctx context.Context) {
		Expect(sfw.Host.Client.Create(ctx, deployment("fo", "100m"))).To(Succeed())
		pref := rsp("fo", 6, map[string]any{"*": map[string]any{"weight": int64(1)}})
		Expect(unstructured.SetNestedField(pref.Object, int64(15), "spec", "failoverTolerationSeconds")).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, pref)).To(Succeed())
		m1, m2, m3 := sfw.Members[0], sfw.Members[1], sfw.Members[2]
		all := func() []string {
			return []string{replicas(ctx, m1, "fo"), replicas(ctx, m2, "fo"), replicas(ctx, m3, "fo")}
		}
		Eventually(all).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Equal([]string{"2/2", "2/2", "2/2"}))
		generation := memberObject(ctx, m3, "apps/v1", "Deployment", schedNS, "fo").GetGeneration()
		lowest1 := lowestReplicas(ctx, m1, schedNS, "fo")
		lowest2 := lowestReplicas(ctx, m2, schedNS, "fo")

		Expect(m3.Local.StopAPIServer()).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return m3.Local.StartAPIServer(ctx) })
		By("within the toleration member3 is known not ready and keeps its replicas")
		var seen map[string]schedulingv1alpha1.ClusterReplicas
		Eventually(func() *metav1.Time {
			seen = rspStatus(ctx, sfw, "fo")
			return seen["member3"].NotReadySince
		}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).ShouldNot(BeNil())
		Expect(seen["member3"].FailedOver).To(BeFalse())
		Expect([]int64{seen["member1"].Replicas, seen["member2"].Replicas, seen["member3"].Replicas}).To(Equal([]int64{2, 2, 2}))
		By("past the toleration member1 and member2 run all six")
		Eventually(func() []string { return []string{replicas(ctx, m1, "fo"), replicas(ctx, m2, "fo")} }).
			WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Equal([]string{"3/3", "3/3"}))
		Expect(rspStatus(ctx, sfw, "fo")["member3"].FailedOver).To(BeTrue())

		By("member3 returns and gets its replicas back (rebalance off: the ones that moved)")
		Expect(m3.Local.StartAPIServer(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			c3 := rspStatus(ctx, sfw, "fo")["member3"]
			g.Expect(c3.FailedOver).To(BeFalse())
			g.Expect(c3.NotReadySince).To(BeNil())
			g.Expect(all()).To(Equal([]string{"2/2", "2/2", "2/2"}))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// member3 ran its two through the partition: its Deployment was
		// never scaled down and up again.
		Expect(memberObject(ctx, m3, "apps/v1", "Deployment", schedNS, "fo").GetGeneration()).To(Equal(generation))
		Expect([]int64{lowest1(), lowest2()}).To(Equal([]int64{2, 2}), "the healthy members' lowest replicas")
	})

	It("estimates a Pull-mode member's capacity from the unschedulable pods its agent reports, and moves what it cannot run", func(ctx context.Context) {
		m3 := sfw.Members[2]
		By("the workloads of the specs before go, so that member3's CPUs are free")
		Expect(sfw.Host.Client.DeleteAllOf(ctx, &schedulingv1alpha1.ReplicaSchedulingPreference{}, client.InNamespace(schedNS))).To(Succeed())
		for _, kind := range []string{"FederatedDeployment", "FederatedReplicaSet", "FederatedStatefulSet", "FederatedDaemonSet", "FederatedJob"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("types.kubefed.io/v1beta1")
			list.SetKind(kind + "List")
			Expect(sfw.Host.Client.List(ctx, list, client.InNamespace(schedNS))).To(Succeed())
			for i := range list.Items {
				Expect(client.IgnoreNotFound(sfw.Host.Client.Delete(ctx, &list.Items[i]))).To(Succeed())
			}
		}
		// A Job's finished pods stay (deleting a Job orphans them by
		// default) and hold no CPU.
		Eventually(func() ([]string, error) {
			pods, err := m3.Kube.CoreV1().Pods(schedNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var holding []string
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					holding = append(holding, p.Name+" "+string(p.Status.Phase))
				}
			}
			return holding, nil
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeEmpty())

		By("member3 joins again in Pull mode; its agent runs as join's Deployment would run it")
		_, errOut, err := sfw.Kubefedctl(ctx, "unjoin", m3.Name, "--cluster-context", m3.Name, "--host-cluster-context", sfw.Host.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		_, errOut, err = sfw.Kubefedctl(ctx, "join", m3.Name, "--mode", "pull", "--agent-image", "e2e.example/kubefed:test",
			"--cluster-context", m3.Name, "--host-cluster-context", sfw.Host.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		deployment3 := &appsv1.Deployment{}
		Expect(m3.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: kubefedctl.AgentDeploymentName}, deployment3)).To(Succeed())
		dir := GinkgoT().TempDir()
		args, err := framework.AgentArgs(ctx, m3, deployment3, dir, "e2e-sched-agent")
		Expect(err).NotTo(HaveOccurred())
		agent := exec.Command(sfw.Bin("controller-manager"), args...)
		logFile, err := os.Create(filepath.Join(dir, "agent.log"))
		Expect(err).NotTo(HaveOccurred())
		agent.Stdout, agent.Stderr = logFile, logFile
		Expect(agent.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = agent.Process.Signal(syscall.SIGTERM)
			_ = agent.Wait()
		})
		Eventually(func(g Gomega) {
			kfc := &corev1beta1.KubeFedCluster{}
			g.Expect(sfw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: m3.Name}, kfc)).To(Succeed())
			g.Expect(kfc.PullMode()).To(BeTrue())
			g.Expect(kfc.Spec.SecretRef.Name).To(BeEmpty(), "the host holds a credential of the pull member")
			g.Expect(kfc.IsReady()).To(BeTrue())
			// The APIs it serves come with the heartbeat too.
			var served []string
			for _, e := range kfc.Status.APIEnablements {
				served = append(served, e.GroupVersion)
			}
			g.Expect(served).To(ContainElement("apps/v1"))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("a preference with rebalance asks member3 for more 1-CPU pods than its node runs")
		Expect(sfw.Host.Client.Create(ctx, deployment("edge", "1"))).To(Succeed())
		pref := rsp("edge", 9, map[string]any{"*": map[string]any{"weight": int64(1)}})
		Expect(unstructured.SetNestedField(pref.Object, true, "spec", "rebalance")).To(Succeed())
		Expect(sfw.Host.Client.Create(ctx, pref)).To(Succeed())
		Eventually(func() int { return unschedulablePods(ctx, m3, "edge") }).
			WithTimeout(90 * time.Second).WithPolling(time.Second).Should(BeNumerically(">", 0))
		// The host cannot read member3's pods: its agent reports them.
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(sfw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: corev1beta1.AgentLeaseName(m3.Name)}, lease)).To(Succeed())
			var report scheduling.PendingReport
			g.Expect(json.Unmarshal([]byte(lease.Annotations[scheduling.AgentPendingAnnotation]), &report)).To(Succeed())
			pending := 0
			for _, grp := range report.Groups {
				if grp.Namespace == schedNS && grp.Labels["app"] == "edge" {
					pending += len(grp.Since)
				}
			}
			g.Expect(pending).To(BeNumerically(">", 0))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the capacity estimate limits member3 and the rest runs on the push members")
		expectRebalanced(ctx, sfw, "edge")
	})
})

// expectRebalanced waits until the 9 replicas of the preference name over
// three equal weights with rebalance are all Ready: member3, too small for
// its share of 3, limited by its capacity estimate to what it runs, the
// rest on the others.
func expectRebalanced(ctx context.Context, f *framework.Framework, name string) {
	GinkgoHelper()
	m3 := f.Members[2]
	Eventually(func(g Gomega) {
		st := rspStatus(ctx, f, name)
		c3 := st[m3.Name]
		g.Expect(c3.EstimatedCapacity).NotTo(BeNil(), "member3's capacity estimate")
		g.Expect(c3.Replicas).To(BeNumerically("<", 3))
		g.Expect(*c3.EstimatedCapacity).To(Equal(c3.Replicas))
		var total int64
		for _, m := range f.Members {
			spec, ready := deploymentReplicas(ctx, m, name)
			g.Expect(spec).To(Equal(st[m.Name].Replicas), m.Name)
			g.Expect(ready).To(Equal(spec), m.Name)
			total += ready
		}
		g.Expect(total).To(Equal(int64(9)))
		g.Expect(unschedulablePods(ctx, m3, name)).To(BeZero())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// rspStatus is a ReplicaSchedulingPreference's status per cluster.
func rspStatus(ctx context.Context, f *framework.Framework, name string) map[string]schedulingv1alpha1.ClusterReplicas {
	GinkgoHelper()
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	Expect(f.Host.Client.Get(ctx, client.ObjectKey{Namespace: schedNS, Name: name}, rsp)).To(Succeed())
	out := map[string]schedulingv1alpha1.ClusterReplicas{}
	for _, c := range rsp.Status.Clusters {
		out[c.Name] = c
	}
	return out
}

// deploymentReplicas are a member Deployment's spec and ready replicas;
// zero when it does not exist.
func deploymentReplicas(ctx context.Context, c *framework.Cluster, name string) (spec, ready int64) {
	GinkgoHelper()
	d := memberObject(ctx, c, "apps/v1", "Deployment", schedNS, name)
	if d == nil {
		return 0, 0
	}
	spec, _, _ = unstructured.NestedInt64(d.Object, "spec", "replicas")
	ready, _, _ = unstructured.NestedInt64(d.Object, "status", "readyReplicas")
	return spec, ready
}

// unschedulablePods counts the pods labeled app=name in a member that the
// scheduler reports Unschedulable.
func unschedulablePods(ctx context.Context, c *framework.Cluster, name string) int {
	GinkgoHelper()
	pods, err := c.Kube.CoreV1().Pods(schedNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	Expect(err).NotTo(HaveOccurred())
	n := 0
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				n++
			}
		}
	}
	return n
}

// lowestReplicas watches a member Deployment from now on, through an
// informer that outlives the spec's disconnects, and returns a func that
// tells the lowest spec.replicas seen so far.
func lowestReplicas(ctx context.Context, c *framework.Cluster, namespace, name string) func() int64 {
	GinkgoHelper()
	var mu sync.Mutex
	lowest := int64(math.MaxInt64)
	record := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && d.Spec.Replicas != nil {
			mu.Lock()
			lowest = min(lowest, int64(*d.Spec.Replicas))
			mu.Unlock()
		}
	}
	lw := cache.NewListWatchFromClient(c.Kube.AppsV1().RESTClient(), "deployments", namespace, fields.OneTermEqualSelector("metadata.name", name))
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &appsv1.Deployment{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    record,
			UpdateFunc: func(_, obj any) { record(obj) },
		},
	})
	stop := make(chan struct{})
	go informer.Run(stop)
	DeferCleanup(func() { close(stop) })
	Eventually(informer.HasSynced).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}
