package kubefedctl

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

// enable -o yaml prints, for each default type, exactly the files shipped
// in config/: resolving the type through discovery and generating from it
// is the same code path as the shipped defaults.
func TestEnableOutputIsTheShippedManifests(t *testing.T) {
	h := newTypesHost(t)
	for _, target := range federatedtype.DefaultTargets {
		name := target.TypeConfigName()
		t.Run(name, func(t *testing.T) {
			crd, err := federatedtype.CRD(target, federatedtype.Options{})
			if err != nil {
				t.Fatal(err)
			}
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
			if got := h.mustRun(t, "enable", name, "-o", "yaml"); got != string(want) {
				t.Errorf("enable %s -o yaml differs from the shipped files:\n%s", name, got)
			}
		})
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := h.fed.List(context.Background(), &crds); err != nil || len(crds.Items) != 0 {
		t.Errorf("-o yaml applied %d CRDs (err %v)", len(crds.Items), err)
	}
	if _, _, err := h.run(t, "", "enable", "cm", "-o", "json"); err == nil || !strings.Contains(err.Error(), "must be yaml") {
		t.Errorf("-o json: got %v", err)
	}
}

func TestEnableCreatesTheFederatedTypeAndItsTypeConfig(t *testing.T) {
	h := newTypesHost(t)
	out := h.mustRun(t, "enable", "deploy")
	want := []string{
		"CustomResourceDefinition federateddeployments.types.kubefed.io created in host",
		"FederatedTypeConfig kube-federation-system/deployments.apps created in host",
		`Type "deployments.apps" enabled: federated as FederatedDeployment (federateddeployments.types.kubefed.io/v1beta1)`,
	}
	if got := lines(out); !slices.Equal(got, want) {
		t.Errorf("output:\n got %q\nwant %q", got, want)
	}
	target := federatedtype.DefaultTargets[slices.IndexFunc(federatedtype.DefaultTargets, func(d federatedtype.Target) bool { return d.Kind == "Deployment" })]
	wantCRD, _ := federatedtype.CRD(target, federatedtype.Options{})
	if crd := h.crd(t, wantCRD.Name); crd == nil || !equality.Semantic.DeepEqual(crd.Spec, wantCRD.Spec) {
		t.Errorf("CRD %s missing or not as generated", wantCRD.Name)
	}
	wantFTC := federatedtype.TypeConfig(target, federatedtype.Options{})
	if ftc := h.ftc(t, "deployments.apps"); ftc == nil || !equality.Semantic.DeepEqual(ftc.Spec, wantFTC.Spec) {
		t.Errorf("FTC deployments.apps missing or not as generated: %+v", ftc)
	}

	// Enabled already: nothing changes, whatever name is used.
	for _, name := range []string{"deployments.apps", "Deployment"} {
		out = h.mustRun(t, "enable", name)
		if !strings.Contains(out, "federateddeployments.types.kubefed.io unchanged") || !strings.Contains(out, "deployments.apps unchanged") {
			t.Errorf("enable %s again:\n%s", name, out)
		}
	}
	// Now the federated type is served, under its short name too.
	idx, err := discoverAPI(context.Background(), h.cluster)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := idx.resolve("fdeploy", ""); err != nil || typ.kind != "FederatedDeployment" {
		t.Errorf("fdeploy resolves to %v, %v", typ.kind, err)
	}
}

func TestEnableWarnsWithoutNamespacesType(t *testing.T) {
	h := newTypesHost(t)
	_, errOut, err := h.run(t, "", "enable", "cm")
	if err != nil || !strings.Contains(errOut, "kubefedctl enable namespaces") {
		t.Errorf("no warning about the namespaces type (err %v):\n%s", err, errOut)
	}
	h.mustRun(t, "enable", "ns")
	if _, errOut, _ := h.run(t, "", "enable", "secrets"); errOut != "" {
		t.Errorf("unexpected warning: %s", errOut)
	}
}

func TestEnableVersion(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "widgets.example.com", "--version", "v1beta1")
	if ftc := h.ftc(t, "widgets.example.com"); ftc == nil || ftc.Spec.TargetType.Version != "v1beta1" {
		t.Fatalf("FTC target version: %+v", ftc)
	}
	// Switching to the preferred version updates the FTC in place and keeps
	// what the user changed.
	ftc := h.ftc(t, "widgets.example.com")
	disabled := corev1beta1.Disabled
	ftc.Spec.StatusCollection = &disabled
	if err := h.fed.Update(context.Background(), ftc); err != nil {
		t.Fatal(err)
	}
	out := h.mustRun(t, "enable", "wd")
	if !strings.Contains(out, "FederatedTypeConfig kube-federation-system/widgets.example.com configured in host") {
		t.Errorf("output:\n%s", out)
	}
	ftc = h.ftc(t, "widgets.example.com")
	if ftc.Spec.TargetType.Version != "v1" || *ftc.Spec.StatusCollection != corev1beta1.Disabled {
		t.Errorf("FTC after version switch: %+v", ftc.Spec)
	}
}

