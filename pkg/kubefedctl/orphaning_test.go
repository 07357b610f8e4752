package kubefedctl

import (
	"strings"
	"testing"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestOrphaningDeletion(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "deployments.apps")
	h.mustRun(t, "enable", "ns")
	h.object(t, fedDeployGVR, `apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: demo, annotations: {keep: me}}
spec: {}
`)
	annotations := func() map[string]string {
		t.Helper()
		return h.get(t, fedDeployGVR, "demo", "web").GetAnnotations()
	}
	// status prints KubeFed's word alone on standard output, and what it
	// means on standard error.
	status := func(typeName string) string {
		t.Helper()
		out, errOut, err := h.run(t, "", "orphaning-deletion", "status", typeName, "web", "-n", "demo")
		if err != nil {
			t.Fatal(err)
		}
		if out != "Enabled\n" && out != "Disabled\n" {
			t.Errorf("status printed %q, want Enabled or Disabled alone, as KubeFed", out)
		}
		return out + errOut
	}

	if out := status("deployments"); out != "Disabled\nOrphaning deletion of FederatedDeployment demo/web is disabled: deleting it deletes its objects in member clusters\n" {
		t.Errorf("status before: %q", out)
	}
	if out := h.mustRun(t, "orphaning-deletion", "enable", "deployments", "web", "-n", "demo", "--dry-run"); !strings.HasSuffix(out, "enabled (dry run)\n") {
		t.Errorf("dry run: %q", out)
	}
	if _, ok := annotations()[corev1beta1.OrphanManagedResourcesAnnotation]; ok {
		t.Fatal("the dry run annotated")
	}
	if out := h.mustRun(t, "orphaning-deletion", "enable", "deployments", "web", "-n", "demo"); out != "Orphaning deletion of FederatedDeployment demo/web enabled\n" {
		t.Errorf("enable: %q", out)
	}
	if a := annotations(); a[corev1beta1.OrphanManagedResourcesAnnotation] != "true" || a["keep"] != "me" {
		t.Errorf("annotations after enable: %v", a)
	}
	if out := status("fdeploy"); !strings.Contains(out, "is enabled: deleting it leaves its objects in member clusters") {
		t.Errorf("status by short name: %q", out)
	}
	if out := h.mustRun(t, "orphaning-deletion", "enable", "deployments.apps", "web", "-n", "demo"); !strings.Contains(out, "is already enabled") {
		t.Errorf("enable again: %q", out)
	}
	if out := h.mustRun(t, "orphaning-deletion", "disable", "FederatedDeployment", "web", "-n", "demo"); out != "Orphaning deletion of FederatedDeployment demo/web disabled\n" {
		t.Errorf("disable: %q", out)
	}
	if a := annotations(); len(a) != 1 || a["keep"] != "me" {
		t.Errorf("annotations after disable: %v", a)
	}
	if out := status("deploy"); !strings.Contains(out, "is disabled") {
		t.Errorf("status after disable: %q", out)
	}

	// A FederatedNamespace is found in the namespace it federates.
	h.object(t, fedNamespaceGVR, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedNamespace\nmetadata: {name: demo, namespace: demo}\nspec: {}\n")
	h.mustRun(t, "orphaning-deletion", "enable", "namespaces", "demo")
	if h.get(t, fedNamespaceGVR, "demo", "demo").GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation] != "true" {
		t.Error("FederatedNamespace demo not annotated")
	}

	for args, want := range map[string]string{
		"orphaning-deletion status deployments nope -n demo": "FederatedDeployment demo/nope not found in host",
		"orphaning-deletion enable cm web -n demo":           "configmaps is not enabled",
		"orphaning-deletion status deployments":              "accepts 2 arg(s)",
	} {
		if _, _, err := h.run(t, "", strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want error containing %q", args, err, want)
		}
	}
}
