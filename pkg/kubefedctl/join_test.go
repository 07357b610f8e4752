package kubefedctl

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// memberObjects are the member objects join creates for member1 of host,
// per scope, as the §9 contract lists them.
var memberObjects = map[corev1beta1.Scope][]string{
	corev1beta1.ClusterScoped: {
		"ClusterRole kubefed-controller-manager:member1-host",
		"ClusterRoleBinding kubefed-controller-manager:member1-host",
		"Namespace kube-federation-system",
		"Secret kube-federation-system/member1-host-token",
		"ServiceAccount kube-federation-system/member1-host",
	},
	corev1beta1.NamespaceScoped: {
		"ClusterRole kubefed-controller-manager:kube-federation-system:healthcheck-member1-host",
		"ClusterRoleBinding kubefed-controller-manager:kube-federation-system:healthcheck-member1-host",
		"Namespace kube-federation-system",
		"Role kube-federation-system/kubefed-controller-manager:member1-host",
		"RoleBinding kube-federation-system/kubefed-controller-manager:member1-host",
		"Secret kube-federation-system/member1-host-token",
		"ServiceAccount kube-federation-system/member1-host",
	},
}

func hostObjectsAfterJoin(hostSecret string) []string {
	return []string{
		"KubeFedCluster kube-federation-system/member1",
		"Namespace kube-federation-system",
		"Secret kube-federation-system/" + hostSecret,
	}
}

func TestJoinCreatesExactlyTheContractObjects(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		configScope corev1beta1.Scope
		want        corev1beta1.Scope
		warning     string
	}{
		{name: "default is Cluster", want: corev1beta1.ClusterScoped},
		{name: "scope from KubeFedConfig", configScope: corev1beta1.NamespaceScoped, want: corev1beta1.NamespaceScoped},
		{name: "scope flag", args: []string{"--scope=namespaced"}, want: corev1beta1.NamespaceScoped},
		{
			name: "flag wins over KubeFedConfig", args: []string{"--scope=Cluster"}, configScope: corev1beta1.NamespaceScoped,
			want: corev1beta1.ClusterScoped, warning: "--scope=Cluster differs from scope Namespaced",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.configScope != "" {
				cfg := &corev1beta1.KubeFedConfig{
					ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: testNamespace},
					Spec:       corev1beta1.KubeFedConfigSpec{Scope: tc.configScope},
				}
				if err := w.host.fed.Create(context.Background(), cfg); err != nil {
					t.Fatal(err)
				}
			}
			out, errOut, err := w.run(t, append([]string{"join", "member1"}, tc.args...)...)
			if err != nil {
				t.Fatalf("join: %v\n%s", err, errOut)
			}
			if tc.warning != "" && !strings.Contains(errOut, tc.warning) {
				t.Errorf("stderr %q lacks warning %q", errOut, tc.warning)
			}
			if got := w.member.objects(t); !slices.Equal(got, memberObjects[tc.want]) {
				t.Errorf("member objects:\n got %q\nwant %q", got, memberObjects[tc.want])
			}
			secret := w.hostSecret(t)
			if got, want := w.host.objects(t), hostObjectsAfterJoin(secret.Name); !slices.Equal(got, want) {
				t.Errorf("host objects:\n got %q\nwant %q", got, want)
			}
			if !strings.HasPrefix(secret.Name, "member1-") {
				t.Errorf("host Secret %q is not named after the cluster", secret.Name)
			}
			if want := `Cluster "member1" joined (KubeFedCluster kube-federation-system/member1)`; !strings.HasSuffix(strings.TrimSpace(out), want) {
				t.Errorf("output does not end with %q:\n%s", want, out)
			}
			checkJoinedObjects(t, w, tc.want)
		})
	}
}

