//go:build integration

package kubefedctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// TestJoinUnjoinLocalClusters joins a member and the host itself to a
// control plane on real local clusters, whose token controllers issue the
// tokens, and checks that the credentials work and that unjoin removes
// every object join created.
func TestJoinUnjoinLocalClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{
		Clusters: []string{"host", "member1"},
		WorkDir:  t.TempDir(),
		Out:      testLogWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stop clusters: %v", err)
		}
	})
	hostCluster, memberCluster := fed.Cluster("host"), fed.Cluster("member1")
	host := kubernetes.NewForConfigOrDie(hostCluster.RESTConfig())
	member := kubernetes.NewForConfigOrDie(memberCluster.RESTConfig())
	hostFed, err := client.New(hostCluster.RESTConfig(), client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	installControlPlaneAPI(ctx, t, hostCluster.RESTConfig(), host)

	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := NewRootCommand(IOStreams{Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append(args, "--kubeconfig="+fed.KubeconfigPath, "--host-cluster-context=host"))
		err := cmd.ExecuteContext(ctx)
		t.Logf("kubefedctl %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
		return out.String(), errOut.String(), err
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, _, err := run(args...)
		if err != nil {
			t.Fatalf("kubefedctl %s: %v", strings.Join(args, " "), err)
		}
		return out
	}

	// Join a member and the host itself.
	mustRun("join", "member1")
	mustRun("join", "host", "--cluster-context=host")
	memberClient := clientFromKubeFedCluster(ctx, t, hostFed, host, "member1", memberCluster.Server, memberCluster.CAData)
	if _, err := memberClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the joined credentials do not list namespaces in member1: %v", err)
	}
	hostAsMember := clientFromKubeFedCluster(ctx, t, hostFed, host, "host", hostCluster.Server, hostCluster.CAData)
	if _, err := hostAsMember.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the joined credentials do not list namespaces in host: %v", err)
	}

	// Re-runs: refused by default, converging with --error-on-existing=false.
	if _, _, err := run("join", "member1"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second join: got %v, want already exists", err)
	}
	out := mustRun("join", "member1", "--error-on-existing=false")
	if strings.Contains(out, " created in ") || strings.Contains(out, " configured in ") {
		t.Errorf("converged re-run changed objects:\n%s", out)
	}
	if n := countJoinSecrets(ctx, t, host, "member1"); n != 1 {
		t.Errorf("%d host Secrets for member1 after the re-run, want 1", n)
	}

	// Unjoin removes every object join created, one by one.
	memberSecret := getKFCReal(ctx, t, hostFed, "member1").Spec.SecretRef.Name
	oldNamespace, err := member.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustRun("unjoin", "member1")
	r, _ := newRegistration("member1", "host", testNamespace)
	assertGone(ctx, t, "member1", member, r)
	assertNamespaceDeleted(ctx, t, member, oldNamespace)
	assertHostGone(ctx, t, host, hostFed, "member1", memberSecret)
	// The grants are gone at once; the token stops authenticating once the
	// apiserver's caches have seen its ServiceAccount and Secret deleted.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := memberClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err == nil {
			return false, fmt.Errorf("the unjoined member's old token still lists namespaces")
		}
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Errorf("the unjoined member's old token still authenticates: %v", err)
	}

	hostSecret := getKFCReal(ctx, t, hostFed, "host").Spec.SecretRef.Name
	out = mustRun("unjoin", "host", "--cluster-context=host")
	if !strings.Contains(out, "Namespace kube-federation-system kept in host") {
		t.Errorf("unjoin of the host does not say it keeps the namespace:\n%s", out)
	}
	hr, _ := newRegistration("host", "host", testNamespace)
	assertGone(ctx, t, "host", host, hr)
	assertHostGone(ctx, t, host, hostFed, "host", hostSecret)
	ns, err := host.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil {
		t.Fatalf("the host's KubeFed namespace was deleted: %v", err)
	}

	// Join again at once, while member1's namespace is likely still
	// terminating, this time Namespaced: the grants are really confined.
	mustRun("join", "member1", "--scope=Namespaced")
	if ns, err := member.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{}); err != nil || ns.UID == oldNamespace.UID {
		t.Errorf("rejoin did not get a new namespace in member1 (err %v)", err)
	}
	memberClient = clientFromKubeFedCluster(ctx, t, hostFed, host, "member1", memberCluster.Server, memberCluster.CAData)
	if _, err := memberClient.CoreV1().ConfigMaps(testNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("Namespaced credentials cannot list ConfigMaps in the KubeFed namespace: %v", err)
	}
	if _, err := memberClient.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("Namespaced credentials reach namespace default: %v", err)
	}
	if _, err := memberClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("Namespaced credentials cannot list nodes: %v", err)
	}
	if _, err := memberClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("Namespaced credentials cannot list pods: %v", err)
	}
	for _, path := range []string{"/readyz", "/healthz", "/version"} {
		if err := memberClient.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).Error(); err != nil {
			t.Errorf("Namespaced credentials cannot GET %s: %v", path, err)
		}
	}

	// An unreachable member: refused without --force, host cleaned with it.
	if err := memberCluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run("unjoin", "member1", "--request-timeout=5s"); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("unjoin of an unreachable member: got %v, want a hint at --force", err)
	}
	memberSecret = getKFCReal(ctx, t, hostFed, "member1").Spec.SecretRef.Name
	_, errOut, err := run("unjoin", "member1", "--force", "--request-timeout=5s")
	if err != nil {
		t.Fatalf("unjoin --force: %v", err)
	}
	if !strings.Contains(errOut, "may remain in member cluster \"member1\"") {
		t.Errorf("unjoin --force does not report what remains:\n%s", errOut)
	}
	assertHostGone(ctx, t, host, hostFed, "member1", memberSecret)
}

