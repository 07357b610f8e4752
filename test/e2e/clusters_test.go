//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

const (
	kubefedNS   = corev1beta1.DefaultKubeFedNamespace
	probePeriod = 2 * time.Second
	joinedLabel = "kubefed.io/joined-cluster"
)

func kubeFedCluster(ctx context.Context, name string) *corev1beta1.KubeFedCluster {
	GinkgoHelper()
	kfc := &corev1beta1.KubeFedCluster{}
	Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, kfc)).To(Succeed())
	return kfc
}

func condition(kfc *corev1beta1.KubeFedCluster, t corev1beta1.ClusterConditionType) *corev1beta1.ClusterCondition {
	for i := range kfc.Status.Conditions {
		if kfc.Status.Conditions[i].Type == t {
			return &kfc.Status.Conditions[i]
		}
	}
	return nil
}

// conditionState renders a condition as "Status/Reason" for readable assertions.
func conditionState(ctx context.Context, name string, t corev1beta1.ClusterConditionType) string {
	kfc := &corev1beta1.KubeFedCluster{}
	if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, kfc); err != nil {
		return "error: " + err.Error()
	}
	c := condition(kfc, t)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s/%s", c.Status, ptr.Deref(c.Reason, ""))
}

// waitReady waits for a KubeFedCluster to be Ready and fails with its
// conditions and events when it does not become so.
func waitReady(ctx context.Context, name string, timeout time.Duration) {
	GinkgoHelper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if conditionState(ctx, name, corev1beta1.ClusterReady) == "True/ClusterReady" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	Fail(fmt.Sprintf("KubeFedCluster %s not Ready after %s:\n%s", name, timeout, describeCluster(ctx, name)))
}

// describeCluster renders a KubeFedCluster's conditions and events for failure messages.
func describeCluster(ctx context.Context, name string) string {
	kfc := &corev1beta1.KubeFedCluster{}
	if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, kfc); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range kfc.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s %s: %s\n", c.Type, c.Status, ptr.Deref(c.Reason, ""), ptr.Deref(c.Message, ""))
	}
	b.WriteString(strings.Join(eventReasons(ctx, name), "\n"))
	return b.String()
}

func eventReasons(ctx context.Context, name string) []string {
	list := &corev1.EventList{}
	if err := fw.Host.Client.List(ctx, list, client.InNamespace(kubefedNS)); err != nil {
		return nil
	}
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "KubeFedCluster" && e.InvolvedObject.Name == name {
			reasons = append(reasons, e.Reason+": "+e.Message)
		}
	}
	return reasons
}

// joinedObjects are the objects join created, found by the label it sets.
type joinedObjects struct {
	hostSecret      string
	serviceAccounts []string
	secrets         []string
	clusterRoles    []string
	clusterBindings []string
	roles           []string
	roleBindings    []string
}

func findJoinedObjects(ctx context.Context, member *framework.Cluster, name string) joinedObjects {
	GinkgoHelper()
	sel := client.MatchingLabels{joinedLabel: name}
	var o joinedObjects
	o.hostSecret = kubeFedCluster(ctx, name).Spec.SecretRef.Name
	sas := &corev1.ServiceAccountList{}
	Expect(member.Client.List(ctx, sas, sel)).To(Succeed())
	for _, x := range sas.Items {
		o.serviceAccounts = append(o.serviceAccounts, x.Namespace+"/"+x.Name)
	}
	secrets := &corev1.SecretList{}
	Expect(member.Client.List(ctx, secrets, sel)).To(Succeed())
	for _, x := range secrets.Items {
		o.secrets = append(o.secrets, x.Namespace+"/"+x.Name)
	}
	crs := &rbacv1.ClusterRoleList{}
	Expect(member.Client.List(ctx, crs, sel)).To(Succeed())
	for _, x := range crs.Items {
		o.clusterRoles = append(o.clusterRoles, x.Name)
	}
	crbs := &rbacv1.ClusterRoleBindingList{}
	Expect(member.Client.List(ctx, crbs, sel)).To(Succeed())
	for _, x := range crbs.Items {
		o.clusterBindings = append(o.clusterBindings, x.Name)
	}
	roles := &rbacv1.RoleList{}
	Expect(member.Client.List(ctx, roles, sel)).To(Succeed())
	for _, x := range roles.Items {
		o.roles = append(o.roles, x.Namespace+"/"+x.Name)
	}
	rbs := &rbacv1.RoleBindingList{}
	Expect(member.Client.List(ctx, rbs, sel)).To(Succeed())
	for _, x := range rbs.Items {
		o.roleBindings = append(o.roleBindings, x.Namespace+"/"+x.Name)
	}
	return o
}