// checkJoinedObjects checks the content of what join created.
func checkJoinedObjects(t *testing.T, w *world, scope corev1beta1.Scope) {
	t.Helper()
	ctx := context.Background()
	mem := w.member.kube
	wantLabels := map[string]string{ManagedByLabel: ManagedByValue, JoinedClusterLabel: "member1"}

	ns, err := mem.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[ManagedByLabel] != ManagedByValue {
		t.Errorf("member namespace labels %v lack %s", ns.Labels, ManagedByLabel)
	}
	sa, err := mem.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "member1-host", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("ServiceAccount must not be automounted")
	}
	if !equality.Semantic.DeepEqual(sa.Labels, wantLabels) {
		t.Errorf("ServiceAccount labels %v, want %v", sa.Labels, wantLabels)
	}
	token, err := mem.CoreV1().Secrets(testNamespace).Get(ctx, "member1-host-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if token.Type != corev1.SecretTypeServiceAccountToken || token.Annotations[corev1.ServiceAccountNameKey] != "member1-host" {
		t.Errorf("token Secret type %q annotations %v", token.Type, token.Annotations)
	}

	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "member1-host", Namespace: testNamespace}}
	checkClusterRole := func(name string, rules []rbacv1.PolicyRule) {
		t.Helper()
		cr, err := mem.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(cr.Rules, rules) {
			t.Errorf("ClusterRole %s rules %+v, want %+v", name, cr.Rules, rules)
		}
		crb, err := mem.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(crb.Subjects, subjects) || crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}) {
			t.Errorf("ClusterRoleBinding %s: subjects %+v roleRef %+v", name, crb.Subjects, crb.RoleRef)
		}
		if !equality.Semantic.DeepEqual(cr.Labels, wantLabels) || !equality.Semantic.DeepEqual(crb.Labels, wantLabels) {
			t.Errorf("ClusterRole/Binding %s labels %v / %v", name, cr.Labels, crb.Labels)
		}
	}
	if scope == corev1beta1.ClusterScoped {
		checkClusterRole("kubefed-controller-manager:member1-host", []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"get"}},
		})
	} else {
		checkClusterRole("kubefed-controller-manager:kube-federation-system:healthcheck-member1-host", healthCheckRules())
		role, err := mem.RbacV1().Roles(testNamespace).Get(ctx, "kubefed-controller-manager:member1-host", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(role.Rules, []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}) {
			t.Errorf("Role rules %+v", role.Rules)
		}
		rb, err := mem.RbacV1().RoleBindings(testNamespace).Get(ctx, "kubefed-controller-manager:member1-host", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(rb.Subjects, subjects) || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name {
			t.Errorf("RoleBinding subjects %+v roleRef %+v", rb.Subjects, rb.RoleRef)
		}
	}

	secret := w.hostSecret(t)
	if string(secret.Data[tokenKey]) != "token-of-member1-host" || string(secret.Data[caCertKey]) != fakeCA {
		t.Errorf("host Secret data keys wrong: token %d bytes, ca.crt %d bytes", len(secret.Data[tokenKey]), len(secret.Data[caCertKey]))
	}
	if !equality.Semantic.DeepEqual(secret.Labels, wantLabels) {
		t.Errorf("host Secret labels %v", secret.Labels)
	}
	kfc := getKFC(t, w.host, "member1")
	want := corev1beta1.KubeFedClusterSpec{
		APIEndpoint: "https://member1.example:6443",
		CABundle:    []byte(fakeCA),
		SecretRef:   corev1beta1.LocalSecretReference{Name: secret.Name},
	}
	if !equality.Semantic.DeepEqual(kfc.Spec, want) {
		t.Errorf("KubeFedCluster spec %+v, want %+v", kfc.Spec, want)
	}
	if !equality.Semantic.DeepEqual(kfc.Labels, wantLabels) {
		t.Errorf("KubeFedCluster labels %v", kfc.Labels)
	}
}

func getKFC(t *testing.T, f *fakeCluster, name string) *corev1beta1.KubeFedCluster {
	t.Helper()
	kfc := &corev1beta1.KubeFedCluster{}
	if err := f.fed.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, kfc); err != nil {
		t.Fatalf("get KubeFedCluster %s: %v", name, err)
	}
	return kfc
}

