package kubefedctl

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// The agent's host roles read federated objects and its own cluster only:
// no rule reaches Secrets or another KubeFedCluster, and none writes a
// federated object itself (only its status), in either scope.
func TestAgentRoleGrantsNoSecretAndNoOtherCluster(t *testing.T) {
	r := registration{clusterName: "edge", hostClusterName: "host", namespace: "kube-federation-system"}.agentRegistration()
	if r.serviceAccountName() != "kubefed-agent-edge" {
		t.Errorf("ServiceAccount %s", r.serviceAccountName())
	}
	for _, scope := range []corev1beta1.Scope{corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped} {
		clusterRole, role := agentRoles(r, []string{"types.kubefed.io", "fed.example.com"}, scope)
		if clusterRole.Name != "kubefed-agent:edge" || role.Name != "kubefed-agent:edge" || role.Namespace != r.namespace {
			t.Errorf("%s: names %s, %s/%s", scope, clusterRole.Name, role.Namespace, role.Name)
		}
		for _, rule := range slices.Concat(clusterRole.Rules, role.Rules) {
			for _, g := range rule.APIGroups {
				if g == "" && slices.ContainsFunc(rule.Resources, func(res string) bool { return res == "secrets" || res == "*" }) {
					t.Errorf("%s: rule %+v reaches Secrets", scope, rule)
				}
				if g == "core.kubefed.io" && slices.Contains(rule.Resources, "kubefedclusters") && !slices.Equal(rule.ResourceNames, []string{"edge"}) {
					t.Errorf("%s: rule %+v reaches other clusters", scope, rule)
				}
				if slices.Contains(rule.Resources, "*") && slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					t.Errorf("%s: rule %+v writes federated objects", scope, rule)
				}
			}
		}
	}
}

// With Namespaced scope the agent reads federated objects in the control
// plane's namespace alone: the cluster-wide role holds kube-system's UID
// only, and the Role everything else.
func TestNamespacedAgentReadsItsNamespaceOnly(t *testing.T) {
	r := registration{clusterName: "edge", hostClusterName: "host", namespace: "tenant"}.agentRegistration()
	clusterRole, role := agentRoles(r, []string{"types.kubefed.io"}, corev1beta1.NamespaceScoped)
	if len(clusterRole.Rules) != 1 || !slices.Equal(clusterRole.Rules[0].Resources, []string{"namespaces"}) ||
		!slices.Equal(clusterRole.Rules[0].ResourceNames, []string{"kube-system"}) {
		t.Errorf("cluster-wide rules %+v", clusterRole.Rules)
	}
	grants := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		return slices.ContainsFunc(rules, func(rule rbacv1.PolicyRule) bool {
			return slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb)
		})
	}
	for _, want := range [][3]string{
		{"types.kubefed.io", "*", "watch"}, {"types.kubefed.io", "*/status", "update"},
		{"core.kubefed.io", "kubefedconfigs", "get"}, {"multiclusterdns.kubefed.io", "servicednsrecords/status", "update"},
		{"coordination.k8s.io", "leases", "update"},
	} {
		if !grants(role.Rules, want[0], want[1], want[2]) {
			t.Errorf("the namespaced Role does not %s %s.%s", want[2], want[1], want[0])
		}
	}
	cluster, _ := agentRoles(r, []string{"types.kubefed.io"}, corev1beta1.ClusterScoped)
	if !grants(cluster.Rules, "types.kubefed.io", "*", "watch") {
		t.Error("with Cluster scope the ClusterRole does not read federated objects")
	}
}

// The agent renews its own heartbeat Lease and no other: join creates the
// Lease, and the Role names it.
func TestAgentMayRenewItsOwnLeaseOnly(t *testing.T) {
	r := registration{clusterName: "edge", hostClusterName: "host", namespace: "kube-federation-system"}.agentRegistration()
	clusterRole, role := agentRoles(r, []string{"types.kubefed.io"}, corev1beta1.ClusterScoped)
	for _, rule := range clusterRole.Rules {
		if slices.Contains(rule.Resources, "leases") {
			t.Errorf("the cluster-wide role reaches Leases: %+v", rule)
		}
	}
	if role.Namespace != r.namespace || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, []string{"kubefed-agent-edge"}) ||
		slices.Contains(role.Rules[0].Verbs, "create") {
		t.Errorf("lease role %+v", role)
	}
}

