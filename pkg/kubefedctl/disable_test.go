package kubefedctl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

func federatedWidget(namespace, name string) string {
	return fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedWidget
metadata: {name: %s, namespace: %s}
spec: {template: {spec: {size: 1}}, placement: {clusterSelector: {}}}
`, name, namespace)
}

func TestDisableDeleteCRDRefusedWhileInstancesExist(t *testing.T) {
	h := newTypesHost(t)
	h.controller = true
	h.mustRun(t, "enable", "widgets.example.com")
	h.object(t, fedWidgetsGVR, federatedWidget("demo", "b"))
	h.object(t, fedWidgetsGVR, federatedWidget("demo", "a"))
	h.object(t, fedWidgetsGVR, federatedWidget("prod", "a"))

	_, _, err := h.run(t, "", "disable", "widgets.example.com", "--delete-crd")
	want := "disable widgets.example.com: 3 FederatedWidget objects still exist (demo/a, demo/b, prod/a); delete them first"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	// Refused before anything changed: propagation still runs, so that
	// deleting the objects removes them from the members.
	if ftc := h.ftc(t, "widgets.example.com"); ftc == nil || !ftc.PropagationEnabled() {
		t.Errorf("FTC changed by the refused disable: %+v", ftc)
	}
	if h.crd(t, "federatedwidgets.types.kubefed.io") == nil {
		t.Fatal("CRD deleted")
	}

	for _, ref := range [][2]string{{"demo", "a"}, {"demo", "b"}, {"prod", "a"}} {
		if err := h.dyn.Resource(fedWidgetsGVR).Namespace(ref[0]).Delete(context.Background(), ref[1], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, err := h.run(t, "", "disable", "widgets.example.com", "--delete-crd")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	wantLines := []string{
		"FederatedTypeConfig kube-federation-system/widgets.example.com configured in host",
		"Propagation of widgets.example.com disabled",
		"Propagation controller of widgets.example.com stopped",
		"CustomResourceDefinition federatedwidgets.types.kubefed.io deleted in host",
		"FederatedTypeConfig kube-federation-system/widgets.example.com deleted in host",
		`Type "widgets.example.com" disabled`,
	}
	if got := lines(out); !slices.Equal(got, wantLines) {
		t.Errorf("output:\n got %q\nwant %q", got, wantLines)
	}
	if errOut != "" {
		t.Errorf("unexpected warnings: %s", errOut)
	}
	if h.crd(t, "federatedwidgets.types.kubefed.io") != nil || h.ftc(t, "widgets.example.com") != nil {
		t.Error("CRD or FTC left")
	}
}

func TestDisableWithoutControllerManager(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "cm")
	// A controller-manager once added its finalizer, then went away.
	ftc := h.ftc(t, "configmaps")
	ftc.Finalizers = []string{corev1beta1.FederatedTypeConfigFinalizer}
	ftc.Status.PropagationController = corev1beta1.ControllerStatusRunning
	if err := h.fed.Update(context.Background(), ftc); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := h.run(t, "", "disable", "ConfigMap", "--timeout=30ms")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "did not report the propagation controller of configmaps stopped within 30ms") ||
		!strings.Contains(errOut, "removed finalizer core.kubefed.io/federated-type-config") {
		t.Errorf("warnings:\n%s", errOut)
	}
	if !strings.Contains(out, `Type "configmaps" disabled`) || strings.Contains(out, "CustomResourceDefinition") {
		t.Errorf("output:\n%s", out)
	}
	if h.ftc(t, "configmaps") != nil {
		t.Error("FTC left terminating")
	}
	// Without --delete-crd the federated type stays.
	if h.crd(t, "federatedconfigmaps.types.kubefed.io") == nil {
		t.Error("CRD deleted without --delete-crd")
	}
}

func TestDisableFindsTheTypeConfig(t *testing.T) {
	for _, name := range []string{"deployments.apps", "deploy", "Deployment", "deployments", "fdeploy", "FederatedDeployment"} {
		t.Run(name, func(t *testing.T) {
			h := newTypesHost(t)
			h.controller = true
			h.mustRun(t, "enable", "deployments.apps")
			h.mustRun(t, "disable", name)
			if h.ftc(t, "deployments.apps") != nil {
				t.Error("FTC not deleted")
			}
		})
	}

	h := newTypesHost(t)
	h.controller = true
	// A hand-written FTC under another name, for a type the host no
	// longer serves.
	gone := federatedtype.TypeConfig(federatedtype.Target{Group: "gone.example.com", Version: "v1", Kind: "Gear", Plural: "gears", Namespaced: true}, federatedtype.Options{})
	gone.Name = "my-gears"
	if err := h.fed.Create(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	// As in KubeFed, a type not enabled is no error: disable says so.
	if out, _, err := h.run(t, "", "disable", "cm"); err != nil || out != "FederatedTypeConfig \"kube-federation-system/configmaps\" does not exist\n" {
		t.Errorf("disable of a type not enabled: %q, %v", out, err)
	}
	if _, _, err := h.run(t, "", "disable", "cm", "--federated-group", "x.example.com"); err == nil || !strings.Contains(err.Error(), "--federated-group is used only with --delete-crd") {
		t.Errorf("--federated-group without --delete-crd: %v", err)
	}
	if _, _, err := h.run(t, "", "disable", "nosuchthings"); err == nil || !strings.Contains(err.Error(), `no FederatedTypeConfig in namespace "kube-federation-system" of host federates "nosuchthings"`) {
		t.Errorf("disable of an unknown type: got %v", err)
	}
	out := h.mustRun(t, "disable", "gears.gone.example.com", "--dry-run")
	if !strings.Contains(out, "FederatedTypeConfig kube-federation-system/my-gears deleted in host (dry run)") || h.ftc(t, "my-gears") == nil {
		t.Errorf("dry run:\n%s", out)
	}
	h.mustRun(t, "disable", "Gear")
	if h.ftc(t, "my-gears") != nil {
		t.Error("FTC my-gears not deleted")
	}
	// Run again, as a teardown script would: the type is neither enabled
	// nor served, which KubeFed said, without failing.
	if out, _, err := h.run(t, "", "disable", "gears.gone.example.com"); err != nil || out != "FederatedTypeConfig \"kube-federation-system/gears.gone.example.com\" does not exist\n" {
		t.Errorf("disable of a type gone: %q, %v", out, err)
	}
	// KubeFed's --version, with --delete-crd only.
	if _, _, err := h.run(t, "", "disable", "cm", "--version", "v1"); err == nil || !strings.Contains(err.Error(), "--version is used only with --delete-crd") {
		t.Errorf("--version without --delete-crd: %v", err)
	}
}

func TestDisableDeleteCRDChecks(t *testing.T) {
	h := newTypesHost(t)
	h.controller = true
	h.mustRun(t, "enable", "deployments.apps")
	// Another FTC sharing the federated type keeps the CRD.
	other := federatedtype.TypeConfig(federatedtype.Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}, federatedtype.Options{})
	other.Name = "copy"
	if err := h.fed.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.run(t, "", "disable", "deployments.apps", "--delete-crd"); err == nil || !strings.Contains(err.Error(), "FederatedTypeConfig kube-federation-system/copy also uses the federated type") {
		t.Errorf("shared federated type: got %v", err)
	}
	if err := h.fed.Delete(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	// One instance: singular wording.
	h.object(t, fedDeployGVR, `apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: demo}