func TestJoinRerun(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	member, host := w.member.objects(t), w.host.objects(t)
	secret := w.hostSecret(t)

	// KubeFed's default: an existing KubeFedCluster is an error, and
	// nothing is touched.
	w.member.kube.ClearActions()
	w.host.kube.ClearActions()
	_, _, err := w.run(t, "join", "member1")
	if err == nil || !strings.Contains(err.Error(), "KubeFedCluster kube-federation-system/member1 already exists") {
		t.Fatalf("second join: got error %v, want KubeFedCluster already exists", err)
	}
	if writes := append(w.member.writes(), w.host.writes()...); len(writes) > 0 {
		t.Errorf("refused join wrote %v", writes)
	}

	// Re-running with --error-on-existing=false converges without duplicates.
	out := w.mustRun(t, "join", "member1", "--error-on-existing=false")
	if got := w.member.objects(t); !slices.Equal(got, member) {
		t.Errorf("member objects after re-run:\n got %q\nwant %q", got, member)
	}
	if got := w.host.objects(t); !slices.Equal(got, host) {
		t.Errorf("host objects after re-run:\n got %q\nwant %q", got, host)
	}
	if got := w.hostSecret(t).Name; got != secret.Name {
		t.Errorf("re-run replaced host Secret %s by %s", secret.Name, got)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, " unchanged in ") && !strings.HasPrefix(line, "Cluster ") {
			t.Errorf("re-run changed something: %q", line)
		}
	}
	if writes := w.member.writes(); len(writes) > 0 {
		t.Errorf("converged re-run wrote to the member: %v", writes)
	}

	// Switching scope replaces the grants of the old scope.
	w.mustRun(t, "join", "member1", "--error-on-existing=false", "--scope=Namespaced")
	if got, want := w.member.objects(t), memberObjects[corev1beta1.NamespaceScoped]; !slices.Equal(got, want) {
		t.Errorf("member objects after scope switch:\n got %q\nwant %q", got, want)
	}
	w.mustRun(t, "join", "member1", "--error-on-existing=false", "--scope=Cluster")
	if got, want := w.member.objects(t), memberObjects[corev1beta1.ClusterScoped]; !slices.Equal(got, want) {
		t.Errorf("member objects after switching back:\n got %q\nwant %q", got, want)
	}
}

func TestJoinKeepsUserFieldsOfExistingKubeFedCluster(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	kfc := getKFC(t, w.host, "member1")
	kfc.Labels["region"] = "eu"
	kfc.Spec.ProxyURL = "socks5://proxy:1080"
	kfc.Spec.APIEndpoint = "https://old.example"
	if err := w.host.fed.Update(context.Background(), kfc); err != nil {
		t.Fatal(err)
	}
	out := w.mustRun(t, "join", "member1", "--error-on-existing=false")
	if !strings.Contains(out, "KubeFedCluster kube-federation-system/member1 configured in host") {
		t.Errorf("output lacks the KubeFedCluster update:\n%s", out)
	}
	kfc = getKFC(t, w.host, "member1")
	if kfc.Labels["region"] != "eu" || kfc.Spec.ProxyURL != "socks5://proxy:1080" {
		t.Errorf("user label or proxyURL lost: labels %v proxyURL %q", kfc.Labels, kfc.Spec.ProxyURL)
	}
	if kfc.Spec.APIEndpoint != "https://member1.example:6443" {
		t.Errorf("apiEndpoint %q not updated", kfc.Spec.APIEndpoint)
	}
}

func TestJoinSecretName(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1", "--secret-name=creds")
	if got := getKFC(t, w.host, "member1").Spec.SecretRef.Name; got != "creds" {
		t.Fatalf("secretRef %q, want creds", got)
	}
	// Moving to another name removes the old Secret join created.
	w.mustRun(t, "join", "member1", "--secret-name=creds2", "--error-on-existing=false")
	if got := w.hostSecret(t).Name; got != "creds2" {
		t.Errorf("host Secret %q, want creds2 only", got)
	}
	if got := getKFC(t, w.host, "member1").Spec.SecretRef.Name; got != "creds2" {
		t.Errorf("secretRef %q, want creds2", got)
	}
}

func TestJoinRefusesObjectsItDidNotCreate(t *testing.T) {
	w := newWorld(t)
	foreign := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "member1-host", Namespace: testNamespace}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	w.member = newFakeCluster(t, "member1", ns, foreign)
	w.conn["member1"] = w.member
	before := w.member.objects(t)

	_, _, err := w.run(t, "join", "member1")
	if err == nil || !strings.Contains(err.Error(), "ServiceAccount kube-federation-system/member1-host already exists in member1 and was not created by kubefedctl join") {
		t.Fatalf("got error %v, want the foreign ServiceAccount named", err)
	}
	if got := w.member.objects(t); !slices.Equal(got, before) {
		t.Errorf("refused join changed the member: %q", got)
	}
	if got := w.host.objects(t); len(got) != 1 {
		t.Errorf("refused join changed the host: %q", got)
	}

	w.mustRun(t, "join", "member1", "--error-on-existing=false")
	sa, err := w.member.kube.CoreV1().ServiceAccounts(testNamespace).Get(context.Background(), "member1-host", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.Labels[ManagedByLabel] != ManagedByValue {
		t.Errorf("taken-over ServiceAccount not labelled: %v", sa.Labels)
	}
}