// The member Secret the agent reads the host's kubeconfig from is refused
// when join did not write it for this cluster (another host's agent may
// read it), and taken over only with --error-on-existing=false.
func TestJoinPullRefusesAnAgentSecretItDidNotWrite(t *testing.T) {
	w := newWorld(t)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: AgentHostSecret, Namespace: testNamespace, Labels: map[string]string{JoinedClusterLabel: "east"}},
		Data:       map[string][]byte{AgentHostKubeconfigKey: []byte("another host's")},
	}
	if _, err := w.member.kube.CoreV1().Secrets(testNamespace).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := w.run(t, "join", "member1", "--mode", "pull", "--install-agent=false")
	if err == nil || !strings.Contains(err.Error()+errOut, "Secret kube-federation-system/"+AgentHostSecret) {
		t.Fatalf("join over another join's agent Secret: err %v, stderr %s", err, errOut)
	}
	live, err := w.member.kube.CoreV1().Secrets(testNamespace).Get(context.Background(), AgentHostSecret, metav1.GetOptions{})
	if err != nil || string(live.Data[AgentHostKubeconfigKey]) != "another host's" {
		t.Fatalf("the refused join changed the Secret: %v %q", err, live.Data)
	}
	w.mustRun(t, "join", "member1", "--mode", "pull", "--install-agent=false", "--error-on-existing=false")
	live, err = w.member.kube.CoreV1().Secrets(testNamespace).Get(context.Background(), AgentHostSecret, metav1.GetOptions{})
	if err != nil || string(live.Data[AgentHostKubeconfigKey]) == "another host's" {
		t.Errorf("taken over with --error-on-existing=false: %v %q", err, live.Data)
	}
}

// A host context that skips TLS verification is warned about in Pull mode
// too: the agent's kubeconfig for the host skips it likewise.
func TestJoinPullWarnsOfAnInsecureHostContext(t *testing.T) {
	w := newWorld(t)
	w.host.insecure = true
	_, errOut, err := w.run(t, "join", "member1", "--mode", "pull", "--install-agent=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, `context "host" skips TLS verification`) {
		t.Errorf("no warning on stderr: %q", errOut)
	}
}

// Moving a member from push to pull: the KubeFedCluster is switched on a
// fresh read, as the cluster controller writes its status meanwhile, and
// the push host Secret goes only once the switch is done; a switch that
// fails leaves the Secret the still Push-mode KubeFedCluster refers to.
func TestJoinPullFromPushSwitchesTheClusterBeforeDroppingItsSecret(t *testing.T) {
	t.Run("status written meanwhile", func(t *testing.T) {
		w := newWorld(t)
		w.mustRun(t, "join", "member1")
		pushSecret := w.hostSecret(t).Name
		statusWritten := false
		w.host.cluster.fed = interceptor.NewClient(w.host.fed, interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*corev1beta1.KubeFedCluster); ok && !statusWritten {
					// The cluster controller's probe lands between join's
					// read and its write.
					statusWritten = true
					fresh := &corev1beta1.KubeFedCluster{}
					if err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
						return err
					}
					fresh.Status.KubernetesVersion = "v1.31.0"
					if err := c.Update(ctx, fresh); err != nil {
						return err
					}
				}
				return c.Update(ctx, obj, opts...)
			},
		})
		w.mustRun(t, "join", "member1", "--mode", "pull", "--install-agent=false", "--error-on-existing=false")
		kfc := getKFC(t, w.host, "member1")
		if !kfc.PullMode() || kfc.Spec.SecretRef.Name != "" || kfc.Status.KubernetesVersion != "v1.31.0" {
			t.Errorf("KubeFedCluster mode %q, secretRef %q, status version %q", kfc.Spec.Mode, kfc.Spec.SecretRef.Name, kfc.Status.KubernetesVersion)
		}
		if _, err := w.host.kube.CoreV1().Secrets(testNamespace).Get(context.Background(), pushSecret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the push host Secret %s outlived the switch to pull: %v", pushSecret, err)
		}
	})
	t.Run("switch fails", func(t *testing.T) {
		w := newWorld(t)
		w.mustRun(t, "join", "member1")
		pushSecret := w.hostSecret(t).Name
		w.host.cluster.fed = interceptor.NewClient(w.host.fed, interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*corev1beta1.KubeFedCluster); ok {
					return apierrors.NewForbidden(schema.GroupResource{Group: "core.kubefed.io", Resource: "kubefedclusters"}, obj.GetName(), errors.New("denied"))
				}
				return c.Update(ctx, obj, opts...)
			},
		})
		if _, _, err := w.run(t, "join", "member1", "--mode", "pull", "--install-agent=false", "--error-on-existing=false"); err == nil {
			t.Fatal("join succeeded though the KubeFedCluster could not be switched")
		}
		kfc := getKFC(t, w.host, "member1")
		if kfc.PullMode() || kfc.Spec.SecretRef.Name != pushSecret {
			t.Errorf("KubeFedCluster mode %q, secretRef %q", kfc.Spec.Mode, kfc.Spec.SecretRef.Name)
		}
		if _, err := w.host.kube.CoreV1().Secrets(testNamespace).Get(context.Background(), pushSecret, metav1.GetOptions{}); err != nil {
			t.Errorf("the Push-mode KubeFedCluster lost its Secret %s: %v", pushSecret, err)
		}
	})
}
