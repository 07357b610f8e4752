package kubefedctl

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

func TestFederatedTemplate(t *testing.T) {
	cases := []struct {
		name, object, template string
	}{
		{
			name: "Service loses what each cluster allocates",
			object: `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
  uid: 1234
  resourceVersion: "7"
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web}
  annotations: {note: x}
  managedFields: [{manager: kubectl}]
spec:
  type: LoadBalancer
  clusterIP: 10.0.0.1
  clusterIPs: [10.0.0.1]
  healthCheckNodePort: 31000
  externalTrafficPolicy: Local
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, nodePort: 30080, protocol: TCP}
  - {name: https, port: 443, nodePort: 30443}
status: {loadBalancer: {ingress: [{ip: 1.2.3.4}]}}
`,
			template: `metadata: {labels: {app: web}}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
  - {name: https, port: 443}
`,
		},
		{
			name: "a headless Service keeps clusterIP None",
			object: `apiVersion: v1
kind: Service
metadata: {name: db, namespace: demo}
spec:
  clusterIP: None
  clusterIPs: [None]
  selector: {app: db}
  ports: [{port: 5432}]
`,
			template: `spec:
  clusterIP: None
  clusterIPs: [None]
  selector: {app: db}
  ports: [{port: 5432}]
`,
		},
		{
			name: "Deployment loses status and metadata but labels",
			object: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  generation: 3
  labels: {app: web, tier: front}
  annotations: {deployment.kubernetes.io/revision: "2"}
  finalizers: [example.com/hold]
  ownerReferences: [{apiVersion: v1, kind: Thing, name: t, uid: u}]
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
status: {replicas: 3, readyReplicas: 3, observedGeneration: 3}
`,
			template: `metadata: {labels: {app: web, tier: front}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`,
		},
		{
			name: "no labels, no metadata",
			object: `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: demo, annotations: {a: b}}
data: {key: value}
`,
			template: `data: {key: value}
`,
		},
		{
			name: "Job loses its generated selector",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: demo}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: abc}}
  template:
    metadata:
      labels: {batch.kubernetes.io/controller-uid: abc, controller-uid: abc, job-name: once, app: once}
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
`,
			template: `spec:
  template:
    metadata:
      labels: {job-name: once, app: once}
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
`,
		},
		{
			name: "Job with a manual selector keeps it",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: demo}
spec:
  manualSelector: true
  selector: {matchLabels: {app: once}}
  template: {metadata: {labels: {app: once}}}
`,
			template: `spec:
  manualSelector: true
  selector: {matchLabels: {app: once}}
  template: {metadata: {labels: {app: once}}}
`,
		},
		{
			name: "Pod loses its node",
			object: `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: demo}
spec: {nodeName: node-1, containers: [{name: c, image: busybox}]}
`,
			template: `spec: {containers: [{name: c, image: busybox}]}
`,
		},
		{
			name: "ServiceAccount loses the host's token Secrets, as in KubeFed",
			object: `apiVersion: v1
kind: ServiceAccount
metadata: {name: app, namespace: demo}
secrets: [{name: app-token-x7k2p}]
imagePullSecrets: [{name: registry}]
`,
			template: `imagePullSecrets: [{name: registry}]
`,
		},
		{
			name: "Namespace loses the namespace controller's finalizer, as in KubeFed",
			object: `apiVersion: v1
kind: Namespace
metadata: {name: demo, labels: {team: a}}
spec: {finalizers: [kubernetes]}
status: {phase: Active}
`,
			template: `metadata: {labels: {team: a}}
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := mustUnstructured(t, tc.object)
			before := obj.DeepCopy()
			got := federatedTemplate(obj)
			var want map[string]any
			if err := yaml.Unmarshal([]byte(tc.template), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
				gotYAML, _ := yaml.Marshal(got)
				t.Errorf("template:\n%s\nwant:\n%s", gotYAML, tc.template)
			}
			if !reflect.DeepEqual(obj, before) {
				t.Error("the object was modified")
			}
		})
	}
}

