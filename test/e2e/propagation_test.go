//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

const propNS = "e2e-prop"

// fedObject builds a Federated<kind> in types.kubefed.io/v1beta1.
func fedObject(kind, namespace, name string, template map[string]any, clusters []string, overrides []any) *unstructured.Unstructured {
	placement := map[string]any{"clusterSelector": map[string]any{}}
	if clusters != nil {
		list := []any{}
		for _, c := range clusters {
			list = append(list, map[string]any{"name": c})
		}
		placement = map[string]any{"clusters": list}
	}
	spec := map[string]any{"template": template, "placement": placement}
	if overrides != nil {
		spec["overrides"] = overrides
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "Federated" + kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	return u
}

func override(cluster string, ops ...map[string]any) map[string]any {
	list := []any{}
	for _, op := range ops {
		list = append(list, op)
	}
	return map[string]any{"clusterName": cluster, "clusterOverrides": list}
}

// memberObject reads an object from a cluster, nil when it does not exist.
// setTemplateImage changes the first container's image in a
// FederatedDeployment's template.
func setTemplateImage(ctx context.Context, namespace, name, image string) {
	GinkgoHelper()
	Eventually(func() error {
		f := fedGet(ctx, "Deployment", namespace, name)
		containers, _, _ := unstructured.NestedSlice(f.Object, "spec", "template", "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = image
		Expect(unstructured.SetNestedSlice(f.Object, containers, "spec", "template", "spec", "template", "spec", "containers")).To(Succeed())
		return fw.Host.Client.Update(ctx, f)
	}).Should(Succeed())
}

func memberObject(ctx context.Context, c *framework.Cluster, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return u
}

func fedGet(ctx context.Context, kind, namespace, name string) *unstructured.Unstructured {
	GinkgoHelper()
	return memberObject(ctx, fw.Host, "types.kubefed.io/v1beta1", "Federated"+kind, namespace, name)
}

// propagationState renders a federated object's Propagation condition and
// per-cluster statuses, e.g. "True| member1 member2=ClusterNotReady".
func propagationState(u *unstructured.Unstructured) string { return framework.PropagationState(u) }

// writeCount sums the apiserver's counters of writes to resource, and to
// its status subresource too when withStatus is set.
func writeCount(ctx context.Context, c *framework.Cluster, resource string, withStatus bool) int {
	GinkgoHelper()
	return apiserverRequests(ctx, c, func(line string) bool {
		if !strings.Contains(line, `resource="`+resource+`"`) || (!withStatus && strings.Contains(line, `subresource="status"`)) {
			return false
		}
		for _, v := range []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"} {
			if strings.Contains(line, `verb="`+v+`"`) {
				return true
			}
		}
		return false
	})
}

// apiserverRequests sums the apiserver_request_total series of a cluster
// whose line match accepts.
func apiserverRequests(ctx context.Context, c *framework.Cluster, match func(line string) bool) int {
	GinkgoHelper()
	total, err := framework.APIServerRequests(ctx, c, match)
	Expect(err).NotTo(HaveOccurred())
	return total
}

// startFederation runs a controller-manager with cfg as the KubeFedConfig,
// joins every cluster, waits for the namespaces, deployments and configmaps
// types to run, and creates namespace on the host. *cm is the running
// controller-manager (specs may replace it); cleanups deleting the
// namespace's federated objects, unjoining and stopping *cm are deferred.
// It returns the controller-manager's directory.
func startFederation(ctx context.Context, cfg *corev1beta1.KubeFedConfig, namespace string, cm **framework.ControllerManager, extraArgs ...string) string {
	GinkgoHelper()
	Expect(framework.EnsureNamespace(ctx, fw.Host.Client, kubefedNS)).To(Succeed())
	Expect(client.IgnoreNotFound(fw.Host.Client.Delete(ctx, &corev1beta1.KubeFedConfig{
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: kubefedNS}}))).To(Succeed())
	Eventually(gone(ctx, fw.Host.Client, &corev1beta1.KubeFedConfig{}, client.ObjectKeyFromObject(cfg))).Should(BeTrue())
	Expect(fw.Host.Client.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, cfg)) })

	_, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--server-side", "-f", filepath.Join(fw.RepoRoot, "config", "default-types"))
	Expect(err).NotTo(HaveOccurred())

	cmDir := filepath.Join(GinkgoT().TempDir(), "cm")
	*cm, err = fw.StartControllerManager(ctx, cmDir, append([]string{"--zap-log-level=debug"}, extraArgs...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() error { return (*cm).Stop() })

	var joinedHere []*framework.Cluster
	for _, c := range fw.Clusters() {
		existed := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: c.Name}, &corev1beta1.KubeFedCluster{}) == nil
		_, _, err := fw.Kubefedctl(ctx, "join", c.Name, "--cluster-context", c.Name, "--host-cluster-context", fw.Host.Name, "--error-on-existing=false")
		Expect(err).NotTo(HaveOccurred())
		if !existed {
			joinedHere = append(joinedHere, c)
		}
	}
	DeferCleanup(func(ctx context.Context) {
		for _, c := range joinedHere {
			_, _, err := fw.Kubefedctl(ctx, "unjoin", c.Name, "--cluster-context", c.Name, "--host-cluster-context", fw.Host.Name)
			Expect(err).NotTo(HaveOccurred())
		}
	})
	for _, c := range fw.Clusters() {
		waitReady(ctx, c.Name, 60*time.Second)
	}
	for _, name := range []string{"namespaces", "deployments.apps", "configmaps"} {
		Eventually(func() corev1beta1.ControllerStatus {
			f := &corev1beta1.FederatedTypeConfig{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, f); err != nil {
				return ""
			}
			return f.Status.PropagationController
		}).WithTimeout(30*time.Second).Should(Equal(corev1beta1.ControllerStatusRunning), name)
	}
	Expect(framework.EnsureNamespace(ctx, fw.Host.Client, namespace)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		// Federated objects first, while the controller-manager still
		// releases their finalizers.
		for _, kind := range []string{"Deployment", "ConfigMap", "Secret", "Service", "ServiceAccount", "Job", "ReplicaSet", "Ingress"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("types.kubefed.io/v1beta1")
			list.SetKind("Federated" + kind + "List")
			if err := fw.Host.Client.List(ctx, list, client.InNamespace(namespace)); err == nil {
				for i := range list.Items {
					_ = fw.Host.Client.Delete(ctx, &list.Items[i])
				}
			}
		}
		fns := fedObject("Namespace", namespace, namespace, map[string]any{}, nil, nil)
		_ = fw.Host.Client.Delete(ctx, fns)
		Eventually(func() bool { return fedGet(ctx, "Namespace", namespace, namespace) == nil }).WithTimeout(60 * time.Second).Should(BeTrue())
	})
	return cmDir
}