// installControlPlaneAPI does what installing the control plane does for
// join: the CRDs and the KubeFed namespace.
func installControlPlaneAPI(ctx context.Context, t *testing.T, cfg *rest.Config, host kubernetes.Interface) {
	t.Helper()
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if _, err := host.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// clientFromKubeFedCluster builds a client the way the control plane does:
// from the KubeFedCluster and its Secret alone.
func clientFromKubeFedCluster(ctx context.Context, t *testing.T, fed client.Client, host kubernetes.Interface, name, wantEndpoint string, wantCA []byte) kubernetes.Interface {
	t.Helper()
	kfc := getKFCReal(ctx, t, fed, name)
	if kfc.Spec.APIEndpoint != wantEndpoint {
		t.Errorf("KubeFedCluster %s apiEndpoint %q, want %q", name, kfc.Spec.APIEndpoint, wantEndpoint)
	}
	if !bytes.Equal(kfc.Spec.CABundle, wantCA) {
		t.Errorf("KubeFedCluster %s caBundle is not the kubeconfig's CA", name)
	}
	secret, err := host.CoreV1().Secrets(testNamespace).Get(ctx, kfc.Spec.SecretRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret of KubeFedCluster %s: %v", name, err)
	}
	if len(secret.Data[tokenKey]) == 0 || len(secret.Data[caCertKey]) == 0 {
		t.Fatalf("Secret %s lacks token or ca.crt (keys: %d)", secret.Name, len(secret.Data))
	}
	return kubernetes.NewForConfigOrDie(&rest.Config{
		Host:            kfc.Spec.APIEndpoint,
		BearerToken:     string(secret.Data[tokenKey]),
		TLSClientConfig: rest.TLSClientConfig{CAData: kfc.Spec.CABundle},
	})
}

func getKFCReal(ctx context.Context, t *testing.T, fed client.Client, name string) *corev1beta1.KubeFedCluster {
	t.Helper()
	kfc := &corev1beta1.KubeFedCluster{}
	if err := fed.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, kfc); err != nil {
		t.Fatalf("get KubeFedCluster %s: %v", name, err)
	}
	return kfc
}

func countJoinSecrets(ctx context.Context, t *testing.T, host kubernetes.Interface, cluster string) int {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{JoinedClusterLabel: cluster}).String()
	list, err := host.CoreV1().Secrets(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeOpaque {
			n++
		}
	}
	return n
}

// assertGone checks, object by object, that nothing join creates in a
// member is left.
func assertGone(ctx context.Context, t *testing.T, where string, c kubernetes.Interface, r registration) {
	t.Helper()
	ns := r.namespace
	checks := map[string]func() error{
		"ServiceAccount " + r.serviceAccountName(): func() error {
			_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, r.serviceAccountName(), metav1.GetOptions{})
			return err
		},
		"Secret " + r.tokenSecretName(): func() error {
			_, err := c.CoreV1().Secrets(ns).Get(ctx, r.tokenSecretName(), metav1.GetOptions{})
			return err
		},
		"ClusterRole " + r.roleName(): func() error {
			_, err := c.RbacV1().ClusterRoles().Get(ctx, r.roleName(), metav1.GetOptions{})
			return err
		},
		"ClusterRoleBinding " + r.roleName(): func() error {
			_, err := c.RbacV1().ClusterRoleBindings().Get(ctx, r.roleName(), metav1.GetOptions{})
			return err
		},
		"ClusterRole " + r.healthCheckRoleName(): func() error {
			_, err := c.RbacV1().ClusterRoles().Get(ctx, r.healthCheckRoleName(), metav1.GetOptions{})
			return err
		},
		"Role " + r.roleName(): func() error {
			_, err := c.RbacV1().Roles(ns).Get(ctx, r.roleName(), metav1.GetOptions{})
			return err
		},
		"RoleBinding " + r.roleName(): func() error {
			_, err := c.RbacV1().RoleBindings(ns).Get(ctx, r.roleName(), metav1.GetOptions{})
			return err
		},
	}
	for what, get := range checks {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s still in %s after unjoin (err %v)", what, where, err)
		}
	}
	sas, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, s := range sas.Items {
			if s.Annotations[corev1.ServiceAccountNameKey] == r.serviceAccountName() {
				t.Errorf("token Secret %s still in %s", s.Name, where)
			}
		}
	}
}

// assertNamespaceDeleted checks that unjoin deleted the namespace: it is
// gone, or the namespace controller is still finishing its deletion.
func assertNamespaceDeleted(ctx context.Context, t *testing.T, c kubernetes.Interface, old *corev1.Namespace) {
	t.Helper()
	ns, err := c.CoreV1().Namespaces().Get(ctx, old.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case ns.UID != old.UID || ns.DeletionTimestamp == nil:
		t.Errorf("namespace %s was not deleted", old.Name)
	}
}

func assertHostGone(ctx context.Context, t *testing.T, host kubernetes.Interface, fed client.Client, cluster, secret string) {
	t.Helper()
	err := fed.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: cluster}, &corev1beta1.KubeFedCluster{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("KubeFedCluster %s still in host (err %v)", cluster, err)
	}
	if _, err := host.CoreV1().Secrets(testNamespace).Get(ctx, secret, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret %s still in host (err %v)", secret, err)
	}
	if n := countJoinSecrets(ctx, t, host, cluster); n != 0 {
		t.Errorf("%d host Secrets for %s left", n, cluster)
	}
}

// testLogWriter sends localcluster's progress to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
