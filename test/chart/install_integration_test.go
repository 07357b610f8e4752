//go:build integration

package chart

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// chartContext is the only context of the kubeconfig the controller-manager
// runs with: the host, as the chart's ServiceAccount.
const chartContext = "chart-serviceaccount"

// install is one release of the chart on the test host.
type install struct {
	scope     corev1beta1.Scope
	namespace string
	release   string
}

// controlPlane is an installed release with its controller-manager running
// out of cluster on the release's ServiceAccount token.
type controlPlane struct {
	install
	fw             *framework.Framework
	serviceAccount string
	cm             *framework.ControllerManager
}

// TestChartInstall installs the chart into a real host apiserver, once per
// scope, and runs the controller-manager with nothing but the token of the
// chart's ServiceAccount: members join and become Ready, the default types
// report their propagation controllers Running, leader election and events
// work, and not one request is forbidden. SubjectAccessReviews show the
// rights stop where the chart says they do.
func TestChartInstall(t *testing.T) {
	helm := newHelm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	fw := startHostAndMember(ctx, t)

	// The releases share the host and its CRDs; each runs its own
	// controller-manager, stopped before the next starts.
	for _, in := range []install{
		{scope: corev1beta1.ClusterScoped, namespace: corev1beta1.DefaultKubeFedNamespace, release: "kubefed"},
		{scope: corev1beta1.NamespaceScoped, namespace: "kubefed-tenant", release: "tenant"},
	} {
		t.Run(string(in.scope), func(t *testing.T) {
			cp := installChart(ctx, t, fw, helm, in)
			cp.checkScopeCannotChange(ctx, t, helm)
			cp.checkRights(ctx, t)
			cp.start(ctx, t)
			cp.checkMemberJoins(ctx, t)
			cp.checkDefaultTypesRun(ctx, t)
			cp.checkLeaderElection(ctx, t)
			cp.checkLeasePriority(ctx, t)
			cp.checkClusterEvents(ctx, t)
			cp.checkNothingForbidden(t)
		})
	}
}

// startHostAndMember builds the binaries the install tests run and starts a
// fresh host with one member, stopped when the test ends.
func startHostAndMember(ctx context.Context, t *testing.T) *framework.Framework {
	t.Helper()
	for _, name := range []string{"controller-manager", "kubefedctl"} {
		binary(t, name, "make build")
	}
	// API Priority and Fairness, which the local clusters leave off, is on
	// here: the chart's FlowSchema is checked against it.
	fw, err := framework.StartWithArgs(ctx, t.TempDir(), 1, testWriter{t},
		map[localcluster.Component][]string{localcluster.APIServer: {"--enable-priority-and-fairness=true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fw.Stop(); err != nil {
			t.Error(err)
		}
	})
	return fw
}

// testWriter sends the local clusters' progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// eventually polls cond until it holds, failing with its last state.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
}

// installChart installs the chart and finds its ServiceAccount. The health
// checks probe every 2s so that members become Ready quickly.
func installChart(ctx context.Context, t *testing.T, fw *framework.Framework, helm *helmCLI, in install) *controlPlane {
	t.Helper()
	args := []string{"install", in.release, chartDir,
		"--namespace", in.namespace, "--create-namespace",
		"--kubeconfig", fw.Kubeconfig, "--kube-context", fw.Host.Name,
		"--set", "global.scope=" + string(in.scope),
		"--set", "kubefedConfig.clusterHealthCheck.period=2s",
	}
	if _, err := helm.run(args...); err != nil {
		t.Fatal(err)
	}
	c := fw.Host.Client
	var cfg corev1beta1.KubeFedConfig
	if err := c.Get(ctx, client.ObjectKey{Namespace: in.namespace, Name: corev1beta1.KubeFedConfigName}, &cfg); err != nil {
		t.Fatalf("the chart's KubeFedConfig: %v", err)
	}
	if cfg.Spec.Scope != in.scope {
		t.Errorf("KubeFedConfig scope %s, want %s", cfg.Spec.Scope, in.scope)
	}
	var sas corev1.ServiceAccountList
	if err := c.List(ctx, &sas, client.InNamespace(in.namespace), client.MatchingLabels{
		"app.kubernetes.io/instance": in.release, "app.kubernetes.io/component": "controller-manager",
	}); err != nil || len(sas.Items) != 1 {
		t.Fatalf("want the chart's one ServiceAccount in %s, found %d (%v)", in.namespace, len(sas.Items), err)
	}
	return &controlPlane{install: in, fw: fw, serviceAccount: sas.Items[0].Name}
}

