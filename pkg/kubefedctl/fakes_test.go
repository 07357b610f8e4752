package kubefedctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const (
	testNamespace = corev1beta1.DefaultKubeFedNamespace
	fakeCA        = "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n"
)

// servedResources are the namespaced resources the fake clusters' discovery
// reports; foreignObjects lists them through the metadata bridge.
var servedResources = map[schema.GroupVersionResource]string{
	{Version: "v1", Resource: "configmaps"}:                                       "ConfigMap",
	{Version: "v1", Resource: "secrets"}:                                          "Secret",
	{Version: "v1", Resource: "serviceaccounts"}:                                  "ServiceAccount",
	{Version: "v1", Resource: "events"}:                                           "Event",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}:        "Role",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}: "RoleBinding",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}: "ClusterRole",
}

// fakeCluster is a cluster backed by client-go and controller-runtime
// fakes that behave like an API server where join depends on it:
// generated names, UIDs and a token controller.
type fakeCluster struct {
	*cluster
	kube *fake.Clientset
	fed  client.WithWatch

	mu sync.Mutex
	// tokenController makes the fake fill token Secrets, as
	// kube-controller-manager does; off, tokens never arrive.
	tokenController bool
	// unreachable makes every request fail like a dead connection.
	unreachable bool
	// staleTokens is how many tokens the fake token controller still
	// issues for a deleted ServiceAccount, as a lagging cache makes it do.
	staleTokens int
}

func newFakeCluster(t *testing.T, name string, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	kube := fake.NewClientset(objs...)
	f := &fakeCluster{kube: kube, tokenController: true}
	f.fed = fakeclient.NewClientBuilder().WithScheme(newScheme()).Build()
	f.cluster = &cluster{
		context:  name,
		server:   "https://" + name + ".example:6443",
		caData:   []byte(fakeCA),
		kube:     kube,
		metadata: f.metadataBridge(),
		fed:      f.fed,
	}
	f.cluster.authenticate = f.authenticate

	var lists []*metav1.APIResourceList
	byGV := map[string]*metav1.APIResourceList{}
	for gvr, kind := range servedResources {
		gv := gvr.GroupVersion().String()
		if byGV[gv] == nil {
			byGV[gv] = &metav1.APIResourceList{GroupVersion: gv}
			lists = append(lists, byGV[gv])
		}
		byGV[gv].APIResources = append(byGV[gv].APIResources, metav1.APIResource{
			Name: gvr.Resource, Kind: kind, Namespaced: kind != "ClusterRole", Verbs: []string{"get", "list", "create", "delete"},
		})
	}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = lists

	kube.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, nil, nil
		}
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(m.GetGenerateName() + string(uuid.NewUUID())[:5])
		}
		m.SetUID(uuid.NewUUID())
		return false, nil, nil
	})
	kube.PrependReactor("get", "secrets", f.fillToken)
	// Prepended last, so it runs first.
	kube.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.unreachable {
			return true, nil, errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	return f
}

// fillToken is the fake token controller: it writes a token into a
// service account token Secret the first time it is read.
func (f *fakeCluster) fillToken(a clienttesting.Action) (bool, runtime.Object, error) {
	f.mu.Lock()
	on := f.tokenController
	f.mu.Unlock()
	get := a.(clienttesting.GetAction)
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	obj, err := f.kube.Tracker().Get(gvr, get.GetNamespace(), get.GetName())
	if err != nil || !on {
		return false, nil, nil
	}
	secret := obj.(*corev1.Secret)
	if secret.Type != corev1.SecretTypeServiceAccountToken || len(secret.Data[tokenKey]) > 0 {
		return false, nil, nil
	}
	saName := secret.Annotations[corev1.ServiceAccountNameKey]
	saObj, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), secret.Namespace, saName)
	if err != nil {
		return false, nil, nil
	}
	secret = secret.DeepCopy()
	secret.Annotations[corev1.ServiceAccountUIDKey] = string(saObj.(*corev1.ServiceAccount).UID)
	f.mu.Lock()
	if f.staleTokens > 0 {
		f.staleTokens--
		secret.Annotations[corev1.ServiceAccountUIDKey] = "uid-of-a-deleted-account"
	}
	f.mu.Unlock()
	secret.Data = map[string][]byte{tokenKey: []byte("token-of-" + saName), caCertKey: []byte(fakeCA)}
	if err := f.kube.Tracker().Update(gvr, secret, secret.Namespace); err != nil {
		return true, nil, err
	}
	return true, secret, nil
}