// normalize makes numbers comparable whatever decoded them.
func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels: {app: web}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
status: {replicas: 2}
`

const wantFederatedWeb = `apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata:
  name: web
  namespace: demo
spec:
  placement:
    clusterSelector: {}
  template:
    metadata:
      labels:
        app: web
    spec:
      replicas: 2
      selector:
        matchLabels:
          app: web
      template:
        metadata:
          labels:
            app: web
        spec:
          containers:
          - image: nginx
            name: web
`

func TestFederateObjectOfTheHost(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "deployments.apps")
	h.object(t, deploymentsGVR, webDeployment)

	// -o yaml prints what would be created, and creates nothing.
	if out := h.mustRun(t, "federate", "deployment", "web", "-n", "demo", "-o", "yaml"); out != "---\n"+wantFederatedWeb {
		t.Errorf("-o yaml:\n%s", out)
	}
	if h.get(t, fedDeployGVR, "demo", "web") != nil {
		t.Fatal("-o yaml created the federated object")
	}

	out, errOut, err := h.run(t, "", "federate", "deployments.apps", "web", "-n", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if out != "FederatedDeployment demo/web created in host\n" {
		t.Errorf("output: %q", out)
	}
	if !strings.Contains(errOut, `namespace "demo" is not federated`) {
		t.Errorf("no warning about the namespace: %q", errOut)
	}
	got := h.get(t, fedDeployGVR, "demo", "web")
	if got == nil {
		t.Fatal("FederatedDeployment demo/web not created")
	}
	if want := mustUnstructured(t, wantFederatedWeb); !reflect.DeepEqual(normalize(t, got.Object), normalize(t, want.Object)) {
		data, _ := yaml.Marshal(got.Object)
		t.Errorf("FederatedDeployment:\n%s", data)
	}

	// Identical: fine. Different: refused, naming the fields only.
	if out := h.mustRun(t, "federate", "deploy", "web", "-n", "demo"); out != "FederatedDeployment demo/web unchanged in host\n" {
		t.Errorf("second run: %q", out)
	}
	live := h.get(t, fedDeployGVR, "demo", "web")
	_ = unstructured.SetNestedField(live.Object, "secret-value", "spec", "template", "spec", "paused")
	_ = unstructured.SetNestedSlice(live.Object, []any{map[string]any{"clusterName": "c1"}}, "spec", "overrides")
	if err := h.dyn.Tracker().Update(fedDeployGVR, live, "demo"); err != nil {
		t.Fatal(err)
	}
	_, _, err = h.run(t, "", "federate", "deploy", "web", "-n", "demo")
	if err == nil || !strings.Contains(err.Error(), "FederatedDeployment demo/web already exists in host with a different spec.overrides, spec.template") ||
		strings.Contains(err.Error(), "secret-value") {
		t.Errorf("conflict: got %v", err)
	}

	for args, want := range map[string]string{
		"federate deploy nope -n demo":                       "Deployment demo/nope not found in host",
		"federate cm app -n demo":                            "configmaps is not enabled for federation; enable it with: kubefedctl enable configmaps (or pass --enable-type)",
		"federate events e -n demo":                          "Events record what happened",
		"federate fdeploy web -n demo":                       "federateddeployments.types.kubefed.io is a federated type",
		"federate deploy web -c":                             "TYPE must be namespace",
		"federate deploy":                                    "name the object to federate",
		"federate deploy web -n demo -o json":                "must be yaml",
		"federate deploy web -f x.yaml":                      "not both",
		"federate -f x.yaml --contents":                      "cannot be used with --filename",
		"federate widgets w -n demo":                         "ambiguous",
		"federate deploy web -n demo -t --federated-group x": "invalid --federated-group",
	} {
		if _, _, err := h.run(t, "", strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want error containing %q", args, err, want)
		}
	}
}

func TestFederateEnablesTheType(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "ns")
	h.object(t, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n")
	h.mustRun(t, "federate", "namespace", "demo")
	h.object(t, widgetsGVR, `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: demo, labels: {size: big}}