// checkScopeCannotChange upgrades the release to the other scope: the
// chart refuses before anything is applied, and the rights stay those of
// the installed scope (checkRights, next).
func (cp *controlPlane) checkScopeCannotChange(ctx context.Context, t *testing.T, helm *helmCLI) {
	t.Helper()
	other := corev1beta1.NamespaceScoped
	if cp.scope == corev1beta1.NamespaceScoped {
		other = corev1beta1.ClusterScoped
	}
	_, err := helm.run("upgrade", cp.release, chartDir, "--namespace", cp.namespace, "--reuse-values",
		"--kubeconfig", cp.fw.Kubeconfig, "--kube-context", cp.fw.Host.Name, "--set", "global.scope="+string(other))
	if err == nil || !strings.Contains(err.Error(), "which cannot change") {
		t.Fatalf("helm upgrade to scope %s: %v, want a refusal naming the KubeFedConfig's scope", other, err)
	}
	var cfg corev1beta1.KubeFedConfig
	if err := cp.fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: cp.namespace, Name: corev1beta1.KubeFedConfigName}, &cfg); err != nil || cfg.Spec.Scope != cp.scope {
		t.Fatalf("KubeFedConfig after the refused upgrade: %+v, %v", cfg.Spec, err)
	}
}

// federationNamespace is a namespace federated objects may live in: any
// with Cluster scope, only the release namespace with Namespaced scope.
func (cp *controlPlane) federationNamespace() string {
	if cp.scope == corev1beta1.ClusterScoped {
		return "demo"
	}
	return cp.namespace
}

// access is one request the ServiceAccount might make.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		r += " " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, r, where)
}