func TestEnableRefusals(t *testing.T) {
	cases := map[string]string{
		"events":               "Events record what happened in one cluster",
		"bindings":             "cannot be federated",
		"componentstatuses":    "cannot be federated",
		"ftc":                  "is a KubeFed type",
		"widgets":              "ambiguous",
		"nosuchthings":         "serves no API type",
		"tokenreviews":         "does not support get, list, watch, update, delete",
		"deployments.apps/v1":  "serves no API type",
		"federateddeployments": "serves no API type",
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			h := newTypesHost(t)
			_, _, err := h.run(t, "", "enable", name)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want error containing %q", err, want)
			}
			assertNothingEnabled(t, h)
		})
	}
	h := newTypesHost(t)
	h.mustRun(t, "enable", "deployments.apps")
	if _, _, err := h.run(t, "", "enable", "fdeploy"); err == nil || !strings.Contains(err.Error(), "is a KubeFed type (group types.kubefed.io)") {
		t.Errorf("enabling a federated type: got %v", err)
	}
	// A federated type in a group of one's own is refused as well.
	h.mustRun(t, "enable", "cm", "--federated-group", "fed.example.com")
	if _, _, err := h.run(t, "", "enable", "federatedconfigmaps.fed.example.com"); err == nil ||
		!strings.Contains(err.Error(), "federatedconfigmaps.fed.example.com is the federated type of FederatedTypeConfig kube-federation-system/configmaps") {
		t.Errorf("enabling a federated type of another group: got %v", err)
	}
	if _, _, err := h.run(t, "", "enable", "cm", "--federated-version", "V1"); err == nil || !strings.Contains(err.Error(), "invalid --federated-version") {
		t.Errorf("--federated-version V1: got %v", err)
	}
	for _, bad := range []string{"types", "", "Types.Example.com"} {
		if _, _, err := h.run(t, "", "enable", "cm", "--federated-group", bad); err == nil || !strings.Contains(err.Error(), "invalid --federated-group") {
			t.Errorf("--federated-group %q: got %v", bad, err)
		}
	}
}

func assertNothingEnabled(t *testing.T, h *typesHost) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	var ftcs corev1beta1.FederatedTypeConfigList
	if err := h.fed.List(context.Background(), &crds); err != nil {
		t.Fatal(err)
	}
	if err := h.fed.List(context.Background(), &ftcs); err != nil {
		t.Fatal(err)
	}
	if len(crds.Items)+len(ftcs.Items) != 0 {
		t.Errorf("%d CRDs and %d FTCs were created", len(crds.Items), len(ftcs.Items))
	}
}