func TestJoinTokenTimeoutThenResume(t *testing.T) {
	w := newWorld(t)
	w.member.setTokenController(false)
	_, _, err := w.run(t, "join", "member1", "--token-wait=200ms")
	if err == nil {
		t.Fatal("join succeeded without a token")
	}
	for _, want := range []string{"timed out after 200ms", "token controller", "member1", "kube-controller-manager", "Secret kube-federation-system/member1-host-token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := w.host.objects(t); len(got) != 1 {
		t.Errorf("host changed before the token arrived: %q", got)
	}

	// The default --error-on-existing=true resumes: the leftovers are join's.
	w.member.setTokenController(true)
	w.mustRun(t, "join", "member1")
	if got, want := w.member.objects(t), memberObjects[corev1beta1.ClusterScoped]; !slices.Equal(got, want) {
		t.Errorf("member objects:\n got %q\nwant %q", got, want)
	}
	if string(w.hostSecret(t).Data[tokenKey]) != "token-of-member1-host" {
		t.Error("host Secret lacks the token")
	}
}

func TestJoinReplacesTokenOfRecreatedServiceAccount(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	ctx := context.Background()
	sas := w.member.kube.CoreV1().ServiceAccounts(testNamespace)
	sa, err := sas.Get(ctx, "member1-host", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone recreated the account: the old token no longer authenticates.
	if err := sas.Delete(ctx, sa.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sa.ResourceVersion, sa.UID = "", ""
	if _, err := sas.Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := w.mustRun(t, "join", "member1", "--error-on-existing=false")
	if !strings.Contains(out, "Secret kube-federation-system/member1-host-token configured in member1") {
		t.Errorf("token Secret not replaced:\n%s", out)
	}
	sa, _ = sas.Get(ctx, "member1-host", metav1.GetOptions{})
	token, err := w.member.kube.CoreV1().Secrets(testNamespace).Get(ctx, "member1-host-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if token.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("token Secret is for ServiceAccount UID %s, want %s", token.Annotations[corev1.ServiceAccountUIDKey], sa.UID)
	}
}

func TestJoinReplacesTokenIssuedForDeletedServiceAccount(t *testing.T) {
	w := newWorld(t)
	// The member's token controller still sees the account an unjoin just
	// deleted, and binds the first token to it.
	w.member.setStaleTokens(1)
	w.mustRun(t, "join", "member1")
	ctx := context.Background()
	sa, err := w.member.kube.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "member1-host", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := w.member.kube.CoreV1().Secrets(testNamespace).Get(ctx, "member1-host-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if token.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("token Secret is for ServiceAccount UID %s, want %s", token.Annotations[corev1.ServiceAccountUIDKey], sa.UID)
	}
	if err := w.member.authenticate(ctx, w.hostSecret(t).Data[tokenKey]); err != nil {
		t.Errorf("the host Secret's token does not authenticate: %v", err)
	}
}

func TestJoinFailsWhenMemberNeverAcceptsToken(t *testing.T) {
	w := newWorld(t)
	w.member.setStaleTokens(1 << 20)
	_, _, err := w.run(t, "join", "member1", "--token-wait=300ms")
	if err == nil {
		t.Fatal("join succeeded with a token the member rejects")
	}
	for _, want := range []string{`cluster "member1" does not accept the token`, "Secret kube-federation-system/member1-host-token", "--token-wait"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := w.host.objects(t); len(got) != 1 {
		t.Errorf("host changed with a rejected token: %q", got)
	}
}

func TestJoinHostItself(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "host", "--cluster-context=host")
	secret := w.hostSecret(t)
	want := []string{
		"ClusterRole kubefed-controller-manager:host-host",
		"ClusterRoleBinding kubefed-controller-manager:host-host",
		"KubeFedCluster kube-federation-system/host",
		"Namespace kube-federation-system",
		"Secret kube-federation-system/" + secret.Name,
		"Secret kube-federation-system/host-host-token",
		"ServiceAccount kube-federation-system/host-host",
	}
	if got := w.host.objects(t); !slices.Equal(got, want) {
		t.Errorf("host objects:\n got %q\nwant %q", got, want)
	}
	if got := getKFC(t, w.host, "host").Spec.APIEndpoint; got != "https://host.example:6443" {
		t.Errorf("apiEndpoint %q", got)
	}
}

func TestJoinDryRunChangesNothing(t *testing.T) {
	w := newWorld(t)
	out := w.mustRun(t, "join", "member1", "--dry-run")
	if writes := append(w.member.writes(), w.host.writes()...); len(writes) > 0 {
		t.Errorf("dry run wrote %v", writes)
	}
	if got := w.member.objects(t); len(got) != 0 {
		t.Errorf("dry run created %q", got)
	}
	for _, want := range []string{
		"Namespace kube-federation-system created in member1 (dry run)",
		"ServiceAccount kube-federation-system/member1-host created in member1 (dry run)",
		"ClusterRole kubefed-controller-manager:member1-host created in member1 (dry run)",
		"ClusterRoleBinding kubefed-controller-manager:member1-host created in member1 (dry run)",
		"Secret kube-federation-system/member1-host-token created in member1 (dry run)",
		"Secret kube-federation-system/member1-<generated> created in host (dry run)",
		"KubeFedCluster kube-federation-system/member1 created in host (dry run)",
		`Cluster "member1" joined (KubeFedCluster kube-federation-system/member1) (dry run)`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
}

func TestJoinWaitsForTerminatingNamespace(t *testing.T) {
	w := newWorld(t)
	now := metav1.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace, DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}
	w.member = newFakeCluster(t, "member1", ns)
	w.conn["member1"] = w.member
	// The namespace controller finishes the deletion after a few polls.
	polls := 0
	w.member.kube.PrependReactor("get", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if polls++; polls == 3 {
			_ = w.member.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("namespaces"), "", testNamespace)
		}
		return false, nil, nil
	})
	w.mustRun(t, "join", "member1")
	if got, want := w.member.objects(t), memberObjects[corev1beta1.ClusterScoped]; !slices.Equal(got, want) {
		t.Errorf("member objects:\n got %q\nwant %q", got, want)
	}
}