var _ = Describe("Propagation", Ordered, func() {
	var (
		cm               *framework.ControllerManager
		member1, member2 *framework.Cluster
		cmDir            string
	)
	deployment := func(replicas int64, image string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "nginx"}},
			"spec": map[string]any{
				"replicas": replicas,
				"selector": map[string]any{"matchLabels": map[string]any{"app": "nginx"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "nginx"}},
					"spec": map[string]any{"containers": []any{
						map[string]any{"name": "nginx", "image": image},
					}},
				},
			},
		}
	}
	replicasIn := func(ctx context.Context, c *framework.Cluster, name string) any {
		d := memberObject(ctx, c, "apps/v1", "Deployment", propNS, name)
		if d == nil {
			return "absent"
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return r
	}
	state := func(ctx context.Context, kind, ns, name string) func() string {
		return func() string { return propagationState(fedGet(ctx, kind, ns, name)) }
	}

	BeforeAll(func(ctx context.Context) {
		member1, member2 = fw.Members[0], fw.Members[1]
		cfg := fastProbeConfig()
		cfg.Spec.SyncController = &corev1beta1.SyncControllerConfig{
			NotReadyClusterDeletionTimeout: &metav1.Duration{Duration: 20 * time.Second},
		}
		// Short enough that a crashed leader is replaced within 15 s.
		cfg.Spec.LeaderElect = &corev1beta1.LeaderElectConfig{
			LeaseDuration: &metav1.Duration{Duration: 8 * time.Second},
			RenewDeadline: &metav1.Duration{Duration: 6 * time.Second},
			RetryPeriod:   &metav1.Duration{Duration: 2 * time.Second},
		}
		cmDir = startFederation(ctx, cfg, propNS, &cm)
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() && cm != nil {
			var lines []string
			for _, l := range strings.Split(framework.ReadFile(cm.LogPath), "\n") {
				if strings.Contains(l, "writing status") || strings.Contains(l, "ERROR") || strings.Contains(l, "reconcile failed") {
					lines = append(lines, l)
				}
			}
			if len(lines) > 60 {
				lines = lines[len(lines)-60:]
			}
			AddReportEntry("controller-manager log", strings.Join(lines, "\n"))
		}
	})

	It("propagates the seed scenario: a FederatedDeployment with a per-cluster replicas override", func(ctx context.Context) {
		fns := fedObject("Namespace", propNS, propNS, map[string]any{}, nil, nil)
		Expect(fw.Host.Client.Create(ctx, fns)).To(Succeed())
		fd := fedObject("Deployment", propNS, "nginx", deployment(3, "nginx:1.27"), []string{member1.Name, member2.Name},
			[]any{override(member2.Name, map[string]any{"path": "/spec/replicas", "value": int64(5)})})
		Expect(fw.Host.Client.Create(ctx, fd)).To(Succeed())

		Eventually(func() any { return replicasIn(ctx, member1, "nginx") }).WithTimeout(30 * time.Second).Should(Equal(int64(3)))
		Eventually(func() any { return replicasIn(ctx, member2, "nginx") }).WithTimeout(30 * time.Second).Should(Equal(int64(5)))
		Consistently(func() any { return replicasIn(ctx, fw.Host, "nginx") }).WithTimeout(2 * time.Second).Should(Equal("absent"))
		Eventually(state(ctx, "Deployment", propNS, "nginx")).WithTimeout(30 * time.Second).
			Should(Equal(fmt.Sprintf("True| %s %s", member1.Name, member2.Name)))

		d := memberObject(ctx, member2, "apps/v1", "Deployment", propNS, "nginx")
		Expect(d.GetLabels()).To(HaveKeyWithValue(corev1beta1.ManagedByKubeFedLabelKey, "true"))
		Expect(d.GetLabels()).To(HaveKeyWithValue("app", "nginx"))
		// The namespace went everywhere; the host's own is adopted, not recreated.
		for _, c := range fw.Clusters() {
			Eventually(func() map[string]string {
				ns := memberObject(ctx, c, "v1", "Namespace", "", propNS)
				if ns == nil {
					return nil
				}
				return ns.GetLabels()
			}).WithTimeout(30*time.Second).Should(HaveKeyWithValue(corev1beta1.ManagedByKubeFedLabelKey, "true"), c.Name)
		}
		f := fedGet(ctx, "Deployment", propNS, "nginx")
		Expect(f.GetFinalizers()).To(ContainElement(corev1beta1.SyncControllerFinalizer))
		// The API server's admission policy gives it at creation, from the
		// ConfigMap of propagating types the controller-manager keeps: the
		// answer to a create carries it before the engine could write it.
		Eventually(func(g Gomega) []string {
			probe := fedObject("Deployment", propNS, "admission-probe", deployment(1, "nginx:1.27"), nil, nil)
			g.Expect(fw.Host.Client.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			return probe.GetFinalizers()
		}).WithTimeout(30 * time.Second).Should(ContainElement(corev1beta1.SyncControllerFinalizer))
		gen, _, _ := unstructured.NestedInt64(f.Object, "status", "observedGeneration")
		Expect(gen).To(Equal(f.GetGeneration()))
	})

	It("collects each member's status into status.clusters[].remoteStatus and sums their counts", func(ctx context.Context) {
		// The collected status is the member's, value for value, once the
		// member's rollout settled; the counts add up the members'.
		Eventually(func(g Gomega) {
			f := fedGet(ctx, "Deployment", propNS, "nginx")
			clusters, _, _ := unstructured.NestedSlice(f.Object, "status", "clusters")
			var desired, ready int64
			seen := 0
			for _, c := range clusters {
				m := c.(map[string]any)
				for _, member := range []*framework.Cluster{member1, member2} {
					if m["name"] != member.Name {
						continue
					}
					seen++
					d := memberObject(ctx, member, "apps/v1", "Deployment", propNS, "nginx")
					g.Expect(d).NotTo(BeNil(), member.Name)
					g.Expect(m["remoteStatus"]).To(Equal(d.Object["status"]), member.Name)
					spec, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
					r, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
					desired, ready = desired+spec, ready+r
				}
			}
			g.Expect(seen).To(Equal(2))
			total, _, _ := unstructured.NestedString(f.Object, "status", "ready")
			g.Expect(total).To(Equal(fmt.Sprintf("%d/%d", ready, desired)))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("updates members on a template change and removes copies from clusters taken out of placement", func(ctx context.Context) {
		setTemplateImage(ctx, propNS, "nginx", "nginx:1.28")
		image := func(c *framework.Cluster) func() string {
			return func() string {
				d := memberObject(ctx, c, "apps/v1", "Deployment", propNS, "nginx")
				if d == nil {
					return "absent"
				}
				cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				return cs[0].(map[string]any)["image"].(string)
			}
		}
		Eventually(image(member1)).WithTimeout(30 * time.Second).Should(Equal("nginx:1.28"))
		Eventually(image(member2)).WithTimeout(30 * time.Second).Should(Equal("nginx:1.28"))
		Expect(replicasIn(ctx, member2, "nginx")).To(Equal(int64(5)), "the override still applies")

		Eventually(func() error {
			f := fedGet(ctx, "Deployment", propNS, "nginx")
			Expect(unstructured.SetNestedSlice(f.Object, []any{map[string]any{"name": member1.Name}}, "spec", "placement", "clusters")).To(Succeed())
			return fw.Host.Client.Update(ctx, f)
		}).Should(Succeed())
		Eventually(func() any { return replicasIn(ctx, member2, "nginx") }).WithTimeout(30 * time.Second).Should(Equal("absent"))
		Eventually(state(ctx, "Deployment", propNS, "nginx")).WithTimeout(30 * time.Second).Should(Equal("True| " + member1.Name))
		Expect(replicasIn(ctx, member1, "nginx")).To(Equal(int64(3)))
	})

	It("reverts a change made by hand in a member and recreates a deleted copy", func(ctx context.Context) {
		Eventually(func() error {
			d := memberObject(ctx, member1, "apps/v1", "Deployment", propNS, "nginx")
			Expect(unstructured.SetNestedField(d.Object, int64(7), "spec", "replicas")).To(Succeed())
			return member1.Client.Update(ctx, d)
		}).Should(Succeed())
		Eventually(func() any { return replicasIn(ctx, member1, "nginx") }).WithTimeout(15 * time.Second).Should(Equal(int64(3)))

		// A field the template does not set, added by hand, goes too, as
		// in KubeFed: the copy still holds every desired value, but its
		// spec is not what was written.
		Eventually(func() error {
			d := memberObject(ctx, member1, "apps/v1", "Deployment", propNS, "nginx")
			Expect(unstructured.SetNestedField(d.Object, int64(5), "spec", "minReadySeconds")).To(Succeed())
			return member1.Client.Update(ctx, d)
		}).Should(Succeed())
		Eventually(func() any {
			n, _, _ := unstructured.NestedInt64(memberObject(ctx, member1, "apps/v1", "Deployment", propNS, "nginx").Object, "spec", "minReadySeconds")
			return n
		}).WithTimeout(15 * time.Second).Should(Equal(int64(0)))

		d := memberObject(ctx, member1, "apps/v1", "Deployment", propNS, "nginx")
		uid := d.GetUID()
		Expect(member1.Client.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			d := memberObject(ctx, member1, "apps/v1", "Deployment", propNS, "nginx")
			return d != nil && d.GetUID() != uid
		}).WithTimeout(30 * time.Second).Should(BeTrue())
	})

	It("writes nothing to members or the host in steady state and after a controller restart", func(ctx context.Context) {
		// Objects whose member copies have a status that settles: a
		// Deployment of 0 replicas, ConfigMaps and a Secret. Writes of
		// member status are the members' own controllers' and not counted;
		// writes of federated status are, as they are ours.
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", propNS, "idle", deployment(0, "nginx:1.27"), nil, nil))).To(Succeed())
		for i := range 3 {
			Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, fmt.Sprintf("idle-%d", i),
				map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, nil, nil))).To(Succeed())
		}
		Expect(fw.Host.Client.Create(ctx, fedObject("Secret", propNS, "idle",
			map[string]any{"stringData": map[string]any{"password": "not-a-real-one"}}, nil, nil))).To(Succeed())
		for _, kn := range [][2]string{{"Deployment", "idle"}, {"ConfigMap", "idle-0"}, {"ConfigMap", "idle-2"}, {"Secret", "idle"}} {
			Eventually(state(ctx, kn[0], propNS, kn[1])).WithTimeout(30*time.Second).
				Should(Equal(fmt.Sprintf("True| %s %s %s", fw.Host.Name, member1.Name, member2.Name)), kn[0])
		}
		counts := func() map[string]int {
			m := map[string]int{}
			for _, c := range fw.Clusters() {
				for _, r := range []string{"deployments", "configmaps", "secrets", "namespaces"} {
					m[c.Name+"/"+r] = writeCount(ctx, c, r, false)
				}
			}
			for _, r := range []string{"federatedconfigmaps", "federatedsecrets", "federatednamespaces"} {
				m["host/"+r] = writeCount(ctx, fw.Host, r, true)
			}
			return m
		}
		before := counts()
		Eventually(func() bool {
			time.Sleep(3 * time.Second)
			now := counts()
			settled := maps.Equal(now, before)
			before = now
			return settled
		}).WithTimeout(60*time.Second).Should(BeTrue(), "the counters never settled")
		Consistently(counts).WithTimeout(8*time.Second).WithPolling(2*time.Second).Should(Equal(before), "writes in steady state")

		Expect(cm.Stop()).To(Succeed())
		var err error
		cm, err = fw.StartControllerManager(ctx, cmDir, "--zap-log-level=debug")
		Expect(err).NotTo(HaveOccurred())
		// The restarted controller-manager reconciles every object again.
		Eventually(func() corev1beta1.ControllerStatus {
			f := &corev1beta1.FederatedTypeConfig{}
			_ = fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: "deployments.apps"}, f)
			return f.Status.PropagationController
		}).Should(Equal(corev1beta1.ControllerStatusRunning))
		Consistently(counts).WithTimeout(15*time.Second).WithPolling(3*time.Second).Should(Equal(before), "writes after a restart")
		// Propagation still works after the restart.
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, "after-restart", map[string]any{}, []string{member1.Name}, nil))).To(Succeed())
		Eventually(func() *unstructured.Unstructured {
			return memberObject(ctx, member1, "v1", "ConfigMap", propNS, "after-restart")
		}).
			WithTimeout(30 * time.Second).ShouldNot(BeNil())
	})

	It("issues one write, to that cluster only, when one cluster's override changes", func(ctx context.Context) {
		fd := fedObject("Deployment", propNS, "web", deployment(1, "nginx:1.27"), []string{member1.Name, member2.Name},
			[]any{override(member2.Name, map[string]any{"path": "/spec/replicas", "value": int64(2)})})
		Expect(fw.Host.Client.Create(ctx, fd)).To(Succeed())
		Eventually(func() any { return replicasIn(ctx, member2, "web") }).WithTimeout(30 * time.Second).Should(Equal(int64(2)))
		// The status of a generation is written once every member's
		// write (or none) for it is done: the positive signal to count at.
		settled := func() {
			Eventually(func() string {
				f := fedGet(ctx, "Deployment", propNS, "web")
				if gen, _, _ := unstructured.NestedInt64(f.Object, "status", "observedGeneration"); gen != f.GetGeneration() {
					return fmt.Sprintf("status of generation %d, object at %d", gen, f.GetGeneration())
				}
				return propagationState(f)
			}).WithTimeout(30 * time.Second).Should(Equal(fmt.Sprintf("True| %s %s", member1.Name, member2.Name)))
		}
		settled()
		m1, m2 := writeCount(ctx, member1, "deployments", false), writeCount(ctx, member2, "deployments", false)
		Eventually(func() error {
			f := fedGet(ctx, "Deployment", propNS, "web")
			Expect(unstructured.SetNestedSlice(f.Object, []any{override(member2.Name, map[string]any{"path": "/spec/replicas", "value": int64(4)})}, "spec", "overrides")).To(Succeed())
			return fw.Host.Client.Update(ctx, f)
		}).Should(Succeed())
		Eventually(func() any { return replicasIn(ctx, member2, "web") }).WithTimeout(30 * time.Second).Should(Equal(int64(4)))
		settled()
		Expect(writeCount(ctx, member1, "deployments", false)).To(Equal(m1), "member1 is not written")
		Expect(writeCount(ctx, member2, "deployments", false)-m2).To(Equal(1), "one write to member2")
	})

	It("reports bad input per cluster and goes on with the other clusters", func(ctx context.Context) {
		cmTemplate := map[string]any{"data": map[string]any{"k": "v"}}
		bad := fedObject("ConfigMap", propNS, "bad-index", cmTemplate, []string{member1.Name, member2.Name, "no-such-cluster"},
			[]any{override(member2.Name, map[string]any{"op": "add", "path": "/data/list/3", "value": "x"})})
		Expect(fw.Host.Client.Create(ctx, bad)).To(Succeed())
		Eventually(state(ctx, "ConfigMap", propNS, "bad-index")).WithTimeout(30 * time.Second).
			Should(Equal(fmt.Sprintf("False/CheckClusters| %s %s=ApplyOverridesFailed no-such-cluster=ClusterNotFound", member1.Name, member2.Name)))
		Expect(memberObject(ctx, member1, "v1", "ConfigMap", propNS, "bad-index")).NotTo(BeNil())
		Expect(memberObject(ctx, member2, "v1", "ConfigMap", propNS, "bad-index")).To(BeNil())

		// The schema refuses what it can tell on its own, naming the problem.
		for _, o := range []*unstructured.Unstructured{
			fedObject("ConfigMap", propNS, "bad-name", cmTemplate, []string{member1.Name},
				[]any{override(member1.Name, map[string]any{"path": "/metadata/name", "value": "x"})}),
			fedObject("ConfigMap", propNS, "bad-dup", cmTemplate, []string{member1.Name},
				[]any{override(member1.Name, map[string]any{"path": "/data/a", "value": "x"}), override(member1.Name, map[string]any{"path": "/data/b", "value": "y"})}),
		} {
			err := fw.Host.Client.Create(ctx, o)
			if err == nil {
				// Where the schema lets it through, propagation reports it.
				Eventually(state(ctx, "ConfigMap", propNS, o.GetName())).WithTimeout(30*time.Second).
					Should(Equal(fmt.Sprintf("False/CheckClusters| %s=ApplyOverridesFailed", member1.Name)), o.GetName())
				continue
			}
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", o.GetName(), err)
		}
		// Other objects are unaffected.
		Expect(state(ctx, "Deployment", propNS, "nginx")()).To(Equal("True| " + member1.Name))
	})

	It("adopts an existing member object, and never one labelled kubefed.io/managed=false", func(ctx context.Context) {
		existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopt-me", Namespace: propNS}, Data: map[string]string{"old": "1"}}
		Expect(member1.Client.Create(ctx, existing)).To(Succeed())
		forbidden := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep-out", Namespace: propNS,
			Labels: map[string]string{corev1beta1.ManagedByKubeFedLabelKey: "false"}}, Data: map[string]string{"mine": "1"}}
		Expect(member1.Client.Create(ctx, forbidden)).To(Succeed())

		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, "adopt-me", map[string]any{"data": map[string]any{"new": "2"}}, []string{member1.Name}, nil))).To(Succeed())
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, "keep-out", map[string]any{"data": map[string]any{"new": "2"}}, []string{member1.Name}, nil))).To(Succeed())
		Eventually(func() map[string]string {
			c := &corev1.ConfigMap{}
			Expect(member1.Client.Get(ctx, client.ObjectKeyFromObject(existing), c)).To(Succeed())
			return c.Data
		}).WithTimeout(30 * time.Second).Should(Equal(map[string]string{"new": "2"}))
		Eventually(state(ctx, "ConfigMap", propNS, "keep-out")).WithTimeout(30 * time.Second).
			Should(Equal(fmt.Sprintf("False/CheckClusters| %s=ManagedLabelFalse", member1.Name)))
		c := &corev1.ConfigMap{}
		Expect(member1.Client.Get(ctx, client.ObjectKeyFromObject(forbidden), c)).To(Succeed())
		Expect(c.Data).To(Equal(map[string]string{"mine": "1"}))
	})

	It("orphans member copies with kubefed.io/orphan and deletes with kubefed.io/deleteoption", func(ctx context.Context) {
		orphan := fedObject("ConfigMap", propNS, "orphan", map[string]any{"data": map[string]any{"k": "v"}}, []string{member1.Name, member2.Name}, nil)
		orphan.SetAnnotations(map[string]string{corev1beta1.OrphanManagedResourcesAnnotation: "true"})
		Expect(fw.Host.Client.Create(ctx, orphan)).To(Succeed())
		// Its own labels: an orphaned ReplicaSet matching another
		// Deployment's selector would be adopted by it.
		tmpl := deployment(1, "nginx:1.27")
		labels := map[string]any{"app": "keep-rs"}
		tmpl["metadata"] = map[string]any{"labels": labels}
		spec := tmpl["spec"].(map[string]any)
		spec["selector"] = map[string]any{"matchLabels": labels}
		spec["template"].(map[string]any)["metadata"] = map[string]any{"labels": labels}
		fd := fedObject("Deployment", propNS, "keep-rs", tmpl, []string{member1.Name}, nil)
		fd.SetAnnotations(map[string]string{corev1beta1.DeleteOptionAnnotation: `{"propagationPolicy":"Orphan"}`})
		Expect(fw.Host.Client.Create(ctx, fd)).To(Succeed())
		for _, c := range []*framework.Cluster{member1, member2} {
			Eventually(func() *unstructured.Unstructured { return memberObject(ctx, c, "v1", "ConfigMap", propNS, "orphan") }).
				WithTimeout(30 * time.Second).ShouldNot(BeNil())
		}
		// The member's deployment controller creates the ReplicaSet.
		rsOf := func() []string {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("apps/v1")
			list.SetKind("ReplicaSetList")
			Expect(member1.Client.List(ctx, list, client.InNamespace(propNS))).To(Succeed())
			var names []string
			for _, rs := range list.Items {
				for _, o := range rs.GetOwnerReferences() {
					if o.Name == "keep-rs" {
						names = append(names, rs.GetName())
					}
				}
				if strings.HasPrefix(rs.GetName(), "keep-rs-") && len(rs.GetOwnerReferences()) == 0 {
					names = append(names, rs.GetName()+"(orphaned)")
				}
			}
			return names
		}
		Eventually(rsOf).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())

		Expect(fw.Host.Client.Delete(ctx, orphan)).To(Succeed())
		Expect(fw.Host.Client.Delete(ctx, fd)).To(Succeed())
		Eventually(func() bool { return fedGet(ctx, "ConfigMap", propNS, "orphan") == nil }).WithTimeout(30 * time.Second).Should(BeTrue())
		for _, c := range []*framework.Cluster{member1, member2} {
			o := memberObject(ctx, c, "v1", "ConfigMap", propNS, "orphan")
			Expect(o).NotTo(BeNil(), c.Name)
			Expect(o.GetLabels()).NotTo(HaveKey(corev1beta1.ManagedByKubeFedLabelKey), c.Name)
		}
		Eventually(func() any { return replicasIn(ctx, member1, "keep-rs") }).WithTimeout(30 * time.Second).Should(Equal("absent"))
		Eventually(func() bool { return fedGet(ctx, "Deployment", propNS, "keep-rs") == nil }).WithTimeout(30 * time.Second).Should(BeTrue())
		Consistently(rsOf).WithTimeout(3*time.Second).Should(ContainElement(HaveSuffix("(orphaned)")), "the ReplicaSet survives its Deployment")
	})

	It("propagates every default type through create, update, placement change and delete", func(ctx context.Context) {
		type typeCase struct {
			kind, apiVersion string
			namespaced       bool
			template         map[string]any
		}
		labels := func(v string) map[string]any {
			return map[string]any{"labels": map[string]any{"journey": v}}
		}
		podSpec := map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "journey"}},
			"spec":     map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
		}
		cases := []typeCase{
			{"ConfigMap", "v1", true, map[string]any{"data": map[string]any{"a": "b"}}},
			{"Secret", "v1", true, map[string]any{"stringData": map[string]any{"a": "b"}}},
			{"ServiceAccount", "v1", true, map[string]any{}},
			{"Service", "v1", true, map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}},
			{"Deployment", "apps/v1", true, deployment(1, "nginx:1.27")},
			{"ReplicaSet", "apps/v1", true, map[string]any{"spec": map[string]any{"replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"app": "journey-rs"}}, "template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "journey-rs"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
				}}}},
			{"Job", "batch/v1", true, map[string]any{"spec": map[string]any{"template": podSpec}}},
			{"Ingress", "networking.k8s.io/v1", true, map[string]any{"spec": map[string]any{"defaultBackend": map[string]any{
				"service": map[string]any{"name": "svc", "port": map[string]any{"number": int64(80)}}}}}},
			{"ClusterRole", "rbac.authorization.k8s.io/v1", false, map[string]any{"rules": []any{map[string]any{
				"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}}},
		}
		name := "journey"
		ns := func(tc typeCase) string {
			if tc.namespaced {
				return propNS
			}
			return ""
		}
		for _, tc := range cases {
			tmpl := tc.template
			tmpl["metadata"] = labels("one")
			Expect(fw.Host.Client.Create(ctx, fedObject(tc.kind, ns(tc), name, tmpl, []string{member1.Name, member2.Name}, nil))).To(Succeed(), tc.kind)
		}
		journeyLabel := func(tc typeCase, c *framework.Cluster) func() string {
			return func() string {
				o := memberObject(ctx, c, tc.apiVersion, tc.kind, ns(tc), name)
				if o == nil {
					return "absent"
				}
				return o.GetLabels()["journey"]
			}
		}
		for _, tc := range cases {
			for _, c := range []*framework.Cluster{member1, member2} {
				Eventually(journeyLabel(tc, c)).WithTimeout(30*time.Second).Should(Equal("one"), "%s in %s: %s", tc.kind, c.Name,
					propagationState(fedGet(ctx, tc.kind, ns(tc), name)))
			}
		}
		for _, tc := range cases {
			Eventually(func() error {
				f := fedGet(ctx, tc.kind, ns(tc), name)
				Expect(unstructured.SetNestedField(f.Object, "two", "spec", "template", "metadata", "labels", "journey")).To(Succeed())
				Expect(unstructured.SetNestedSlice(f.Object, []any{map[string]any{"name": member1.Name}}, "spec", "placement", "clusters")).To(Succeed())
				return fw.Host.Client.Update(ctx, f)
			}).Should(Succeed(), tc.kind)
		}
		for _, tc := range cases {
			Eventually(journeyLabel(tc, member1)).WithTimeout(30*time.Second).Should(Equal("two"), tc.kind)
			Eventually(journeyLabel(tc, member2)).WithTimeout(30*time.Second).Should(Equal("absent"), tc.kind)
		}
		for _, tc := range cases {
			Expect(fw.Host.Client.Delete(ctx, fedGet(ctx, tc.kind, ns(tc), name))).To(Succeed(), tc.kind)
		}
		for _, tc := range cases {
			Eventually(journeyLabel(tc, member1)).WithTimeout(30*time.Second).Should(Equal("absent"), tc.kind)
			Eventually(func() bool { return fedGet(ctx, tc.kind, ns(tc), name) == nil }).WithTimeout(30*time.Second).Should(BeTrue(), tc.kind)
		}
	})

	It("recovers a member killed mid-propagation: nothing missing, nothing duplicated", func(ctx context.Context) {
		const n = 20
		Expect(member2.Local.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				_ = member2.Local.StartAPIServer(context.Background())
			}
		})
		for i := range n {
			Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, fmt.Sprintf("wave-%d", i),
				map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, []string{member1.Name, member2.Name}, nil))).To(Succeed())
		}
		Eventually(state(ctx, "ConfigMap", propNS, "wave-0")).WithTimeout(60 * time.Second).
			Should(Equal(fmt.Sprintf("False/CheckClusters| %s %s=ClusterNotReady", member1.Name, member2.Name)))
		Expect(member2.Local.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		waitReady(ctx, member2.Name, 60*time.Second)
		for i := range n {
			Eventually(state(ctx, "ConfigMap", propNS, fmt.Sprintf("wave-%d", i))).WithTimeout(60 * time.Second).
				Should(Equal(fmt.Sprintf("True| %s %s", member1.Name, member2.Name)))
		}
		for _, c := range []*framework.Cluster{member1, member2} {
			Expect(framework.WaveCopies(ctx, c, propNS, "wave-")).To(Equal(n), c.Name)
		}
	})

	It("exports KubeFed's propagation metrics and its own latency and queue metrics", func() {
		metrics, err := cm.Metrics()
		Expect(err).NotTo(HaveOccurred())
		for _, pattern := range []string{
			`reconcile_federated_resources_duration_seconds_count`,
			`dispatch_operation_duration_seconds_count\{action="create"\}`,
			`dispatch_operation_duration_seconds_count\{action="update"\}`,
			`kubefed_propagation_latency_seconds_count`,
			`workqueue_adds_total\{[^}]*name="configmaps"[^}]*\}`,
		} {
			Expect(metrics).To(MatchRegexp(`(?m)^`+pattern+` [1-9]`), pattern)
		}
	})

	It("fails over to a second controller-manager within 15 s of the leader crashing, and keeps propagating", func(ctx context.Context) {
		second, err := fw.StartControllerManager(ctx, cmDir, "--zap-log-level=debug")
		Expect(err).NotTo(HaveOccurred())
		// Once it is the leader it is cm, which the suite stops at the end.
		DeferCleanup(func() error {
			if cm != second {
				return second.Stop()
			}
			return nil
		})
		holder := func() string {
			lease := &coordinationv1.Lease{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: "kubefed-controller-manager"}, lease); err != nil {
				return ""
			}
			return ptr.Deref(lease.Spec.HolderIdentity, "")
		}
		first := holder()
		Expect(first).NotTo(BeEmpty())
		Expect(second.Exited()).To(BeFalse())

		killed := time.Now()
		Expect(cm.Kill()).To(Succeed())
		Eventually(holder).WithTimeout(15*time.Second).WithPolling(200*time.Millisecond).
			ShouldNot(Or(Equal(first), BeEmpty()), "a new leader within 15 s")
		AddReportEntry("leader failover", time.Since(killed).String())
		cm = second

		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, "after-failover", map[string]any{}, []string{member1.Name}, nil))).To(Succeed())
		Eventually(func() *unstructured.Unstructured {
			return memberObject(ctx, member1, "v1", "ConfigMap", propNS, "after-failover")
		}).WithTimeout(30 * time.Second).ShouldNot(BeNil())
	})

	It("releases a federated object whose member stays NotReady past the deletion timeout, leaving the copy", func(ctx context.Context) {
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", propNS, "stranded", map[string]any{"data": map[string]any{"k": "v"}},
			[]string{member1.Name, member2.Name}, nil))).To(Succeed())
		Eventually(state(ctx, "ConfigMap", propNS, "stranded")).WithTimeout(30 * time.Second).
			Should(Equal(fmt.Sprintf("True| %s %s", member1.Name, member2.Name)))
		Expect(member2.Local.StopAPIServer()).To(Succeed())
		DeferCleanup(func() { _ = member2.Local.StartAPIServer(context.Background()) })
		Eventually(func() string { return conditionState(ctx, member2.Name, corev1beta1.ClusterReady) }).
			WithTimeout(30 * time.Second).ShouldNot(Equal("True/ClusterReady"))
		Expect(fw.Host.Client.Delete(ctx, fedGet(ctx, "ConfigMap", propNS, "stranded"))).To(Succeed())
		Eventually(func() *unstructured.Unstructured {
			return memberObject(ctx, member1, "v1", "ConfigMap", propNS, "stranded")
		}).
			WithTimeout(30 * time.Second).Should(BeNil())
		// Held while the member may come back...
		Consistently(func() bool { return fedGet(ctx, "ConfigMap", propNS, "stranded") != nil }).WithTimeout(5 * time.Second).Should(BeTrue())
		// ...and released after the timeout (20s in this KubeFedConfig).
		Eventually(func() bool { return fedGet(ctx, "ConfigMap", propNS, "stranded") == nil }).WithTimeout(60 * time.Second).Should(BeTrue())

		Expect(member2.Local.StartAPIServer(ctx)).To(Succeed())
		waitReady(ctx, member2.Name, 60*time.Second)
		// The copy left behind is kept, and unlabelled as an orphan.
		Eventually(func() map[string]string {
			o := memberObject(ctx, member2, "v1", "ConfigMap", propNS, "stranded")
			if o == nil {
				return map[string]string{"absent": "true"}
			}
			return o.GetLabels()
		}).WithTimeout(60 * time.Second).ShouldNot(Or(HaveKey(corev1beta1.ManagedByKubeFedLabelKey), HaveKey("absent")))
	})
})