func TestEnableRefusesConflictingTypeConfigs(t *testing.T) {
	widget := federatedtype.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
	deployment := federatedtype.Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}
	cases := []struct {
		name     string
		existing func() *corev1beta1.FederatedTypeConfig
		want     string
	}{
		{
			name: "same name, other target",
			existing: func() *corev1beta1.FederatedTypeConfig {
				ftc := federatedtype.TypeConfig(widget, federatedtype.Options{})
				ftc.Name = "deployments.apps"
				return ftc
			},
			want: "FederatedTypeConfig kube-federation-system/deployments.apps already exists for another type: target Widget (widgets.example.com/v1)",
		},
		{
			name: "same name, other federated type",
			existing: func() *corev1beta1.FederatedTypeConfig {
				return federatedtype.TypeConfig(deployment, federatedtype.Options{FederatedGroup: "fed.example.com"})
			},
			want: "already exists for another type",
		},
		{
			name: "equivalent under another name",
			existing: func() *corev1beta1.FederatedTypeConfig {
				ftc := federatedtype.TypeConfig(deployment, federatedtype.Options{})
				ftc.Name = "my-deployments"
				return ftc
			},
			want: "FederatedTypeConfig kube-federation-system/my-deployments already federates Deployment (deployments.apps/v1); it is the same type under another name",
		},
		{
			name: "federated type taken by another target",
			existing: func() *corev1beta1.FederatedTypeConfig {
				other := widget
				other.Kind, other.Plural = "Deployment", "deployments"
				return federatedtype.TypeConfig(other, federatedtype.Options{})
			},
			want: "uses the federated type federateddeployments.types.kubefed.io for Deployment (deployments.example.com/v1) already",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newTypesHost(t)
			existing := tc.existing()
			if err := h.fed.Create(context.Background(), existing); err != nil {
				t.Fatal(err)
			}
			_, _, err := h.run(t, "", "enable", "deployments.apps")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
			if h.crd(t, "federateddeployments.types.kubefed.io") != nil {
				t.Error("the CRD was created although the FTC conflicts")
			}
			if got := h.ftc(t, existing.Name); !equality.Semantic.DeepEqual(got.Spec, existing.Spec) {
				t.Errorf("the existing FTC was changed: %+v", got.Spec)
			}
		})
	}
}