spec: {size: 3}
`)
	// -o yaml with -t prints the type's manifests first and changes nothing.
	out := h.mustRun(t, "federate", "widgets.example.com", "w", "-n", "demo", "-t", "-o", "yaml")
	manifests, _ := typeManifests(federatedtype.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"}, Namespaced: true},
		federatedtype.Options{Namespace: testNamespace})
	if !strings.HasPrefix(out, string(manifests)+"---\napiVersion: types.kubefed.io/v1beta1\nkind: FederatedWidget\n") {
		t.Errorf("-o yaml -t:\n%s", out)
	}
	if h.ftc(t, "widgets.example.com") != nil {
		t.Fatal("-o yaml enabled the type")
	}

	out, errOut, err := h.run(t, "", "federate", "wd", "w", "-n", "demo", "--enable-type")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CustomResourceDefinition federatedwidgets.types.kubefed.io created in host",
		"FederatedTypeConfig kube-federation-system/widgets.example.com created in host",
		"FederatedWidget demo/w created in host",
	}
	if got := lines(out); !slices.Equal(got, want) || errOut != "" {
		t.Errorf("output:\n got %q\nwant %q\nstderr: %s", got, want, errOut)
	}
	fw := h.get(t, fedWidgetsGVR, "demo", "w")
	if size, _, _ := unstructured.NestedInt64(fw.Object, "spec", "template", "spec", "size"); size != 3 {
		t.Errorf("FederatedWidget: %v", fw.Object)
	}
}

func TestFederateFromFile(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "ns")
	h.mustRun(t, "enable", "svc")
	h.mustRun(t, "enable", "secrets")
	h.mustRun(t, "enable", "clusterroles.rbac.authorization.k8s.io")
	manifest := `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
# A Service without namespace goes into --namespace.
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  clusterIP: 10.1.1.1
  ports: [{port: 80, nodePort: 30001}]
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: creds, namespace: shop}
  stringData: {password: hunter2}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata: {name: reader}
  rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
`
	// As in KubeFed, a file's federated objects are printed, not created.
	out, errOut, err := h.run(t, manifest, "federate", "-f", "-", "-n", "shop")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	printed := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(out, "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
		printed[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = u
	}
	if got, want := slices.Sorted(maps.Keys(printed)), []string{"FederatedClusterRole /reader", "FederatedNamespace shop/shop", "FederatedSecret shop/creds", "FederatedService shop/api"}; !slices.Equal(got, want) {
		t.Errorf("printed %q, want %q", got, want)
	}
	if pw, _, _ := unstructured.NestedString(printed["FederatedSecret shop/creds"].Object, "spec", "template", "stringData", "password"); pw != "hunter2" {
		t.Errorf("FederatedSecret template: %v", printed["FederatedSecret shop/creds"].Object["spec"])
	}
	if svc := printed["FederatedService shop/api"]; svc != nil {
		if spec, _, _ := unstructured.NestedMap(svc.Object, "spec", "template", "spec"); !reflect.DeepEqual(normalize(t, spec), normalize(t, map[string]any{"ports": []any{map[string]any{"port": 80}}})) {
			t.Errorf("FederatedService template spec: %v", spec)
		}
	}
	if h.get(t, schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedservices"}, "shop", "api") != nil {
		t.Error("federate -f created a federated object; KubeFed's only printed them")
	}

	// A type not enabled is printed as enable would federate it.
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"
	out, errOut, err = h.run(t, cm, "federate", "-f", "-", "-n", "shop")
	if err != nil || !strings.Contains(out, "kind: FederatedConfigMap") || strings.Contains(out, "kind: FederatedTypeConfig") {
		t.Errorf("a ConfigMap, whose type is not enabled: %v\n%s\n%s", err, out, errOut)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "objs.yaml")
	for content, wantErr := range map[string]string{
		"apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: x}\n":                                             "does not serve kind Deployment in apps/v1beta2",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: other}\n":                                        `is in namespace "other", not in the --namespace "shop"`,
		"apiVersion: v1\nkind: Service\nmetadata: {namespace: shop}\n":                                                  "has no metadata.name",
		"apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n": "FederatedService shop/a is given twice",
		"# only a comment\n": "holds no object",
	} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.run(t, "", "federate", "-f", file, "-n", "shop"); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: got %v, want error containing %q", content, err, wantErr)
		}
	}
}

// A kind the host does not serve, or a host that cannot be reached, is no
// obstacle to printing a file's federated objects, as in KubeFed: the type
// is guessed from the kind, namespaced when the object has a namespace.
func TestFederateFromFileGuessesUnservedKinds(t *testing.T) {
	h := newTypesHost(t)
	manifest := `apiVersion: gear.example.com/v1