// checkRights asks the apiserver what the chart's ServiceAccount may do:
// what the controller-manager needs, and not what it does not.
func (cp *controlPlane) checkRights(ctx context.Context, t *testing.T) {
	t.Helper()
	ns, fed := cp.namespace, cp.federationNamespace()
	allowed := []access{
		{verb: "get", resource: "secrets", namespace: ns},
		{verb: "watch", resource: "secrets", namespace: ns},
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: ns},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "kubefed-controller-manager"},
		// Pull-mode members' heartbeats.
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "kubefed-agent-edge1"},
		{verb: "create", resource: "events", namespace: ns},
		{verb: "patch", group: "events.k8s.io", resource: "events", namespace: ns},
		{verb: "watch", group: "core.kubefed.io", resource: "kubefedclusters", namespace: ns},
		{verb: "patch", group: "core.kubefed.io", resource: "kubefedclusters", subresource: "status", namespace: ns},
		{verb: "update", group: "core.kubefed.io", resource: "federatedtypeconfigs", namespace: ns},
		{verb: "patch", group: "core.kubefed.io", resource: "federatedtypeconfigs", subresource: "status", namespace: ns},
		{verb: "get", group: "core.kubefed.io", resource: "kubefedconfigs", namespace: ns, name: "kubefed"},
		{verb: "get", resource: "namespaces", name: "kube-system"},
		{verb: "watch", group: "types.kubefed.io", resource: "federateddeployments", namespace: fed},
		{verb: "update", group: "types.kubefed.io", resource: "federateddeployments", namespace: fed},
		{verb: "update", group: "types.kubefed.io", resource: "federateddeployments", subresource: "status", namespace: fed},
		{verb: "update", group: "types.kubefed.io", resource: "federatednamespaces", subresource: "finalizers", namespace: fed},
		{verb: "list", group: "scheduling.kubefed.io", resource: "replicaschedulingpreferences", namespace: fed},
		{verb: "update", group: "multiclusterdns.kubefed.io", resource: "servicednsrecords", subresource: "status", namespace: fed},
		{verb: "create", group: "multiclusterdns.kubefed.io", resource: "dnsendpoints", namespace: fed},
		{verb: "list", group: "multiclusterdns.kubefed.io", resource: "domains", namespace: ns},
		{verb: "create", resource: "events", namespace: fed},
		{verb: "create", group: "events.k8s.io", resource: "events", namespace: fed},
		{verb: "get", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "widgets.example.com"},
		// The leader's dry-run probes of the sync-finalizer policy.
		{verb: "create", group: "types.kubefed.io", resource: "federateddeployments", namespace: ns},
	}
	denied := []access{
		{verb: "list", resource: "secrets"},
		{verb: "get", resource: "secrets", namespace: "kube-system"},
		{verb: "create", resource: "secrets", namespace: ns},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: ns, name: "another-lease"},
		{verb: "create", group: "core.kubefed.io", resource: "kubefedconfigs", namespace: ns},
		{verb: "update", group: "core.kubefed.io", resource: "kubefedconfigs", namespace: ns, name: "kubefed"},
		{verb: "update", group: "core.kubefed.io", resource: "kubefedclusters", namespace: ns},
		{verb: "delete", group: "core.kubefed.io", resource: "kubefedclusters", namespace: ns},
		{verb: "create", group: "core.kubefed.io", resource: "federatedtypeconfigs", namespace: ns},
		{verb: "delete", group: "core.kubefed.io", resource: "federatedtypeconfigs", namespace: ns},
		// Federated objects are never created, but for the dry-run probes
		// in the control plane's own namespace.
		{verb: "create", group: "types.kubefed.io", resource: "federateddeployments", namespace: "demo"},
		{verb: "create", group: "types.kubefed.io", resource: "federatedclusterroles"},
		{verb: "delete", group: "types.kubefed.io", resource: "federateddeployments", namespace: fed},
		{verb: "update", group: "scheduling.kubefed.io", resource: "replicaschedulingpreferences", namespace: fed},
		{verb: "delete", group: "multiclusterdns.kubefed.io", resource: "dnsendpoints", namespace: fed},
		{verb: "get", resource: "namespaces", name: "default"},
		{verb: "list", resource: "namespaces"},
		{verb: "get", resource: "configmaps", namespace: ns},
		{verb: "create", resource: "pods", namespace: ns},
		{verb: "list", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{verb: "update", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "widgets.example.com"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: ns},
		{verb: "impersonate", resource: "serviceaccounts", namespace: ns},
	}
	if cp.scope == corev1beta1.ClusterScoped {
		allowed = append(allowed,
			access{verb: "list", group: "types.kubefed.io", resource: "federateddeployments"},
			access{verb: "watch", group: "types.kubefed.io", resource: "federatedclusterroles"},
		)
	} else {
		denied = append(denied,
			access{verb: "list", group: "types.kubefed.io", resource: "federateddeployments"},
			access{verb: "get", group: "types.kubefed.io", resource: "federateddeployments", namespace: "demo"},
			access{verb: "list", group: "scheduling.kubefed.io", resource: "replicaschedulingpreferences", namespace: "demo"},
			access{verb: "create", resource: "events", namespace: "demo"},
			access{verb: "create", group: "events.k8s.io", resource: "events", namespace: "demo"},
		)
	}
	checkAccess(ctx, t, cp.fw.Host, fmt.Sprintf("system:serviceaccount:%s:%s", cp.namespace, cp.serviceAccount), cp.namespace, allowed, denied)
}