// authenticate accepts a token as the API server's legacy token
// authenticator does: a token Secret holds it and names the current UID
// of its ServiceAccount.
func (f *fakeCluster) authenticate(_ context.Context, token []byte) error {
	unauthorized := apierrors.NewUnauthorized("invalid bearer token")
	list, err := f.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("secrets"), corev1.SchemeGroupVersion.WithKind("Secret"), "")
	if err != nil {
		return err
	}
	for _, s := range list.(*corev1.SecretList).Items {
		if s.Type != corev1.SecretTypeServiceAccountToken || string(s.Data[tokenKey]) != string(token) {
			continue
		}
		sa, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), s.Namespace, s.Annotations[corev1.ServiceAccountNameKey])
		if err == nil && string(sa.(*corev1.ServiceAccount).UID) == s.Annotations[corev1.ServiceAccountUIDKey] {
			return nil
		}
	}
	return unauthorized
}

func (f *fakeCluster) setStaleTokens(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.staleTokens = n
}

func (f *fakeCluster) setTokenController(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenController = on
}

func (f *fakeCluster) setUnreachable(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unreachable = on
}

// metadataBridge serves metadata lists from the clientset's object
// tracker, so both views show the same objects.
func (f *fakeCluster) metadataBridge() *metadatafake.FakeMetadataClient {
	m := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	m.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		gvr := a.GetResource()
		kind := servedResources[gvr]
		obj, err := f.kube.Tracker().List(gvr, gvr.GroupVersion().WithKind(kind), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return true, nil, err
		}
		list := &metav1.List{}
		for _, item := range items {
			m, err := meta.Accessor(item)
			if err != nil {
				return true, nil, err
			}
			list.Items = append(list.Items, runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
				ObjectMeta: metav1.ObjectMeta{
					Name: m.GetName(), Namespace: m.GetNamespace(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
				},
			}})
		}
		return true, list, nil
	})
	return m
}

// objects lists every object the fake holds of the kinds join and unjoin
// touch, as "Kind namespace/name", sorted.
func (f *fakeCluster) objects(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	add := func(kind string, m metav1.Object) {
		out = append(out, objectRef{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}.String())
	}
	core, rbac := f.kube.CoreV1(), f.kube.RbacV1()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	nss, err := core.Namespaces().List(ctx, metav1.ListOptions{})
	must(err)
	for i := range nss.Items {
		add("Namespace", &nss.Items[i])
	}
	sas, err := core.ServiceAccounts("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range sas.Items {
		add("ServiceAccount", &sas.Items[i])
	}
	secrets, err := core.Secrets("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range secrets.Items {
		add("Secret", &secrets.Items[i])
	}
	cms, err := core.ConfigMaps("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range cms.Items {
		add("ConfigMap", &cms.Items[i])
	}
	crs, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	must(err)
	for i := range crs.Items {
		add("ClusterRole", &crs.Items[i])
	}
	crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	must(err)
	for i := range crbs.Items {
		add("ClusterRoleBinding", &crbs.Items[i])
	}
	roles, err := rbac.Roles("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range roles.Items {
		add("Role", &roles.Items[i])
	}
	rbs, err := rbac.RoleBindings("").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range rbs.Items {
		add("RoleBinding", &rbs.Items[i])
	}
	var kfcs corev1beta1.KubeFedClusterList
	must(f.fed.List(ctx, &kfcs))
	for i := range kfcs.Items {
		add("KubeFedCluster", &kfcs.Items[i])
	}
	sort.Strings(out)
	return out
}

// writes lists the mutating requests the clientset received.
func (f *fakeCluster) writes() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		if !slices.Contains([]string{"get", "list", "watch"}, a.GetVerb()) {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// fakeConnector resolves contexts to fake clusters; "host" is current.
type fakeConnector map[string]*fakeCluster

func (c fakeConnector) currentContext() (string, error) { return "host", nil }

func (c fakeConnector) connect(name string) (*cluster, error) {
	f, ok := c[name]
	if !ok {
		return nil, fmt.Errorf("context %q not found in the kubeconfig", name)
	}
	return f.cluster, nil
}

// world is a host and one member, by default without any KubeFed object
// but the host's KubeFed namespace.
type world struct {
	host, member *fakeCluster
	conn         fakeConnector
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{
		host:   newFakeCluster(t, "host", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}),
		member: newFakeCluster(t, "member1"),
	}
	w.conn = fakeConnector{"host": w.host, "member1": w.member}
	return w
}

// run runs kubefedctl with args and returns its stdout and stderr.
func (w *world) run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := IOStreams{Out: &out, ErrOut: &errOut}
	cmd := newRootCommand(streams, func(*globalOptions, IOStreams) clusterConnector { return w.conn })
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// mustRun is run that fails the test on an error.
func (w *world) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := w.run(t, args...)
	if err != nil {
		t.Fatalf("kubefedctl %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
	}
	return out
}

// hostSecret returns the one Opaque Secret in the host's
// KubeFed namespace.
func (w *world) hostSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	list, err := w.host.kube.CoreV1().Secrets(testNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found []*corev1.Secret
	for i := range list.Items {
		if list.Items[i].Type == corev1.SecretTypeOpaque {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one host Secret, found %d", len(found))
	}
	return found[0]
}