func TestJoinPreflightErrors(t *testing.T) {
	t.Run("no host namespace", func(t *testing.T) {
		w := newWorld(t)
		w.host = newFakeCluster(t, "host")
		w.conn["host"] = w.host
		_, _, err := w.run(t, "join", "member1")
		if err == nil || !strings.Contains(err.Error(), `namespace "kube-federation-system" not found in host cluster "host"`) {
			t.Fatalf("got %v", err)
		}
		if len(w.member.writes()) > 0 {
			t.Errorf("member written: %v", w.member.writes())
		}
	})
	t.Run("no KubeFedCluster CRD", func(t *testing.T) {
		w := newWorld(t)
		w.host.fed = fakeclient.NewClientBuilder().WithScheme(newScheme()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "core.kubefed.io", Kind: "KubeFedCluster"}}
			},
		}).Build()
		w.host.cluster.fed = w.host.fed
		_, _, err := w.run(t, "join", "member1")
		if err == nil || !strings.Contains(err.Error(), "KubeFedCluster API (core.kubefed.io/v1beta1) is not installed in host cluster") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unknown member context", func(t *testing.T) {
		w := newWorld(t)
		_, _, err := w.run(t, "join", "member2")
		if err == nil || !strings.Contains(err.Error(), `context "member2" not found`) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		w := newWorld(t)
		for args, want := range map[string]string{
			"join member1 --scope=Global":          `invalid --scope "Global"`,
			"join member1 --secret-name=Bad_Name":  `invalid --secret-name "Bad_Name"`,
			"join Member_1":                        `invalid cluster name "Member_1"`,
			"join member1 --kubefed-namespace=a.b": `invalid --kubefed-namespace "a.b"`,
			"join":                                 "accepts 1 arg(s)",
		} {
			_, _, err := w.run(t, strings.Fields(args)...)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want %q", args, err, want)
			}
		}
	})
}

func TestJoinInsecureKubeconfig(t *testing.T) {
	w := newWorld(t)
	w.member.insecure = true
	w.member.caData = nil
	_, errOut, err := w.run(t, "join", "member1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "skips TLS verification") {
		t.Errorf("no warning on stderr: %q", errOut)
	}
	spec := getKFC(t, w.host, "member1").Spec
	if !slices.Equal(spec.DisabledTLSValidations, []corev1beta1.TLSValidation{corev1beta1.TLSAll}) || spec.CABundle != nil {
		t.Errorf("spec %+v, want disabledTLSValidations [*] and no caBundle", spec)
	}
	// The kubeconfig verifies again: so does the cluster, once joined again.
	w.member.insecure = false
	w.member.caData = []byte(fakeCA)
	w.mustRun(t, "join", "member1", "--error-on-existing=false")
	if spec := getKFC(t, w.host, "member1").Spec; len(spec.DisabledTLSValidations) != 0 || spec.CABundle == nil {
		t.Errorf("joined again from a kubeconfig that verifies: spec %+v, want no disabledTLSValidations and its caBundle", spec)
	}
}