kind: Gear
metadata: {name: g1, namespace: shop}
spec: {teeth: 12}
---
apiVersion: gear.example.com/v1
kind: GearClass
metadata: {name: fast}
`
	check := func(what, out string) {
		t.Helper()
		for _, want := range []string{"kind: FederatedGear\n", "name: g1\n  namespace: shop\n", "kind: FederatedGearClass\n", "teeth: 12"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", what, want, out)
			}
		}
	}
	out, errOut, err := h.run(t, manifest, "federate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	check("unserved kinds", out)
	if !strings.Contains(errOut, "Gear shop/g1: the host cluster does not serve kind Gear in gear.example.com/v1") ||
		!strings.Contains(errOut, "federated as gears.gear.example.com, namespaced") ||
		!strings.Contains(errOut, "federated as gearclasses.gear.example.com, cluster-scoped") {
		t.Errorf("stderr:\n%s", errOut)
	}

	h.disc.PrependReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	})
	out, errOut, err = h.run(t, manifest, "federate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	check("unreachable host", out)
	if !strings.Contains(errOut, "Warning: the host's API cannot be read") || !strings.Contains(errOut, "connection refused") {
		t.Errorf("stderr:\n%s", errOut)
	}
	// Without -f the host's API is needed.
	if _, _, err := h.run(t, "", "federate", "configmap", "app", "-n", "demo"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("federate of a host object with discovery failing: %v", err)
	}
}

func TestFederateNamespaceContents(t *testing.T) {
	h := newTypesHost(t)
	for _, typ := range []string{"ns", "deployments.apps", "replicasets.apps", "cm", "secrets", "sa", "svc", "pods", "endpoints", "jobs.batch"} {
		h.mustRun(t, "enable", typ)
	}
	core := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Version: "v1", Resource: resource}
	}
	h.object(t, core("namespaces"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo, labels: {team: a}}\n")
	h.object(t, deploymentsGVR, webDeployment)
	h.object(t, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d4f, namespace: demo, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: u1, controller: true}]}
`)
	h.object(t, core("pods"), `apiVersion: v1
kind: Pod
metadata: {name: web-5d4f-x1, namespace: demo, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d4f, uid: u2}]}
spec: {nodeName: n1}
`)
	h.object(t, core("pods"), "apiVersion: v1\nkind: Pod\nmetadata: {name: standalone, namespace: demo}\nspec: {nodeName: n1}\n")
	h.object(t, schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, `apiVersion: batch/v1
kind: Job
metadata: {name: nightly-123, namespace: demo, ownerReferences: [{apiVersion: batch/v1, kind: CronJob, name: nightly, uid: u3, controller: true}]}
`)
	h.object(t, core("configmaps"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: demo}\ndata: {k: v}\n")
	h.object(t, core("configmaps"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-root-ca.crt, namespace: demo}\n")
	h.object(t, core("configmaps"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name, namespace: demo}\n")
	h.object(t, core("configmaps"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: other}\n")
	h.object(t, core("secrets"), "apiVersion: v1\nkind: Secret\nmetadata: {name: app, namespace: demo}\ndata: {k: dg==}\n")
	h.object(t, core("secrets"), `apiVersion: v1
kind: Secret
metadata: {name: builder-token, namespace: demo, annotations: {kubernetes.io/service-account.name: builder}}
type: kubernetes.io/service-account-token
`)
	h.object(t, core("secrets"), `apiVersion: v1
kind: Secret
metadata: {name: default-dockercfg-x, namespace: demo, annotations: {kubernetes.io/service-account.name: default}}
type: kubernetes.io/dockercfg
`)
	h.object(t, core("serviceaccounts"), "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: demo}\n")
	h.object(t, core("serviceaccounts"), "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: builder, namespace: demo}\n")
	h.object(t, core("services"), "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: demo}\nspec: {clusterIP: 10.0.0.9}\n")
	h.object(t, core("endpoints"), "apiVersion: v1\nkind: Endpoints\nmetadata: {name: web, namespace: demo}\n")
	h.object(t, core("events"), "apiVersion: v1\nkind: Event\nmetadata: {name: web.1, namespace: demo}\n")
	h.object(t, widgetsGVR, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: demo}\n")

	federated := func() []string {
		var refs []string
		for _, a := range h.dyn.Actions() {
			if a.GetVerb() == "create" && strings.HasPrefix(a.GetResource().Resource, "federated") {
				obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
				refs = append(refs, refOf(obj).String())
			}
		}
		sort.Strings(refs)
		return refs
	}

	out, errOut, err := h.run(t, "", "federate", "namespace", "demo", "--contents", "--skip-api-resources", "svc")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	want := []string{
		"FederatedConfigMap demo/app",
		"FederatedDeployment demo/web",
		"FederatedNamespace demo/demo",
		"FederatedPod demo/standalone",
		"FederatedSecret demo/app",
		"FederatedServiceAccount demo/builder",
	}
	if got := federated(); !slices.Equal(got, want) {
		t.Errorf("federated:\n got %q\nwant %q\noutput:\n%s", got, want, out)
	}
	if !strings.Contains(out, "ConfigMap demo/Not_A_Name skipped: its name is not a valid federated object name") ||
		!strings.Contains(out, "Secret demo/builder-token skipped: a ServiceAccount token") ||
		!strings.Contains(out, "Pod demo/web-5d4f-x1 skipped: owned by ReplicaSet web-5d4f") ||
		!strings.Contains(out, "Job demo/nightly-123 skipped: managed by its controller CronJob nightly") {
		t.Errorf("skips not reported:\n%s", out)
	}
	// The Widget's type is not enabled: named, not left out without a word.
	if errOut != "Warning: 1 widgets.example.com object(s) in namespace \"demo\" not federated: the type is not enabled (pass --enable-type, or kubefedctl enable widgets.example.com)\n" {
		t.Errorf("stderr: %s", errOut)
	}
	// Printed, as in KubeFed, it is written as its type's default FTC
	// would federate it, with no word of warning.
	if out, errOut, err := h.run(t, "", "federate", "ns", "demo", "-c", "-o", "yaml"); err != nil || !strings.Contains(out, "kind: FederatedWidget") ||
		strings.Contains(out, "kind: FederatedTypeConfig") || strings.Contains(errOut, "widgets.example.com") {
		t.Errorf("--contents -o yaml without --enable-type: %v\n%s\n%s", err, out, errOut)
	}
	// With --enable-type, as in KubeFed, its type is enabled and it is federated.
	if out := h.mustRun(t, "federate", "ns", "demo", "-c", "-t", "-o", "yaml"); !strings.Contains(out, "kind: FederatedWidget") ||
		!strings.Contains(out, "name: widgets.example.com") {
		t.Errorf("--contents --enable-type did not federate the Widget:\n%s", out)
	}
	pod := h.get(t, schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedpods"}, "demo", "standalone")
	if _, found, _ := unstructured.NestedString(pod.Object, "spec", "template", "spec", "nodeName"); found {
		t.Error("the Pod's nodeName reached the template")
	}
	ns := h.get(t, fedNamespaceGVR, "demo", "demo")
	if team, _, _ := unstructured.NestedString(ns.Object, "spec", "template", "metadata", "labels", "team"); team != "a" {
		t.Errorf("FederatedNamespace: %v", ns.Object)
	}

	// Again: everything is unchanged; without the skip the Service is added.
	out = h.mustRun(t, "federate", "ns", "demo", "-c")
	if !strings.Contains(out, "FederatedService demo/web created in host") || strings.Count(out, "unchanged in host") != len(want) {
		t.Errorf("second run:\n%s", out)
	}
	// As in KubeFed, an unknown name is ignored (with a warning here), and
	// an API group skips each of its types.
	if _, errOut, err := h.run(t, "", "federate", "ns", "demo", "-c", "-s", "nosuchthings", "-o", "yaml"); err != nil || !strings.Contains(errOut, "Warning: --skip-api-resources:") {
		t.Errorf("unknown skip: %v\n%s", err, errOut)
	}
	out = h.mustRun(t, "federate", "ns", "demo", "-c", "-s", "apps,configmaps", "-o", "yaml")
	if strings.Contains(out, "kind: FederatedDeployment") || strings.Contains(out, "kind: FederatedConfigMap") || !strings.Contains(out, "kind: FederatedSecret") {
		t.Errorf("-s apps,configmaps:\n%s", out)
	}
	// A name that is ambiguous elsewhere skips every type it names, as in
	// KubeFed: "widgets" names widgets.example.com and widgets.other.example.org.
	h.mustRun(t, "enable", "widgets.example.com")
	out = h.mustRun(t, "federate", "ns", "demo", "-c", "-s", "widgets", "-o", "yaml")
	if strings.Contains(out, "kind: FederatedWidget") || !strings.Contains(out, "kind: FederatedSecret") {
		t.Errorf("-s widgets:\n%s", out)
	}
}

// Annotations are left out of a template, with a warning naming them, as
// KubeFed warned; those kubectl and controllers write are not named.
func TestFederateWarnsOfAnnotations(t *testing.T) {
	h := newTypesHost(t)
	h.mustRun(t, "enable", "cm")
	h.object(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: demo
  annotations: {example.com/owner: team-a, kubectl.kubernetes.io/last-applied-configuration: "{}", a: b}
`)
	_, errOut, err := h.run(t, "", "federate", "configmap", "app", "-n", "demo", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Warning: annotations of ConfigMap demo/app are not propagated and are left out of its template: a, example.com/owner\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}

// FuzzFederatedTemplate checks, for any object, that the template never
// carries the object's identity, status or metadata other than labels, and
// that the object itself is left as it was.
func FuzzFederatedTemplate(f *testing.F) {
	f.Add(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","labels":{"x":"y"},"annotations":{"a":"b"}},"spec":{"clusterIP":"1.2.3.4","ports":[{"nodePort":3},"junk"]},"status":{}}`)
	f.Add(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"manualSelector":"yes","selector":1,"template":{"metadata":{"labels":"bad"}}}}`)
	f.Add(`{"apiVersion":"v1","kind":"Pod","spec":[]}`)
	f.Fuzz(func(t *testing.T, data string) {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(data)); err != nil {
			return
		}
		before := obj.DeepCopy()
		tmpl := federatedTemplate(obj)
		for _, k := range []string{"apiVersion", "kind", "status"} {
			if _, ok := tmpl[k]; ok {
				t.Errorf("template keeps %s", k)
			}
		}
		if md, ok := tmpl["metadata"]; ok {
			m, _ := md.(map[string]any)
			if _, ok := m["labels"]; len(m) != 1 || !ok {
				t.Errorf("template metadata is more than labels: %v", md)
			}
		}
		if !reflect.DeepEqual(obj, before) {
			t.Error("the object was modified")
		}
	})
}

func TestFederatedTemplateDropsTheManagedLabel(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "labels": map[string]any{"kubefed.io/managed": "true", "app": "web"}},
	}}
	tmpl := federatedTemplate(obj)
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	if len(labels) != 1 || labels["app"] != "web" {
		t.Fatalf("labels: %v", labels)
	}
	obj.SetLabels(map[string]string{"kubefed.io/managed": "true"})
	if _, ok := federatedTemplate(obj)["metadata"]; ok {
		t.Fatal("no labels left must mean no metadata")
	}
}