// checkAccess asks c's apiserver whether user, a ServiceAccount of
// namespace, may do what allowed lists and may not do what denied lists.
func checkAccess(ctx context.Context, t *testing.T, c *framework.Cluster, user, namespace string, allowed, denied []access) {
	t.Helper()
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	check := func(a access, want bool) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
			},
		}}
		got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != want {
			t.Errorf("%s may %s in %s: %v, want %v", user, a, c.Name, got.Status.Allowed, want)
		}
	}
	for _, a := range allowed {
		check(a, true)
	}
	for _, a := range denied {
		check(a, false)
	}
}

// start runs bin/controller-manager out of cluster with a kubeconfig
// holding only a token of the chart's ServiceAccount. The framework puts
// the admin kubeconfig and context first on the command line; ours come
// later and win, and as neither file knows the other's context, the
// controller-manager could not start on a mix of the two.
func (cp *controlPlane) start(ctx context.Context, t *testing.T, extraArgs ...string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cp.fw.Host.Config.Host, CertificateAuthorityData: cp.fw.Host.Config.CAData}
	kc.AuthInfos[cp.serviceAccount] = &clientcmdapi.AuthInfo{Token: cp.token(ctx, t, cp.serviceAccount)}
	kc.Contexts[chartContext] = &clientcmdapi.Context{Cluster: "host", AuthInfo: cp.serviceAccount}
	kc.CurrentContext = chartContext
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cm, err := cp.fw.StartControllerManager(ctx, dir, append([]string{
		"--kubeconfig", path, "--context", chartContext,
		"--kubefed-namespace", cp.namespace, "--scope", string(cp.scope)}, extraArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	cp.cm = cm
	t.Cleanup(func() {
		_ = cm.Stop()
		if t.Failed() {
			t.Logf("controller-manager log (%s):\n%s", cm.LogPath, lastLines(framework.ReadFile(cm.LogPath), 80))
		}
	})
}

// token is a token of a ServiceAccount of the release's namespace.
func (cp *controlPlane) token(ctx context.Context, t *testing.T, serviceAccount string) string {
	t.Helper()
	token, err := cp.fw.Host.Kube.CoreV1().ServiceAccounts(cp.namespace).CreateToken(ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", cp.namespace, serviceAccount, err)
	}
	return token.Status.Token
}

// checkLeasePriority asks the host's API Priority and Fairness, through
// the priority level it names in each response, where the ServiceAccount's
// requests go: the Lease requests to leader-election (the chart's
// FlowSchema), the others not.
func (cp *controlPlane) checkLeasePriority(ctx context.Context, t *testing.T) {
	t.Helper()
	pl, err := cp.fw.Host.Kube.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, "leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the host's leader-election priority level: %v", err)
	}
	// level is the priority level the host's answer to a GET of path, as
	// the holder of token, names; the request is classified before it is
	// authorized, so a refusal names it too.
	level := func(token, path string, want int) string {
		t.Helper()
		cfg := rest.AnonymousClientConfig(cp.fw.Host.Config)
		cfg.BearerToken = token
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s: %s, want %d", path, resp.Status, want)
		}
		return resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	}
	token := cp.token(ctx, t, cp.serviceAccount)
	lease := "/apis/coordination.k8s.io/v1/namespaces/" + cp.namespace + "/leases/kubefed-controller-manager"
	if got := level(token, lease, http.StatusOK); got != string(pl.UID) {
		t.Errorf("the ServiceAccount's Lease GET went to priority level %q, want leader-election (%s)", got, pl.UID)
	}
	clusters := "/apis/core.kubefed.io/v1beta1/namespaces/" + cp.namespace + "/kubefedclusters"
	if got := level(token, clusters, http.StatusOK); got == "" || got == string(pl.UID) {
		t.Errorf("the ServiceAccount's KubeFedCluster list went to priority level %q, want another than leader-election", got)
	}
	// A Pull-mode agent's ServiceAccount, as join names it in the
	// namespace: its heartbeat Lease requests go there too (this one has
	// no rights; the classification does not depend on them).
	agent := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: "kubefed-agent-probe"}}
	if err := cp.fw.Host.Client.Create(ctx, agent); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.fw.Host.Client.Delete(ctx, agent) }()
	agentLease := "/apis/coordination.k8s.io/v1/namespaces/" + cp.namespace + "/leases/kubefed-agent-probe"
	if got := level(cp.token(ctx, t, agent.Name), agentLease, http.StatusForbidden); got != string(pl.UID) {
		t.Errorf("an agent's Lease GET went to priority level %q, want leader-election (%s)", got, pl.UID)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkMemberJoins joins the member as users do and waits for the
// controller-manager to probe it Ready and summarize it.
func (cp *controlPlane) checkMemberJoins(ctx context.Context, t *testing.T) {
	t.Helper()
	member := cp.fw.Members[0].Name
	if _, _, err := cp.fw.Kubefedctl(ctx, "join", member, "--cluster-context", member,
		"--host-cluster-context", cp.fw.Host.Name, "--kubefed-namespace", cp.namespace); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "KubeFedCluster "+member+" Ready", func() (bool, string) {
		var kfc corev1beta1.KubeFedCluster
		if err := cp.fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: cp.namespace, Name: member}, &kfc); err != nil {
			return false, err.Error()
		}
		for _, c := range kfc.Status.Conditions {
			if c.Type == corev1beta1.ClusterReady {
				state := fmt.Sprintf("%s/%s", c.Status, ptr.Deref(c.Reason, ""))
				return state == "True/ClusterReady" && kfc.Status.KubernetesVersion != "", state
			}
		}
		return false, "no Ready condition"
	})
	// kubefedctl reads what the controller-manager wrote.
	row := regexp.MustCompile(`(?m)^` + member + `\s+True\s+v1\.37\.2\s+`)
	out, _, err := cp.fw.Kubefedctl(ctx, "get", "clusters", "--kubefed-namespace", cp.namespace)
	if err != nil || !row.MatchString(out) {
		t.Errorf("kubefedctl get clusters (%v):\n%s", err, out)
	}
	// status finds every type the chart enabled served by the host.
	out, errOut, err := cp.fw.Kubefedctl(ctx, "status", "-n", cp.federationNamespace(), "--kubefed-namespace", cp.namespace)
	if err != nil || out != "" || errOut != "No federated objects found in namespace "+cp.federationNamespace()+".\n" {
		t.Errorf("kubefedctl status (%v):\n%s%s", err, out, errOut)
	}
}