spec: {}
`)
	if _, _, err := h.run(t, "", "disable", "deployments.apps", "--delete-crd"); err == nil || !strings.HasSuffix(err.Error(), "1 FederatedDeployment object still exists (demo/web); delete it first") {
		t.Errorf("one instance: got %v", err)
	}
	// Many instances: the first ones are named.
	for i := range 11 {
		h.object(t, fedDeployGVR, fmt.Sprintf("apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: x%02d, namespace: prod}\n", i))
	}
	_, _, err := h.run(t, "", "disable", "deployments.apps", "--delete-crd")
	if err == nil || !strings.HasSuffix(err.Error(), "12 FederatedDeployment objects still exist (demo/web, prod/x00, prod/x01, prod/x02, prod/x03, prod/x04, prod/x05, prod/x06, prod/x07, prod/x08, …); delete them first") {
		t.Errorf("many instances: got %v", err)
	}
	if err := h.dyn.Resource(fedDeployGVR).Namespace("demo").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		if err := h.dyn.Resource(fedDeployGVR).Namespace("prod").Delete(context.Background(), fmt.Sprintf("x%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := h.mustRun(t, "disable", "deployments.apps", "--delete-crd", "--dry-run")
	if !strings.Contains(out, "CustomResourceDefinition federateddeployments.types.kubefed.io deleted in host (dry run)") {
		t.Errorf("dry run:\n%s", out)
	}
	if ftc := h.ftc(t, "deployments.apps"); ftc == nil || !ftc.PropagationEnabled() || h.crd(t, "federateddeployments.types.kubefed.io") == nil {
		t.Error("the dry run changed the host")
	}
}

// An enable that stopped after the federated CRD leaves it without its FTC;
// as in KubeFed, disable --delete-crd deletes it all the same.
func TestDisableDeleteCRDWithoutTypeConfig(t *testing.T) {
	h := newTypesHost(t)
	h.controller = true
	h.mustRun(t, "enable", "deployments.apps")
	ftc := h.ftc(t, "deployments.apps")
	ftc.Finalizers = nil
	if err := h.fed.Update(context.Background(), ftc); err != nil {
		t.Fatal(err)
	}
	if err := h.fed.Delete(context.Background(), ftc); err != nil {
		t.Fatal(err)
	}
	out := h.mustRun(t, "disable", "deployments.apps", "--delete-crd")
	if !strings.Contains(out, `FederatedTypeConfig "kube-federation-system/deployments.apps" does not exist`) ||
		!strings.Contains(out, "CustomResourceDefinition federateddeployments.types.kubefed.io deleted in host") {
		t.Errorf("output:\n%s", out)
	}
	if h.crd(t, "federateddeployments.types.kubefed.io") != nil {
		t.Error("the federated CRD of a type without an FTC was not deleted")
	}
}

// A type the chart installed comes back with the release's next upgrade:
// disable says so, and how to keep it disabled.
func TestDisableWarnsOfATypeTheChartInstalled(t *testing.T) {
	h := newTypesHost(t)
	h.controller = true
	h.mustRun(t, "enable", "cm")
	ftc := h.ftc(t, "configmaps")
	ftc.Labels = map[string]string{"app.kubernetes.io/managed-by": "Helm"}
	ftc.Annotations = map[string]string{"meta.helm.sh/release-name": "kubefed"}
	if err := h.fed.Update(context.Background(), ftc); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := h.run(t, "", "disable", "cm")
	if err != nil || !strings.Contains(errOut, `installed by the Helm release "kubefed"`) || !strings.Contains(errOut, "defaultTypes.exclude") {
		t.Errorf("disable of a chart's type: %v\n%s", err, errOut)
	}
}