func TestEnableCustomResourceDefinitions(t *testing.T) {
	target := federatedtype.Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", ShortNames: []string{"deploy"}, Namespaced: true}
	generated, err := federatedtype.CRD(target, federatedtype.Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("foreign CRD under the name is refused", func(t *testing.T) {
		h := newTypesHost(t)
		foreign := generated.DeepCopy()
		foreign.Spec.Names.Kind, foreign.Spec.Names.ListKind = "Something", "SomethingList"
		if err := h.fed.Create(context.Background(), foreign); err != nil {
			t.Fatal(err)
		}
		_, _, err := h.run(t, "", "enable", "deployments.apps")
		if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition federateddeployments.types.kubefed.io already exists in the host and is not the federated type of deployments.apps: it defines kind Something") {
			t.Errorf("got %v", err)
		}
		if h.ftc(t, "deployments.apps") != nil {
			t.Error("FTC created")
		}
	})

	t.Run("a CRD without the federated schema is refused", func(t *testing.T) {
		h := newTypesHost(t)
		foreign := generated.DeepCopy()
		spec := foreign.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		delete(spec.Properties, "placement")
		foreign.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		if err := h.fed.Create(context.Background(), foreign); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.run(t, "", "enable", "deployments.apps"); err == nil || !strings.Contains(err.Error(), "no spec.template and spec.placement") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("an outdated federated CRD is updated in place", func(t *testing.T) {
		h := newTypesHost(t)
		old := generated.DeepCopy()
		old.Spec.Versions[0].AdditionalPrinterColumns = nil
		old.Labels = map[string]string{"keep": "me"}
		if err := h.fed.Create(context.Background(), old); err != nil {
			t.Fatal(err)
		}
		before := h.crd(t, old.Name)
		out := h.mustRun(t, "enable", "deployments.apps")
		if !strings.Contains(out, "CustomResourceDefinition federateddeployments.types.kubefed.io configured in host") {
			t.Errorf("output:\n%s", out)
		}
		after := h.crd(t, old.Name)
		if after.UID != before.UID || after.Labels["keep"] != "me" || !equality.Semantic.DeepEqual(after.Spec, generated.Spec) {
			t.Errorf("CRD not updated in place: %+v", after.ObjectMeta)
		}
	})
}

func TestEnableWaitsForTheCRDToBeEstablished(t *testing.T) {
	h := newTypesHost(t)
	h.notEstablished = true
	_, _, err := h.run(t, "", "enable", "cm", "--timeout=50ms")
	if err == nil || !strings.Contains(err.Error(), "CustomResourceDefinition federatedconfigmaps.types.kubefed.io in host is not established after 50ms") {
		t.Fatalf("got %v", err)
	}
	if h.ftc(t, "configmaps") != nil {
		t.Error("the FTC was created before its federated type was served")
	}

	h = newTypesHost(t)
	ctx := context.Background()
	crd, _ := federatedtype.CRD(federatedtype.Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", ShortNames: []string{"cm"}, Namespaced: true}, federatedtype.Options{})
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Message: `"fcm" is already in use`},
	}
	h.notEstablished = true
	if err := h.fed.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.run(t, "", "enable", "cm"); err == nil || !strings.Contains(err.Error(), `names not accepted: "fcm" is already in use`) {
		t.Errorf("names conflict: got %v", err)
	}
}

func TestEnableDryRun(t *testing.T) {
	h := newTypesHost(t)
	out := h.mustRun(t, "enable", "svc", "--dry-run")
	if !strings.Contains(out, "CustomResourceDefinition federatedservices.types.kubefed.io created in host (dry run)") ||
		!strings.Contains(out, "FederatedTypeConfig kube-federation-system/services created in host (dry run)") {
		t.Errorf("output:\n%s", out)
	}
	assertNothingEnabled(t, h)
}

const widgetCRD = `# The type to federate
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.net
spec:
  group: example.net
  scope: Cluster
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, shortNames: [gz]}
  versions:
  - {name: v1alpha1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
`

func TestEnableFromFile(t *testing.T) {
	dir := t.TempDir()
	crdFile := filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(crdFile, []byte(widgetCRD), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("CRD", func(t *testing.T) {
		h := newTypesHost(t)
		h.mustRun(t, "enable", "-f", crdFile)
		ftc := h.ftc(t, "gizmos.example.net")
		want := corev1beta1.APIResource{Group: "example.net", Version: "v1", Kind: "Gizmo", PluralName: "gizmos", Scope: corev1beta1.ClusterScope}
		if ftc == nil || ftc.Spec.TargetType != want {
			t.Fatalf("FTC: %+v", ftc)
		}
		crd := h.crd(t, "federatedgizmos.types.kubefed.io")
		if crd == nil || crd.Spec.Scope != apiextensionsv1.ClusterScoped || !slices.Equal(crd.Spec.Names.ShortNames, []string{"fgz"}) {
			t.Errorf("CRD: %+v", crd)
		}
		h.mustRun(t, "enable", "-f", crdFile, "--version", "v1alpha1")
		if ftc := h.ftc(t, "gizmos.example.net"); ftc.Spec.TargetType.Version != "v1alpha1" {
			t.Errorf("--version with -f: %+v", ftc.Spec.TargetType)
		}
	})

	t.Run("CRD from standard input, printed without a cluster", func(t *testing.T) {
		var out, errOut strings.Builder
		cmd := newRootCommand(IOStreams{Out: &out, ErrOut: &errOut}, func(*globalOptions, IOStreams) clusterConnector {
			return fakeConnector{}
		})
		cmd.SetIn(strings.NewReader(widgetCRD))
		cmd.SetArgs([]string{"enable", "-f", "-", "-o", "yaml", "--host-cluster-context", "nowhere"})
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		want, err := typeManifests(federatedtype.Target{Group: "example.net", Version: "v1", Kind: "Gizmo", Plural: "gizmos", ShortNames: []string{"gz"}},
			federatedtype.Options{Namespace: testNamespace})
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != string(want) {
			t.Errorf("output:\n%s", out.String())
		}
	})

	t.Run("KubeFed EnableTypeDirective", func(t *testing.T) {
		h := newTypesHost(t)
		directive := `apiVersion: core.kubefed.io/v1beta1
kind: EnableTypeDirective
metadata:
  name: deployments.apps
spec:
  federatedGroup: fed.example.com
---
apiVersion: core.kubefed.io/v1beta1
kind: EnableTypeDirective
metadata:
  name: widgets.example.com
spec:
  targetVersion: v1beta1
`
		_, errOut, err := h.run(t, directive, "enable", "-f", "-")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		if ftc := h.ftc(t, "deployments.apps"); ftc == nil || ftc.Spec.FederatedType.Group != "fed.example.com" {
			t.Errorf("deployments.apps: %+v", ftc)
		}
		if h.crd(t, "federateddeployments.fed.example.com") == nil {
			t.Error("CRD federateddeployments.fed.example.com missing")
		}
		if ftc := h.ftc(t, "widgets.example.com"); ftc == nil || ftc.Spec.TargetType.Version != "v1beta1" {
			t.Errorf("widgets.example.com: %+v", ftc)
		}
		// A CRD file of apiextensions.k8s.io/v1beta1, as KubeFed users
		// kept: the type the host serves under its name.
		old := `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: gadgets.legacy.example.com}
spec:
  group: legacy.example.com
  version: v1
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
`
		if _, errOut, err := h.run(t, old, "enable", "-f", "-"); err != nil {
			t.Fatalf("a v1beta1 CRD file: %v\n%s", err, errOut)
		}
		if h.ftc(t, "gadgets.legacy.example.com") == nil {
			t.Error("a v1beta1 CRD file enabled nothing")
		}
		// A flag wins over the file.
		if _, _, err := h.run(t, directive, "enable", "-f", "-", "--version", "v1"); err != nil {
			t.Fatal(err)
		}
		if ftc := h.ftc(t, "widgets.example.com"); ftc.Spec.TargetType.Version != "v1" {
			t.Errorf("--version does not win over the directive: %+v", ftc.Spec.TargetType)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		h := newTypesHost(t)
		for input, want := range map[string]string{
			"kind: ConfigMap\napiVersion: v1\n": `kind "ConfigMap" cannot be enabled`,
			"kind: EnableTypeDirective\n":       "has no metadata.name",
			"# nothing\n---\n":                  "holds no document",
			"kind: CustomResourceDefinition\n":  "has no storage version",
			"kind: [unterminated\n":             "document 1",
			widgetCRD + "---\nkind: Unknown\n":  "document 2",
			widgetCRD + "---\n" + widgetCRD:     "gizmos.example.net is given twice",
		} {
			_, _, err := h.run(t, input, "enable", "-f", "-")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("input %q: got %v, want error containing %q", input, err, want)
			}
		}
		assertNothingEnabled(t, h)
		if _, _, err := h.run(t, "", "enable", "cm", "-f", crdFile); err == nil || !strings.Contains(err.Error(), "not both") {
			t.Errorf("NAME and -f: got %v", err)
		}
		if _, _, err := h.run(t, "", "enable"); err == nil || !strings.Contains(err.Error(), "name the type") {
			t.Errorf("neither: got %v", err)
		}
	})

	t.Run("KubeFed types in a CRD file are refused", func(t *testing.T) {
		h := newTypesHost(t)
		ours := strings.ReplaceAll(widgetCRD, "example.net", "scheduling.kubefed.io")
		if _, _, err := h.run(t, ours, "enable", "-f", "-"); err == nil || !strings.Contains(err.Error(), "is a KubeFed type") {
			t.Errorf("got %v", err)
		}
	})
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// FuzzParseEnableFile checks that any input gives requests or an error,
// and that every request names its type one way or the other.
func FuzzParseEnableFile(f *testing.F) {
	f.Add(widgetCRD)
	f.Add("kind: EnableTypeDirective\nmetadata: {name: deployments.apps}\nspec: {targetVersion: v1}\n---\n")
	f.Add("kind: CustomResourceDefinition\nspec: {versions: [{name: v1, storage: true}]}\n")
	f.Fuzz(func(t *testing.T, data string) {
		reqs, err := parseEnableFile([]byte(data), "in.yaml", enableRequest{}, func(string) bool { return false })
		if err != nil {
			return
		}
		for _, r := range reqs {
			if (r.name == "") == (r.target == nil) {
				t.Errorf("request names its type by neither or both: %+v", r)
			}
		}
	})
}