// checkDefaultTypesRun waits for every FederatedTypeConfig the chart
// installed to report its propagation controller Running.
func (cp *controlPlane) checkDefaultTypesRun(ctx context.Context, t *testing.T) {
	t.Helper()
	want := len(defaultTypeConfigs(t))
	if cp.scope == corev1beta1.NamespaceScoped {
		want-- // clusterroles: a Namespaced control plane federates nothing cluster-scoped
	}
	eventually(t, 90*time.Second, "the chart's FederatedTypeConfigs Running", func() (bool, string) {
		var list corev1beta1.FederatedTypeConfigList
		if err := cp.fw.Host.Client.List(ctx, &list, client.InNamespace(cp.namespace)); err != nil {
			return false, err.Error()
		}
		var notRunning []string
		for _, ftc := range list.Items {
			if ftc.Status.PropagationController != corev1beta1.ControllerStatusRunning || ftc.Status.ObservedGeneration != ftc.Generation {
				notRunning = append(notRunning, fmt.Sprintf("%s=%q", ftc.Name, ftc.Status.PropagationController))
			}
		}
		if len(list.Items) != want {
			return false, fmt.Sprintf("%d FederatedTypeConfigs, want %d", len(list.Items), want)
		}
		return len(notRunning) == 0, "not running: " + strings.Join(notRunning, ", ")
	})
	// The chart's admission policy gives a new federated object the sync
	// controller's finalizer, from the ConfigMap of propagating types the
	// controller-manager keeps in its namespace with the chart's rights: a
	// dry-run create's answer carries it.
	eventually(t, 30*time.Second, "the finalizer on a new FederatedConfigMap at admission", func() (bool, string) {
		var listed corev1.ConfigMap
		if err := cp.fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: cp.namespace, Name: corev1beta1.PropagatingTypesConfigMap}, &listed); err != nil {
			return false, err.Error()
		}
		if listed.Data["federatedconfigmaps.types.kubefed.io"] != "configmaps" {
			return false, fmt.Sprintf("propagating types %v", listed.Data)
		}
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
			"metadata": map[string]any{"name": "admission-probe", "namespace": cp.namespace},
			"spec":     map[string]any{"template": map[string]any{}},
		}}
		if err := cp.fw.Host.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		return slices.Contains(probe.GetFinalizers(), corev1beta1.SyncControllerFinalizer), fmt.Sprintf("finalizers %v", probe.GetFinalizers())
	})
}