func key(nsName string) client.ObjectKey {
	ns, name, found := strings.Cut(nsName, "/")
	if !found {
		return client.ObjectKey{Name: ns}
	}
	return client.ObjectKey{Namespace: ns, Name: name}
}

func gone(ctx context.Context, c client.Client, obj client.Object, k client.ObjectKey) func() bool {
	return func() bool { return apierrors.IsNotFound(c.Get(ctx, k, obj)) }
}

// fastProbeConfig is the KubeFedConfig the e2e specs run with: members
// probed every probePeriod, so that health changes show within seconds,
// and objects planned again without a member NotReady for two of them.
func fastProbeConfig() *corev1beta1.KubeFedConfig {
	return &corev1beta1.KubeFedConfig{
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: kubefedNS},
		Spec: corev1beta1.KubeFedConfigSpec{
			Scope:              corev1beta1.ClusterScoped,
			ControllerDuration: &corev1beta1.DurationConfig{UnavailableDelay: &metav1.Duration{Duration: 2 * probePeriod}},
			ClusterHealthCheck: &corev1beta1.ClusterHealthCheckConfig{
				Period:           &metav1.Duration{Duration: probePeriod},
				Timeout:          &metav1.Duration{Duration: time.Second},
				FailureThreshold: ptr.To[int64](2),
			},
		},
	}
}

