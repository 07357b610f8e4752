package federatedtype

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestCRDNamesAndScope(t *testing.T) {
	cases := []struct {
		target     Target
		name       string
		kind       string
		shortNames []string
		scope      string
	}{
		{
			target:     Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", ShortNames: []string{"deploy"}, Namespaced: true},
			name:       "federateddeployments.types.kubefed.io",
			kind:       "FederatedDeployment",
			shortNames: []string{"fdeploy"},
			scope:      "Namespaced",
		},
		{
			// FederatedNamespace is namespaced although Namespace is not.
			target:     Target{Version: "v1", Kind: "Namespace", Plural: "namespaces", ShortNames: []string{"ns"}},
			name:       "federatednamespaces.types.kubefed.io",
			kind:       "FederatedNamespace",
			shortNames: []string{"fns"},
			scope:      "Namespaced",
		},
		{
			target: Target{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Plural: "clusterroles"},
			name:   "federatedclusterroles.types.kubefed.io",
			kind:   "FederatedClusterRole",
			scope:  "Cluster",
		},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			crd, err := CRD(tc.target, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if crd.Name != tc.name || crd.Spec.Names.Kind != tc.kind || string(crd.Spec.Scope) != tc.scope {
				t.Errorf("got name %q kind %q scope %q", crd.Name, crd.Spec.Names.Kind, crd.Spec.Scope)
			}
			if !slices.Equal(crd.Spec.Names.ShortNames, tc.shortNames) {
				t.Errorf("short names %v, want %v", crd.Spec.Names.ShortNames, tc.shortNames)
			}
			v := crd.Spec.Versions[0]
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Error("status subresource missing")
			}
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			for _, field := range []string{"template", "placement", "overrides", "retainReplicas"} {
				if _, ok := spec.Properties[field]; !ok {
					t.Errorf("spec.%s missing from the schema", field)
				}
			}
			if tmpl := spec.Properties["template"]; tmpl.XPreserveUnknownFields == nil || !*tmpl.XPreserveUnknownFields {
				t.Error("template must preserve unknown fields")
			}
			item := spec.Properties["overrides"].Items.Schema.Properties["clusterOverrides"].Items.Schema
			op := item.Properties["op"]
			var ops []string
			for _, v := range op.Enum {
				ops = append(ops, string(v.Raw))
			}
			// KubeFed's pattern ^(add|remove|replace)?$ admitted "" too.
			if !slices.Equal(ops, []string{`"add"`, `"remove"`, `"replace"`, `""`}) {
				t.Errorf("override op enum = %v, want add, remove, replace and \"\"", ops)
			}
			if len(item.Properties["path"].XValidations) == 0 {
				t.Error("override path has no CEL rules")
			}
		})
	}
}

func TestCRDCustomGroupAndVersion(t *testing.T) {
	target := Target{Group: "example.com", Version: "v2", Kind: "Widget", Plural: "widgets", Namespaced: true}
	crd, err := CRD(target, Options{FederatedGroup: "fed.example.com", FederatedVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if crd.Name != "federatedwidgets.fed.example.com" || crd.Spec.Versions[0].Name != "v1" {
		t.Errorf("got %s version %s", crd.Name, crd.Spec.Versions[0].Name)
	}
	ftc := TypeConfig(target, Options{FederatedGroup: "fed.example.com", FederatedVersion: "v1"})
	if ftc.Name != "widgets.example.com" || ftc.Spec.FederatedType.Group != "fed.example.com" ||
		ftc.Spec.TargetType.Version != "v2" || ftc.Spec.TargetType.Scope != corev1beta1.NamespaceScope {
		t.Errorf("unexpected type config %+v", ftc)
	}
}

func TestCRDRejectsIncompleteTarget(t *testing.T) {
	if _, err := CRD(Target{Kind: "Widget"}, Options{}); err == nil {
		t.Fatal("expected an error for a target without plural and version")
	}
}

// The default types shipped in config/ must be exactly what this package
// generates, so that enable and the shipped YAML never disagree.
func TestShippedDefaultTypesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "config")
	for _, target := range DefaultTargets {
		crd, err := CRD(target, Options{})
		if err != nil {
			t.Fatal(err)
		}
		assertFile(t, filepath.Join(root, "crd", "federated", crd.Name+".yaml"), crd)
		ftc := TypeConfig(target, Options{})
		assertFile(t, filepath.Join(root, "default-types", ftc.Name+".yaml"), ftc)
	}
}

func assertFile(t *testing.T, path string, obj runtime.Object) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make manifests`)", err)
	}
	want, err := Manifest(obj)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "---\n"+string(want) {
		t.Errorf("%s is stale: run `make manifests`", path)
	}
}