// checkLeaderElection proves the Lease and its core/v1 event were written.
func (cp *controlPlane) checkLeaderElection(ctx context.Context, t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "the leader's Lease and LeaderElection event", func() (bool, string) {
		var lease coordinationv1.Lease
		if err := cp.fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: cp.namespace, Name: "kubefed-controller-manager"}, &lease); err != nil {
			return false, err.Error()
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return false, "the Lease has no holder"
		}
		var events corev1.EventList
		if err := cp.fw.Host.Client.List(ctx, &events, client.InNamespace(cp.namespace)); err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
				return true, ""
			}
		}
		return false, "no LeaderElection event"
	})
}

// checkClusterEvents makes the KubeFedCluster controller report a problem
// through events.k8s.io, the API it records events with.
func (cp *controlPlane) checkClusterEvents(ctx context.Context, t *testing.T) {
	t.Helper()
	broken := &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.namespace, Name: "no-secret"},
		Spec: corev1beta1.KubeFedClusterSpec{
			APIEndpoint: "https://127.0.0.1:1", SecretRef: corev1beta1.LocalSecretReference{Name: "no-such-secret"},
		},
	}
	if err := cp.fw.Host.Client.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cp.fw.Host.Client.Delete(ctx, broken) }()
	eventually(t, 30*time.Second, "a MalformedClusterConfig event", func() (bool, string) {
		events, err := cp.fw.Host.Kube.EventsV1().Events(cp.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Regarding.Name == broken.Name && e.Reason == "MalformedClusterConfig" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none about %s", len(events.Items), broken.Name)
	})
}

// checkNothingForbidden fails when the host refused any request of the
// controller-manager. client-go's reflectors, the controllers and the event
// broadcasters all log the apiserver's answer, which names the user:
// refusals by members, which join's credentials govern, name another.
func (cp *controlPlane) checkNothingForbidden(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(cp.cm.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", cp.namespace, cp.serviceAccount)
	var refused []string
	members := 0
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case !strings.Contains(line, "forbidden"):
		case strings.Contains(line, user):
			refused = append(refused, line)
		default:
			members++
		}
	}
	if len(refused) > 0 {
		t.Errorf("the chart's ServiceAccount lacks rights the controller-manager used:\n%s", strings.Join(refused, "\n"))
	}
	if members > 0 {
		t.Logf("%d requests to member clusters were forbidden; see %s", members, cp.cm.LogPath)
	}
	if cp.cm.Exited() {
		t.Error("the controller-manager exited")
	}
}
