//go:build integration

package kubefedctl

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// TestTypeFederationLocalHost enables, uses and disables federated types
// against a real API server, with no controller-manager of ours running.
func TestTypeFederationLocalHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{
		Clusters: []string{"host"},
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
	cfg := fed.Host().RESTConfig()
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	crds, err := framework.ReadCRDs(filepath.Join("..", "..", "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	crds = append(crds, widgetsCRD())
	if err := framework.InstallCRDs(ctx, c, crds); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{testNamespace, "demo"} {
		if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
	}

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

	// The real discovery resolves the default types to exactly the
	// shipped manifests.
	for _, name := range []string{"deployments.apps", "configmaps", "namespaces", "services", "ingresses.networking.k8s.io"} {
		target := defaultTarget(t, name)
		crd, _ := federatedtype.CRD(target, federatedtype.Options{})
		var want []byte
		for _, file := range []string{
			filepath.Join("..", "..", "config", "crd", "federated", crd.Name+".yaml"),
			filepath.Join("..", "..", "config", "default-types", name+".yaml"),
		} {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, data...)
		}
		if got := mustRun("enable", name, "-o", "yaml"); got != string(want) {
			t.Errorf("enable %s -o yaml differs from the shipped files", name)
		}
	}

	// Enable a built-in type, a custom type and one by short name.
	mustRun("enable", "deployments.apps")
	mustRun("enable", "Widget")
	mustRun("enable", "cm")
	mustRun("enable", "ns")
	wantFTCs := map[string]corev1beta1.FederatedTypeConfigSpec{
		"deployments.apps":    federatedtype.TypeConfig(defaultTarget(t, "deployments.apps"), federatedtype.Options{}).Spec,
		"configmaps":          federatedtype.TypeConfig(defaultTarget(t, "configmaps"), federatedtype.Options{}).Spec,
		"namespaces":          federatedtype.TypeConfig(defaultTarget(t, "namespaces"), federatedtype.Options{}).Spec,
		"widgets.example.com": federatedtype.TypeConfig(federatedtype.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"}, Namespaced: true}, federatedtype.Options{}).Spec,
	}
	for name, want := range wantFTCs {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, ftc); err != nil {
			t.Fatalf("FTC %s: %v", name, err)
		}
		if !reflect.DeepEqual(ftc.Spec, want) {
			t.Errorf("FTC %s spec:\n got %+v\nwant %+v", name, ftc.Spec, want)
		}
		crdName := resourceOf(want.FederatedType).String()
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			t.Fatalf("CRD %s: %v", crdName, err)
		}
		if !established(crd) {
			t.Errorf("CRD %s is not established", crdName)
		}
	}
	// Enabling again changes nothing: the comparison with the live CRD
	// survives the API server's defaulting.
	if out := mustRun("enable", "deploy"); strings.Count(out, " unchanged in host") != 2 {
		t.Errorf("enable again changed something:\n%s", out)
	}
	if _, _, err := run("enable", "events"); err == nil || !strings.Contains(err.Error(), "Events record") {
		t.Errorf("enable events: got %v", err)
	}

	// Federate a Deployment read from the host.
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	if err := c.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	mustRun("federate", "deployment", "web", "-n", "demo")
	fedDeploy := getObject(ctx, t, dyn, fedDeployGVR, "demo", "web")
	live := getObject(ctx, t, dyn, deploymentsGVR, "demo", "web")
	wantTemplate := live.DeepCopy().Object
	for _, k := range []string{"apiVersion", "kind", "status"} {
		delete(wantTemplate, k)
	}
	wantTemplate["metadata"] = map[string]any{"labels": map[string]any{"app": "web"}}
	if tmpl, _, _ := unstructured.NestedMap(fedDeploy.Object, "spec", "template"); !reflect.DeepEqual(tmpl, wantTemplate) {
		t.Errorf("FederatedDeployment template:\n got %v\nwant %v", tmpl, wantTemplate)
	}
	if sel, found, _ := unstructured.NestedMap(fedDeploy.Object, "spec", "placement", "clusterSelector"); !found || len(sel) != 0 {
		t.Errorf("placement: %v", fedDeploy.Object["spec"])
	}

	// A Service, enabling its type on the way.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	mustRun("federate", "svc", "web", "-n", "demo", "--enable-type")
	fedSvc := getObject(ctx, t, dyn, schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedservices"}, "demo", "web")
	svcSpec, _, _ := unstructured.NestedMap(fedSvc.Object, "spec", "template", "spec")
	ports, _, _ := unstructured.NestedSlice(svcSpec, "ports")
	if _, ok := svcSpec["clusterIP"]; ok || svcSpec["clusterIPs"] != nil || len(ports) != 1 || ports[0].(map[string]any)["nodePort"] != nil {
		t.Errorf("FederatedService template spec keeps allocated fields: %v", svcSpec)
	}

	// A namespace with its contents.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "demo"}, Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "demo"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if _, err := dyn.Resource(widgetsGVR).Namespace("demo").Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForObject(ctx, t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "demo", "kube-root-ca.crt")
	out := mustRun("federate", "namespace", "demo", "--contents")
	for _, line := range []string{
		"FederatedNamespace demo/demo created in host",
		"FederatedConfigMap demo/app created in host",
		"FederatedDeployment demo/web unchanged in host",
		"FederatedService demo/web unchanged in host",
		"FederatedWidget demo/w1 created in host",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("federate --contents does not say %q", line)
		}
	}
	if names := listNames(ctx, t, dyn, schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"}); !slices.Equal(names, []string{"demo/app"}) {
		t.Errorf("FederatedConfigMaps: %v (kube-root-ca.crt must be skipped)", names)
	}
	getObject(ctx, t, dyn, fedNamespaceGVR, "demo", "demo")
	if size, _, _ := unstructured.NestedInt64(getObject(ctx, t, dyn, fedWidgetsGVR, "demo", "w1").Object, "spec", "template", "spec", "size"); size != 3 {
		t.Error("FederatedWidget demo/w1 does not carry the Widget's spec")
	}

	// Orphaning deletion round trip, naming the type three ways.
	mustRun("orphaning-deletion", "enable", "deployments", "web", "-n", "demo")
	if getObject(ctx, t, dyn, fedDeployGVR, "demo", "web").GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation] != "true" {
		t.Error("FederatedDeployment not annotated")
	}
	if out := mustRun("orphaning-deletion", "status", "fdeploy", "web", "-n", "demo"); out != "Enabled\n" {
		t.Errorf("status: %s", out)
	}
	mustRun("orphaning-deletion", "disable", "FederatedDeployment", "web", "-n", "demo")
	if _, ok := getObject(ctx, t, dyn, fedDeployGVR, "demo", "web").GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation]; ok {
		t.Error("annotation not removed")
	}
	if out := mustRun("orphaning-deletion", "status", "deployments.apps", "web", "-n", "demo"); out != "Disabled\n" {
		t.Errorf("status: %s", out)
	}

	// disable --delete-crd is refused while a FederatedWidget exists.
	_, _, err = run("disable", "widgets.example.com", "--delete-crd", "--timeout=1s")
	if err == nil || !strings.Contains(err.Error(), "1 FederatedWidget object still exists (demo/w1); delete it first") {
		t.Fatalf("disable with an instance: got %v", err)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "widgets.example.com"}, ftc); err != nil || !ftc.PropagationEnabled() {
		t.Fatalf("the refused disable changed the FTC (err %v)", err)
	}
	if err := dyn.Resource(fedWidgetsGVR).Namespace("demo").Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run("disable", "wd", "--delete-crd", "--timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "is the controller-manager running?") {
		t.Errorf("no warning about the missing controller-manager:\n%s", errOut)
	}
	if !strings.Contains(out, "CustomResourceDefinition federatedwidgets.types.kubefed.io deleted in host") {
		t.Errorf("output:\n%s", out)
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "widgets.example.com"}, &corev1beta1.FederatedTypeConfig{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("FTC widgets.example.com still exists (err %v)", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "federatedwidgets.types.kubefed.io"}, crd); !apierrors.IsNotFound(err) && crd.DeletionTimestamp == nil {
		t.Errorf("CRD federatedwidgets.types.kubefed.io not deleted (err %v)", err)
	}
	// The target type is untouched.
	getObject(ctx, t, dyn, widgetsGVR, "demo", "w1")
}

func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

func defaultTarget(t *testing.T, name string) federatedtype.Target {
	t.Helper()
	for _, d := range federatedtype.DefaultTargets {
		if d.TypeConfigName() == name {
			return d
		}
	}
	t.Fatalf("%s is no default type", name)
	return federatedtype.Target{}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func getObject(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
	return u
}

func waitForObject(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) {
	t.Helper()
	for {
		_, err := dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s %s/%s never appeared: %v", gvr.Resource, namespace, name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func listNames(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource) []string {
	t.Helper()
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, item := range list.Items {
		names = append(names, namespacedName(item.GetNamespace(), item.GetName()))
	}
	sort.Strings(names)
	return names
}