var _ = Describe("Member clusters", Ordered, func() {
	var cm *framework.ControllerManager

	BeforeAll(func(ctx context.Context) {
		Expect(framework.EnsureNamespace(ctx, fw.Host.Client, kubefedNS)).To(Succeed())
		cfg := fastProbeConfig()
		Expect(client.IgnoreAlreadyExists(fw.Host.Client.Create(ctx, cfg))).To(Succeed())
		var err error
		cm, err = fw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "cm"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return cm.Stop() })

		for _, c := range fw.Clusters() {
			out, _, err := fw.Kubefedctl(ctx, "join", c.Name, "--cluster-context", c.Name,
				"--host-cluster-context", fw.Host.Name)
			Expect(err).NotTo(HaveOccurred())
			Expect(out).To(ContainSubstring(c.Name))
		}
	})

	It("makes the members and the host Ready, with version and node and resource summaries", func(ctx context.Context) {
		for _, c := range fw.Clusters() {
			Eventually(func() string { return conditionState(ctx, c.Name, corev1beta1.ClusterReady) }).
				WithTimeout(60*time.Second).WithPolling(time.Second).Should(Equal("True/ClusterReady"), c.Name)
			Eventually(func(g Gomega) {
				kfc := kubeFedCluster(ctx, c.Name)
				g.Expect(kfc.Status.KubernetesVersion).To(Equal("v1.37.2"))
				g.Expect(kfc.Status.NodeSummary).NotTo(BeNil())
				g.Expect(kfc.Status.APIEnablements).NotTo(BeEmpty())
				ready := condition(kfc, corev1beta1.ClusterReady)
				g.Expect(ready.LastTransitionTime).NotTo(BeNil())
				g.Expect(ptr.Deref(ready.Message, "")).To(Equal("/healthz responded with ok"))
			}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		}
		out, err := fw.Kubectl(ctx, "host", "-n", kubefedNS, "get", "kubefedclusters")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^NAME\s+AGE\s+READY`))
		Expect(out).To(MatchRegexp(`(?m)^member1\s+\S+\s+True`))
	})

	It("counts the Nodes of a member and sums their resources, zones and region", func(ctx context.Context) {
		m := fw.Members[0]
		for i, ready := range []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse} {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("e2e-node-%d", i),
				Labels: map[string]string{
					corev1.LabelTopologyZone:   fmt.Sprintf("zone-%c", 'a'+i%2),
					corev1.LabelTopologyRegion: "region-1",
				},
			}}
			Expect(m.Client.Create(ctx, node)).To(Succeed())
			node.Status = corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			}
			Expect(m.Client.Status().Update(ctx, node)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			kfc := kubeFedCluster(ctx, m.Name)
			g.Expect(kfc.Status.NodeSummary).To(Equal(&corev1beta1.NodeSummary{TotalNum: 3, ReadyNum: 2}))
			g.Expect(kfc.Status.Zones).To(ConsistOf("zone-a", "zone-b"))
			g.Expect(kfc.Status.Region).To(Equal(ptr.To("region-1")))
			g.Expect(kfc.Status.ResourceSummary).NotTo(BeNil())
			cpu := kfc.Status.ResourceSummary.Allocatable[corev1.ResourceCPU]
			g.Expect(cpu.String()).To(Equal("12"))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		// The other member has no nodes and no zones.
		other := kubeFedCluster(ctx, fw.Members[1].Name)
		Expect(other.Status.NodeSummary).To(Equal(&corev1beta1.NodeSummary{}))
		Expect(other.Status.Zones).To(BeEmpty())
	})

	It("marks a member whose apiserver stops Offline within 3 probe periods, and Ready again when it returns", func(ctx context.Context) {
		m := fw.Members[1]
		before := condition(kubeFedCluster(ctx, m.Name), corev1beta1.ClusterReady).LastTransitionTime.DeepCopy()
		Expect(m.Local.StopAPIServer()).To(Succeed())
		stopped := time.Now()
		Eventually(func() string { return conditionState(ctx, m.Name, corev1beta1.ClusterOffline) }).
			WithTimeout(3*probePeriod + 2*time.Second).WithPolling(200 * time.Millisecond).
			Should(Equal("True/ClusterNotReachable"))
		GinkgoWriter.Printf("member %s Offline after %s\n", m.Name, time.Since(stopped))
		Expect(conditionState(ctx, m.Name, corev1beta1.ClusterReady)).To(HavePrefix("False/"))
		for _, other := range []string{fw.Host.Name, fw.Members[0].Name} {
			Consistently(func() string { return conditionState(ctx, other, corev1beta1.ClusterReady) }).
				WithTimeout(2*probePeriod).Should(Equal("True/ClusterReady"), other)
		}
		Eventually(func() []string { return eventReasons(ctx, m.Name) }).WithTimeout(20 * time.Second).
			Should(ContainElement(HavePrefix("RetrievingClusterHealthFailed")))

		Expect(m.Local.StartAPIServer(ctx)).To(Succeed())
		Eventually(func() string { return conditionState(ctx, m.Name, corev1beta1.ClusterReady) }).
			WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal("True/ClusterReady"))
		after := condition(kubeFedCluster(ctx, m.Name), corev1beta1.ClusterReady).LastTransitionTime
		Expect(after.After(before.Time)).To(BeTrue(), "lastTransitionTime %s should move past %s", after, before)
		Expect(conditionState(ctx, m.Name, corev1beta1.ClusterOffline)).NotTo(Equal("True/ClusterNotReachable"))
	})

	It("says what is wrong with a cluster that has a wrong token, a bad CA or no Secret", func(ctx context.Context) {
		m := fw.Members[0]
		// The local clusters share one CA, so the bad CA is a fresh one.
		otherCA, err := framework.UnrelatedCA()
		Expect(err).NotTo(HaveOccurred())
		mk := func(name, secret string, ca []byte) {
			kfc := &corev1beta1.KubeFedCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kubefedNS},
				Spec: corev1beta1.KubeFedClusterSpec{
					APIEndpoint: m.Local.Server, CABundle: ca,
					SecretRef: corev1beta1.LocalSecretReference{Name: secret},
				},
			}
			Expect(fw.Host.Client.Create(ctx, kfc)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { _ = fw.Host.Client.Delete(ctx, kfc) })
		}
		wrong := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "wrong-token", Namespace: kubefedNS},
			Data:       map[string][]byte{"token": []byte("not-a-valid-token")},
		}
		Expect(fw.Host.Client.Create(ctx, wrong)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = fw.Host.Client.Delete(ctx, wrong) })

		mk("e2e-wrong-token", wrong.Name, m.Local.CAData)
		mk("e2e-bad-ca", wrong.Name, otherCA)
		mk("e2e-no-secret", "does-not-exist", m.Local.CAData)

		Eventually(func() string { return conditionState(ctx, "e2e-wrong-token", corev1beta1.ClusterReady) }).
			WithTimeout(30 * time.Second).Should(HavePrefix("False/"))
		Eventually(func() []string { return eventReasons(ctx, "e2e-wrong-token") }).WithTimeout(30 * time.Second).
			Should(ContainElement(And(HavePrefix("RetrievingClusterHealthFailed"), ContainSubstring("401"))))

		Eventually(func() string { return conditionState(ctx, "e2e-bad-ca", corev1beta1.ClusterReady) }).
			WithTimeout(30 * time.Second).Should(HavePrefix("False/"))
		Eventually(func() string {
			kfc := kubeFedCluster(ctx, "e2e-bad-ca")
			var msgs []string
			for _, c := range kfc.Status.Conditions {
				msgs = append(msgs, ptr.Deref(c.Message, ""))
			}
			return strings.Join(msgs, "; ")
		}).WithTimeout(30 * time.Second).Should(ContainSubstring("certificate"))

		Eventually(func() []string { return eventReasons(ctx, "e2e-no-secret") }).WithTimeout(30 * time.Second).
			Should(ContainElement(And(HavePrefix("MalformedClusterConfig"), ContainSubstring("does-not-exist"))))
		Expect(conditionState(ctx, "e2e-no-secret", corev1beta1.ClusterReady)).To(HavePrefix("False/"))
		for _, e := range append(eventReasons(ctx, "e2e-wrong-token"), eventReasons(ctx, "e2e-bad-ca")...) {
			Expect(e).NotTo(ContainSubstring("not-a-valid-token"), "an event printed the token")
		}
	})

	It("unjoins by removing every object join created, and joins again", func(ctx context.Context) {
		m := fw.Members[1]
		objs := findJoinedObjects(ctx, m, m.Name)
		Expect(objs.serviceAccounts).To(HaveLen(1))
		Expect(objs.secrets).NotTo(BeEmpty())
		Expect(objs.clusterRoles).NotTo(BeEmpty())
		Expect(objs.clusterBindings).NotTo(BeEmpty())

		_, _, err := fw.Kubefedctl(ctx, "unjoin", m.Name, "--cluster-context", m.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred())

		Eventually(gone(ctx, fw.Host.Client, &corev1beta1.KubeFedCluster{}, client.ObjectKey{Namespace: kubefedNS, Name: m.Name})).Should(BeTrue())
		Eventually(gone(ctx, fw.Host.Client, &corev1.Secret{}, client.ObjectKey{Namespace: kubefedNS, Name: objs.hostSecret})).Should(BeTrue())
		for _, n := range objs.serviceAccounts {
			Eventually(gone(ctx, m.Client, &corev1.ServiceAccount{}, key(n))).Should(BeTrue(), n)
		}
		for _, n := range objs.secrets {
			Eventually(gone(ctx, m.Client, &corev1.Secret{}, key(n))).Should(BeTrue(), n)
		}
		for _, n := range objs.clusterRoles {
			Eventually(gone(ctx, m.Client, &rbacv1.ClusterRole{}, key(n))).Should(BeTrue(), n)
		}
		for _, n := range objs.clusterBindings {
			Eventually(gone(ctx, m.Client, &rbacv1.ClusterRoleBinding{}, key(n))).Should(BeTrue(), n)
		}
		for _, n := range objs.roles {
			Eventually(gone(ctx, m.Client, &rbacv1.Role{}, key(n))).Should(BeTrue(), n)
		}
		for _, n := range objs.roleBindings {
			Eventually(gone(ctx, m.Client, &rbacv1.RoleBinding{}, key(n))).Should(BeTrue(), n)
		}
		Eventually(gone(ctx, m.Client, &corev1.Namespace{}, client.ObjectKey{Name: kubefedNS})).
			WithTimeout(90 * time.Second).Should(BeTrue())
		// The host's own namespace survives unjoining the host... checked below by unjoining nothing of it;
		// the host keeps its KubeFed namespace after a member is unjoined.
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: kubefedNS}, &corev1.Namespace{})).To(Succeed())

		_, _, err = fw.Kubefedctl(ctx, "join", m.Name, "--cluster-context", m.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred())
		waitReady(ctx, m.Name, 60*time.Second)
	})

	It("never deletes the host's own namespace when the host is unjoined", func(ctx context.Context) {
		_, _, err := fw.Kubefedctl(ctx, "unjoin", fw.Host.Name, "--cluster-context", fw.Host.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred())
		Eventually(gone(ctx, fw.Host.Client, &corev1beta1.KubeFedCluster{}, client.ObjectKey{Namespace: kubefedNS, Name: fw.Host.Name})).Should(BeTrue())
		Consistently(func() error {
			ns := &corev1.Namespace{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Name: kubefedNS}, ns); err != nil {
				return err
			}
			if ns.DeletionTimestamp != nil {
				return fmt.Errorf("namespace %s is being deleted", kubefedNS)
			}
			return nil
		}).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(cm.Exited()).To(BeFalse(), "the controller-manager must keep running")
		_, _, err = fw.Kubefedctl(ctx, "join", fw.Host.Name, "--cluster-context", fw.Host.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred())
	})

	It("holds the leader Lease kubefed-controller-manager", func(ctx context.Context) {
		lease := &coordinationv1.Lease{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: "kubefed-controller-manager"}, lease)).To(Succeed())
		Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(BeEmpty())
	})

	It("applies a changed KubeFedConfig without a process restart", func(ctx context.Context) {
		cfg := &corev1beta1.KubeFedConfig{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: corev1beta1.KubeFedConfigName}, cfg)).To(Succeed())
		cfg.Spec.ClusterHealthCheck.Period = &metav1.Duration{Duration: 3 * time.Second}
		Expect(fw.Host.Client.Update(ctx, cfg)).To(Succeed())
		Eventually(func() string { return framework.ReadFile(cm.LogPath) }).WithTimeout(30 * time.Second).
			Should(ContainSubstring("KubeFedConfig changed; restarting the controllers"))
		Expect(cm.Exited()).To(BeFalse())
		// The restarted controllers keep probing: a stopped member still goes Offline.
		m := fw.Members[0]
		Expect(m.Local.StopAPIServer()).To(Succeed())
		Eventually(func() string { return conditionState(ctx, m.Name, corev1beta1.ClusterOffline) }).
			WithTimeout(30 * time.Second).Should(Equal("True/ClusterNotReachable"))
		Expect(m.Local.StartAPIServer(ctx)).To(Succeed())
		Eventually(func() string { return conditionState(ctx, m.Name, corev1beta1.ClusterReady) }).
			WithTimeout(60 * time.Second).Should(Equal("True/ClusterReady"))
	})

	It("exports the cluster metrics KubeFed users scrape", func() {
		Eventually(func() string { s, _ := cm.Metrics(); return s }).WithTimeout(30 * time.Second).Should(And(
			MatchRegexp(`kubefedcluster_total\{cluster="member1",state="ready"\} 1`),
			ContainSubstring("cluster_health_status_duration_seconds_bucket"),
		))
	})
})
