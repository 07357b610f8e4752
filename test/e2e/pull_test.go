//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/dns"
	"github.com/kubefed-io/kubefed/pkg/kubefedctl"
	"github.com/kubefed-io/kubefed/test/framework"
)

const pullNS = "e2e-pull"

// member2 joins in Pull mode: its agent (controller-manager agent, a local
// process here as it would be a Deployment in the member) reaches the host
// with the token join made there; the host holds no credential for member2
// and its KubeFedCluster names an endpoint nobody can reach.
var _ = Describe("Pull mode", Ordered, func() {
	var (
		cm        *framework.ControllerManager
		agent     *exec.Cmd
		agentDone chan struct{}
		hostKC    string
		member2   *framework.Cluster
	)
	// The agent runs as the Deployment join put into member2 would run it:
	// its arguments, the Secret it mounts, the token of its ServiceAccount.
	var agentArgs []string
	startAgent := func() {
		GinkgoHelper()
		agent = exec.Command(fw.Bin("controller-manager"), agentArgs...)
		logFile, err := os.OpenFile(filepath.Join(GinkgoT().TempDir(), "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		Expect(err).NotTo(HaveOccurred())
		agent.Stdout, agent.Stderr = logFile, logFile
		Expect(agent.Start()).To(Succeed())
		done := make(chan struct{})
		agentDone = done
		go func() { _ = agent.Wait(); close(done) }()
	}
	stopAgent := func(sig syscall.Signal) {
		if agent == nil || agent.Process == nil {
			return
		}
		_ = agent.Process.Signal(sig)
		<-agentDone
		agent = nil
	}
	kfcCondition := func(ctx context.Context) string { return conditionState(ctx, member2.Name, corev1beta1.ClusterReady) }

	BeforeAll(func(ctx context.Context) {
		member2 = fw.Members[1]
		awaitMemberNamespacesGone(pullNS)
		// After startFederation's cleanups, which delete the federated
		// objects: member2's copies are its agent's to delete.
		wasJoined := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, &corev1beta1.KubeFedCluster{}) == nil
		DeferCleanup(func(ctx context.Context) {
			stopAgent(syscall.SIGTERM)
			if wasJoined {
				// As the specs before left it: joined in push mode.
				_, errOut, err := fw.Kubefedctl(ctx, "join", member2.Name, "--cluster-context", member2.Name, "--host-cluster-context", fw.Host.Name, "--error-on-existing=false")
				Expect(err).NotTo(HaveOccurred(), errOut)
				// Back in push mode, the agent's Deployment is gone.
				err = member2.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: kubefedctl.AgentDeploymentName}, &appsv1.Deployment{})
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the agent's Deployment after a push join: %v", err)
			}
		})
		startFederation(ctx, fastProbeConfig(), pullNS, &cm)
		// member2 again, in Pull mode.
		_, errOut, err := fw.Kubefedctl(ctx, "unjoin", member2.Name, "--cluster-context", member2.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		out, errOut, err := fw.Kubefedctl(ctx, "join", member2.Name, "--mode", "pull", "--agent-image", "e2e.example/kubefed:test",
			"--cluster-context", member2.Name, "--host-cluster-context", fw.Host.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring("Deployment " + kubefedNS + "/" + kubefedctl.AgentDeploymentName + " created in " + member2.Name))

		kfc := &corev1beta1.KubeFedCluster{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, kfc)).To(Succeed())
		Expect(kfc.Spec.Mode).To(Equal(corev1beta1.ClusterModePull))
		Expect(kfc.Spec.SecretRef.Name).To(BeEmpty())
		// Nobody can reach this endpoint (TEST-NET-1); the host never tries.
		Eventually(func() error {
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, kfc); err != nil {
				return err
			}
			kfc.Spec.APIEndpoint = "https://192.0.2.1:6443"
			return fw.Host.Client.Update(ctx, kfc)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// No Secret on the host carries a credential of member2.
		secrets := &corev1.SecretList{}
		Expect(fw.Host.Client.List(ctx, secrets, client.InNamespace(kubefedNS), client.MatchingLabels{kubefedctl.JoinedClusterLabel: member2.Name})).To(Succeed())
		for _, s := range secrets.Items {
			Expect(s.Name).To(Equal("kubefed-agent-"+member2.Name+"-token"), "a host Secret for member2 that is not its agent's own token")
		}

		// The agent's Deployment in member2 (no node runs its Pod here).
		deployment := &appsv1.Deployment{}
		Expect(member2.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: kubefedctl.AgentDeploymentName}, deployment)).To(Succeed())
		pod := deployment.Spec.Template.Spec
		Expect(pod.Containers[0].Image).To(Equal("e2e.example/kubefed:test"))
		// The agent's host kubeconfig, as the Pod mounts it.
		Expect(pod.Volumes[0].Secret.SecretName).To(Equal(kubefedctl.AgentHostSecret))
		dir := GinkgoT().TempDir()
		agentArgs, err = framework.AgentArgs(ctx, member2, deployment, dir, "e2e-agent")
		Expect(err).NotTo(HaveOccurred())
		hostKC = filepath.Join(dir, "host-"+kubefedctl.AgentHostKubeconfigKey)
		Expect(agentArgs).To(ContainElements("agent", "--cluster-name="+member2.Name, "--leader-elect=true", "--identity=e2e-agent", "--host-kubeconfig="+hostKC))

		// Without an agent the member is out of reach.
		Eventually(kfcCondition).WithContext(ctx).WithTimeout(30 * time.Second).Should(Equal("False/ClusterNotReady"))
		startAgent()
		Eventually(kfcCondition).WithContext(ctx).WithTimeout(60*time.Second).Should(Equal("True/ClusterReady"), describeCluster(ctx, member2.Name))
		// What the host cannot read itself comes with the heartbeat.
		Eventually(func(g Gomega) {
			g.Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, kfc)).To(Succeed())
			g.Expect(kfc.Status.KubernetesVersion).To(Equal("v1.37.2"))
			g.Expect(kfc.Status.NodeSummary).NotTo(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(fw.Host.Client.Create(ctx, fedObject("Namespace", pullNS, pullNS, map[string]any{}, nil, nil))).To(Succeed())
	})

	It("creates, updates and deletes a federated object in the pull member through its agent, with status and remote status on the host", func(ctx context.Context) {
		labels := map[string]any{"app": "web"}
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", pullNS, "web", map[string]any{"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}},
		}}, []string{"member1", member2.Name}, []any{map[string]any{"clusterName": member2.Name, "clusterOverrides": []any{
			map[string]any{"path": "/spec/replicas", "value": int64(3)}}}}))).To(Succeed())

		replicas := func(c *framework.Cluster) func() int64 {
			return func() int64 {
				d := memberObject(ctx, c, "apps/v1", "Deployment", pullNS, "web")
				if d == nil {
					return -1
				}
				n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
				return n
			}
		}
		Eventually(replicas(member2)).WithTimeout(60 * time.Second).Should(Equal(int64(3)))
		Eventually(replicas(fw.Members[0])).WithTimeout(60 * time.Second).Should(Equal(int64(1)))
		d := memberObject(ctx, member2, "apps/v1", "Deployment", pullNS, "web")
		Expect(d.GetLabels()).To(HaveKeyWithValue(corev1beta1.ManagedByKubeFedLabelKey, "true"))

		// Both entries, the pull member's written by its agent, with its
		// copy's status; the condition adds them up.
		Eventually(func(g Gomega) {
			f := fedGet(ctx, "Deployment", pullNS, "web")
			g.Expect(propagationState(f)).To(Equal("True| member1 member2"))
			clusters, _, _ := unstructured.NestedSlice(f.Object, "status", "clusters")
			for _, c := range clusters {
				if m := c.(map[string]any); m["name"] == member2.Name {
					live := memberObject(ctx, member2, "apps/v1", "Deployment", pullNS, "web")
					g.Expect(m["remoteStatus"]).To(Equal(live.Object["status"]))
					g.Expect(m["ready"]).To(Equal("0/3"))
				}
			}
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("an update reaches the pull member")
		setTemplateImage(ctx, pullNS, "web", "nginx:1.28")
		Eventually(func() string {
			d := memberObject(ctx, member2, "apps/v1", "Deployment", pullNS, "web")
			cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			return cs[0].(map[string]any)["image"].(string)
		}).WithTimeout(60 * time.Second).Should(Equal("nginx:1.28"))

		By("a deletion removes the pull member's copy before the object goes")
		Expect(fw.Host.Client.Delete(ctx, fedGet(ctx, "Deployment", pullNS, "web"))).To(Succeed())
		Eventually(replicas(member2)).WithTimeout(60 * time.Second).Should(Equal(int64(-1)))
		Eventually(func() bool { return fedGet(ctx, "Deployment", pullNS, "web") == nil }).WithTimeout(60 * time.Second).Should(BeTrue())
	})

	It("keeps the pull member's entry while the placement cannot be computed, and a deletion then waits for its agent to remove its copy", func(ctx context.Context) {
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", pullNS, "unplaceable", map[string]any{"data": map[string]any{"k": "v"}},
			[]string{member2.Name}, nil))).To(Succeed())
		copyOf := func() *unstructured.Unstructured {
			return memberObject(ctx, member2, "v1", "ConfigMap", pullNS, "unplaceable")
		}
		Eventually(copyOf).WithTimeout(60 * time.Second).ShouldNot(BeNil())
		Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", pullNS, "unplaceable")) }).
			WithTimeout(60 * time.Second).Should(Equal("True| " + member2.Name))

		By("a placement that cannot be computed leaves the copy and its entry as they are")
		Eventually(func() error {
			f := fedGet(ctx, "ConfigMap", pullNS, "unplaceable")
			if f == nil {
				return fmt.Errorf("gone")
			}
			f.Object["spec"].(map[string]any)["placement"] = map[string]any{
				"clusterSelector": map[string]any{"matchLabels": map[string]any{"not a label key!": "x"}}}
			return fw.Host.Client.Update(ctx, f)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", pullNS, "unplaceable")) }).
			WithTimeout(60 * time.Second).Should(Equal("False/" + typesv1beta1.ReasonComputePlacementFailed + "| " + member2.Name))
		Expect(copyOf()).NotTo(BeNil())

		By("the deletion waits for the agent, which removes its copy")
		Expect(fw.Host.Client.Delete(ctx, fedGet(ctx, "ConfigMap", pullNS, "unplaceable"))).To(Succeed())
		Eventually(func() bool { return fedGet(ctx, "ConfigMap", pullNS, "unplaceable") == nil }).WithTimeout(90 * time.Second).Should(BeTrue())
		Expect(copyOf()).To(BeNil(), "the pull member's copy outlived its federated object")
	})

	It("splits an RSP's replicas onto the pull member, adopts what it holds and orphans on request, as for push members", func(ctx context.Context) {
		By("a ReplicaSchedulingPreference over a push and the pull member")
		labels := map[string]any{"app": "split"}
		Expect(fw.Host.Client.Create(ctx, fedObject("Deployment", pullNS, "split", map[string]any{"spec": map[string]any{
			"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}},
		}}, []string{"member1", member2.Name}, nil))).To(Succeed())
		replicasIn := func(c *framework.Cluster) func() int64 {
			return func() int64 {
				d := memberObject(ctx, c, "apps/v1", "Deployment", pullNS, "split")
				if d == nil {
					return -1
				}
				n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
				return n
			}
		}
		Expect(fw.Host.Client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.kubefed.io/v1alpha1", "kind": "ReplicaSchedulingPreference",
			"metadata": map[string]any{"name": "split", "namespace": pullNS},
			"spec": map[string]any{"targetKind": "FederatedDeployment", "totalReplicas": int64(6), "clusters": map[string]any{
				"member1": map[string]any{"weight": int64(2)}, member2.Name: map[string]any{"weight": int64(1)}}},
		}})).To(Succeed())
		Eventually(replicasIn(member2)).WithTimeout(60 * time.Second).Should(Equal(int64(2)))
		Eventually(replicasIn(fw.Members[0])).WithTimeout(60 * time.Second).Should(Equal(int64(4)))

		By("adopting a ConfigMap the pull member already has")
		Expect(member2.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopt-me", Namespace: pullNS}, Data: map[string]string{"old": "1"}})).To(Succeed())
		Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", pullNS, "adopt-me", map[string]any{"data": map[string]any{"new": "1"}}, []string{member2.Name}, nil))).To(Succeed())
		Eventually(func(g Gomega) {
			c := &corev1.ConfigMap{}
			g.Expect(member2.Client.Get(ctx, client.ObjectKey{Namespace: pullNS, Name: "adopt-me"}, c)).To(Succeed())
			g.Expect(c.Data).To(Equal(map[string]string{"new": "1"}))
			g.Expect(c.Labels).To(HaveKeyWithValue(corev1beta1.ManagedByKubeFedLabelKey, "true"))
		}).WithTimeout(60 * time.Second).Should(Succeed())

		By("orphaning the pull member's copy on deletion")
		orphan := fedObject("ConfigMap", pullNS, "orphan", map[string]any{"data": map[string]any{"k": "v"}}, []string{member2.Name}, nil)
		orphan.SetAnnotations(map[string]string{corev1beta1.OrphanManagedResourcesAnnotation: "true"})
		Expect(fw.Host.Client.Create(ctx, orphan)).To(Succeed())
		Eventually(func() *unstructured.Unstructured {
			return memberObject(ctx, member2, "v1", "ConfigMap", pullNS, "orphan")
		}).
			WithTimeout(60 * time.Second).ShouldNot(BeNil())
		Expect(fw.Host.Client.Delete(ctx, orphan)).To(Succeed())
		Eventually(func() bool { return fedGet(ctx, "ConfigMap", pullNS, "orphan") == nil }).WithTimeout(60 * time.Second).Should(BeTrue())
		o := memberObject(ctx, member2, "v1", "ConfigMap", pullNS, "orphan")
		Expect(o).NotTo(BeNil(), "the orphaned copy")
		Expect(o.GetLabels()).NotTo(HaveKey(corev1beta1.ManagedByKubeFedLabelKey))
	})

	It("gives the agent's host token no Secret and no other cluster", func(ctx context.Context) {
		cfg, err := clientcmd.BuildConfigFromFlags("", hostKC)
		Expect(err).NotTo(HaveOccurred())
		agentClient, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(apierrors.IsForbidden(agentClient.List(ctx, &corev1.SecretList{}, client.InNamespace(kubefedNS)))).To(BeTrue(), "listing Secrets")
		Expect(apierrors.IsForbidden(agentClient.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: "member1"}, &corev1beta1.KubeFedCluster{}))).To(BeTrue(), "reading member1's KubeFedCluster")
		Expect(agentClient.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, &corev1beta1.KubeFedCluster{})).To(Succeed(), "reading its own KubeFedCluster")
		Expect(apierrors.IsForbidden(agentClient.Create(ctx, fedObject("ConfigMap", pullNS, "sneaky", map[string]any{}, nil, nil)))).To(BeTrue(), "creating a federated object")
	})

	It("publishes the pull member's Service in a ServiceDNSRecord through its agent, beside a push member's", func(ctx context.Context) {
		const svc = "dns-web"
		domain := &dnsv1alpha1.Domain{ObjectMeta: metav1.ObjectMeta{Name: "pull-fed", Namespace: kubefedNS}, Domain: "pull.example"}
		Expect(fw.Host.Client.Create(ctx, domain)).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, domain)) })
		members := []*framework.Cluster{fw.Members[0], member2}
		fsvc := fedObject("Service", pullNS, svc, map[string]any{"spec": map[string]any{
			"type": "LoadBalancer", "selector": map[string]any{"app": svc},
			"ports": []any{map[string]any{"name": "http", "port": int64(80)}},
		}}, []string{members[0].Name, members[1].Name}, nil)
		Expect(fw.Host.Client.Create(ctx, fsvc)).To(Succeed())
		// The spec plays each member's cloud provider (TEST-NET addresses).
		ips := []string{"192.0.2.11", "192.0.2.12"}
		for i, m := range members {
			Eventually(func() error {
				s := &corev1.Service{}
				if err := m.Client.Get(ctx, client.ObjectKey{Namespace: pullNS, Name: svc}, s); err != nil {
					return err
				}
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ips[i]}}
				return m.Client.Status().Update(ctx, s)
			}).WithTimeout(60*time.Second).Should(Succeed(), "the Service in %s", m.Name)
		}
		rec := &dnsv1alpha1.ServiceDNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: pullNS},
			Spec:       dnsv1alpha1.ServiceDNSRecordSpec{DomainRef: domain.Name, RecordTTL: 5, AllowServiceWithoutEndpoints: true},
		}
		Expect(fw.Host.Client.Create(ctx, rec)).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, rec)) })

		// member2's entry is its agent's: the host cannot read its Service.
		Eventually(func(g Gomega) {
			got := &dnsv1alpha1.ServiceDNSRecord{}
			g.Expect(fw.Host.Client.Get(ctx, client.ObjectKeyFromObject(rec), got)).To(Succeed())
			entries := map[string]string{}
			for _, e := range got.Status.DNS {
				var a []string
				for _, in := range e.LoadBalancer.Ingress {
					a = append(a, in.IP)
				}
				entries[e.Cluster] = strings.Join(a, ",")
			}
			g.Expect(entries).To(HaveKeyWithValue(members[0].Name, ips[0]))
			g.Expect(entries).To(HaveKeyWithValue(member2.Name, ips[1]))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, dns.ConditionReady)).To(BeTrue())
			// The global name the DNSEndpoint publishes answers with both.
			ep := &dnsv1alpha1.DNSEndpoint{}
			g.Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: pullNS, Name: "service-" + svc}, ep)).To(Succeed())
			global := strings.Join([]string{svc, pullNS, domain.Name, "svc", domain.Domain}, ".")
			var targets []string
			for _, e := range ep.Spec.Endpoints {
				if e.DNSName == global {
					targets = e.Targets
				}
			}
			g.Expect(targets).To(ConsistOf(ips[0], ips[1]))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the pull member's address changes; its entry follows")
		Eventually(func() error {
			s := &corev1.Service{}
			if err := member2.Client.Get(ctx, client.ObjectKey{Namespace: pullNS, Name: svc}, s); err != nil {
				return err
			}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.13"}}
			return member2.Client.Status().Update(ctx, s)
		}).Should(Succeed())
		Eventually(func() []string {
			got := &dnsv1alpha1.ServiceDNSRecord{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKeyFromObject(rec), got); err != nil {
				return nil
			}
			var out []string
			for _, e := range got.Status.DNS {
				for _, in := range e.LoadBalancer.Ingress {
					out = append(out, e.Cluster+"="+in.IP)
				}
			}
			return out
		}).WithTimeout(60 * time.Second).Should(ConsistOf(members[0].Name+"="+ips[0], member2.Name+"=192.0.2.13"))
		Expect(fw.Host.Client.Delete(ctx, fsvc)).To(Succeed())
		Eventually(func() bool { return fedGet(ctx, "Service", pullNS, svc) == nil }).WithTimeout(60 * time.Second).Should(BeTrue())
	})

	It("converges with no copy written twice after its agent is killed mid-wave and started again", func(ctx context.Context) {
		created, refused := requestCount(ctx, member2, "POST", "configmaps", "201"), requestCount(ctx, member2, "POST", "configmaps", "409")
		// What the wave's copies go through from now on; the request
		// counters count every ConfigMap of the member.
		writes, err := framework.WatchWrites(ctx, member2, pullNS, "wave-")
		Expect(err).NotTo(HaveOccurred())
		const n = 30
		mk := func(i int) {
			GinkgoHelper()
			Expect(fw.Host.Client.Create(ctx, fedObject("ConfigMap", pullNS, "wave-"+strconv.Itoa(i),
				map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, []string{member2.Name}, nil))).To(Succeed())
		}
		for i := range n / 2 {
			mk(i)
		}
		stopAgent(syscall.SIGKILL)
		for i := n / 2; i < n; i++ {
			mk(i)
		}
		startAgent()
		for i := range n {
			Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", pullNS, "wave-"+strconv.Itoa(i))) }).
				WithTimeout(90*time.Second).Should(Equal("True| "+member2.Name), "wave-%d", i)
		}
		Expect(framework.WaveCopies(ctx, member2, pullNS, "wave-")).To(Equal(n))
		// No copy made twice: no create refused as existing, each copy
		// created once and never deleted to be made again (a create in
		// flight when the agent died may have been carried out or not).
		served := requestCount(ctx, member2, "POST", "configmaps", "201") - created
		AddReportEntry("creates in "+member2.Name, fmt.Sprintf("%d served (201) for %d copies", served, n))
		Expect(requestCount(ctx, member2, "POST", "configmaps", "409")-refused).To(BeZero(), "creates refused as existing")
		// Nor written twice: the agent started again finds the copies up
		// to date.
		expectEachWrittenOnce(ctx, writes, n, member2.Name)
	})

	It("is NotReady while its agent is gone, through the missing heartbeat, and Ready when it returns", func(ctx context.Context) {
		stopAgent(syscall.SIGKILL)
		Eventually(func() string {
			kfc := &corev1beta1.KubeFedCluster{}
			if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member2.Name}, kfc); err != nil {
				return err.Error()
			}
			return conditionState(ctx, member2.Name, corev1beta1.ClusterOffline)
		}).WithTimeout(60 * time.Second).Should(Equal("True/ClusterNotReachable"))
		Expect(kfcCondition(ctx)).To(Equal("False/ClusterNotReady"))
		// As for a push member that is not ready, the objects placed on it
		// say so: the control plane writes the entries its agent cannot.
		for _, name := range []string{"wave-0", "wave-29"} {
			Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", pullNS, name)) }).
				WithTimeout(30*time.Second).Should(Equal("False/CheckClusters| "+member2.Name+"=ClusterNotReady"), name)
		}
		startAgent()
		Eventually(kfcCondition).WithContext(ctx).WithTimeout(60 * time.Second).Should(Equal("True/ClusterReady"))
		// Back, the agent reports its copies again.
		for _, name := range []string{"wave-0", "wave-29"} {
			Eventually(func() string { return propagationState(fedGet(ctx, "ConfigMap", pullNS, name)) }).
				WithTimeout(60*time.Second).Should(Equal("True| "+member2.Name), name)
		}
	})
})
