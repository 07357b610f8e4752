//go:build integration

package compat_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const ns = corev1beta1.DefaultKubeFedNamespace

var host client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts one host with the CRDs and admission policies of config/.
func run(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: dir, Clusters: []string{"host"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = fed.Stop() }()
	if err := setUp(ctx, fed); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func setUp(ctx context.Context, fed *localcluster.Federation) error {
	c, err := client.New(fed.Host().RESTConfig(), client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return err
	}
	host = c
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	crds, err := framework.ReadCRDs(filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "config", "crd", "federated"))
	if err != nil {
		return err
	}
	if err := framework.InstallCRDs(ctx, c, crds); err != nil {
		return err
	}
	for _, name := range []string{ns, "team-a"} {
		if err := framework.EnsureNamespace(ctx, c, name); err != nil {
			return err
		}
	}
	policies, err := framework.ReadObjects(
		filepath.Join(root, "config", "admission", "kubefedconfig-defaults.yaml"),
		filepath.Join(root, "config", "admission", "sync-finalizer.yaml"))
	if err != nil {
		return err
	}
	for _, p := range policies {
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("create %s %s: %w", p.GetKind(), p.GetName(), err)
		}
	}
	// The API server loads admission policies asynchronously: wait until a
	// dry run shows the feature gates filled.
	deadline := time.Now().Add(time.Minute)
	for {
		probe := object(`{"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedConfig",
			"metadata": {"name": "probe", "namespace": "team-a"}, "spec": {"scope": "Cluster"}}`)
		err := c.Create(ctx, probe, client.DryRunAll)
		if err == nil {
			if gates, _, _ := unstructured.NestedSlice(probe.Object, "spec", "featureGates"); len(gates) > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the KubeFedConfig defaulting policy did not take effect within a minute (last error: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// object decodes one JSON or YAML document.
func object(doc string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(fmt.Sprintf("%v in %s", err, doc))
	}
	return u
}

// typeConfig is a valid FederatedTypeConfig of ConfigMaps, as KubeFed's
// chart installs it, under a name of the test's choosing when edit changes
// the target type.
func typeConfig(edit func(spec map[string]any)) *unstructured.Unstructured {
	u := object(`
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: configmaps, namespace: kube-federation-system}
spec:
  propagation: Enabled
  targetType: {kind: ConfigMap, pluralName: configmaps, scope: Namespaced, version: v1}
  federatedType: {group: types.kubefed.io, kind: FederatedConfigMap, pluralName: federatedconfigmaps, scope: Namespaced, version: v1beta1}
`)
	if edit != nil {
		spec := u.Object["spec"].(map[string]any)
		edit(spec)
		tt := spec["targetType"].(map[string]any)
		name, _ := tt["pluralName"].(string)
		if g, _ := tt["group"].(string); g != "" {
			name += "." + g
		}
		u.SetName(name)
	}
	return u
}

func set(path string, value any) func(map[string]any) {
	return func(spec map[string]any) {
		keys := strings.Split(path, ".")
		m := spec
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		if value == nil {
			delete(m, keys[len(keys)-1])
			return
		}
		m[keys[len(keys)-1]] = value
	}
}

// KubeFed's FederatedTypeConfig validation (its validating webhook), here
// the CRD schema's, on create, update and patch.
func TestFederatedTypeConfigValidationIsKubeFeds(t *testing.T) {
	ctx := context.Background()
	rejected := []struct {
		name  string
		edit  func(map[string]any)
		wants []string
	}{
		{"federatedType without a group", set("federatedType.group", nil),
			[]string{"spec.federatedType.group: Required value", "federatedType.group is required"}},
		{"federatedType with an empty group", set("federatedType.group", ""),
			[]string{"spec.federatedType.group: Required value"}},
		{"federatedType group without a dot", set("federatedType.group", "kubefed"),
			[]string{"spec.federatedType.group", "should be a domain with at least one dot"}},
		{"federatedType group not a subdomain", set("federatedType.group", "Types.KubeFed.io"),
			[]string{"spec.federatedType.group", "lowercase RFC 1123 subdomain"}},
		{"targetType group not a subdomain", set("targetType.group", "my_group.io"),
			[]string{"spec.targetType.group", "lowercase RFC 1123 subdomain"}},
		{"targetType version not a DNS-1035 label", set("targetType.version", "V1"),
			[]string{"spec.targetType.version", "DNS-1035 label"}},
		{"targetType version starting with a digit", set("targetType.version", "1"),
			[]string{"spec.targetType.version", "DNS-1035 label"}},
		{"federatedType version with a dot", set("federatedType.version", "v1.2"),
			[]string{"spec.federatedType.version", "DNS-1035 label"}},
		{"targetType kind with an underscore", set("targetType.kind", "Config_Map"),
			[]string{"spec.targetType.kind", "DNS-1035 label once lower-cased"}},
		{"federatedType kind starting with a digit", set("federatedType.kind", "1FederatedConfigMap"),
			[]string{"spec.federatedType.kind", "DNS-1035 label once lower-cased"}},
		{"targetType pluralName in upper case", set("targetType.pluralName", "ConfigMaps"),
			[]string{"spec.targetType.pluralName", "DNS-1035 label"}},
		{"targetType pluralName too long", set("targetType.pluralName", strings.Repeat("a", 64)),
			[]string{"spec.targetType.pluralName", "63"}},
		{"statusType without a group", set("statusType", map[string]any{"kind": "FederatedConfigMapStatus", "pluralName": "federatedconfigmapstatuses", "scope": "Namespaced", "version": "v1beta1"}),
			[]string{"spec.statusType.group: Required value"}},
		{"statusType group without a dot", set("statusType", map[string]any{"group": "core", "kind": "FederatedConfigMapStatus", "pluralName": "federatedconfigmapstatuses", "scope": "Namespaced", "version": "v1beta1"}),
			[]string{"spec.statusType.group", "should be a domain with at least one dot"}},
		{"unknown scope", set("targetType.scope", "Global"),
			[]string{"spec.targetType.scope", "Unsupported value"}},
		{"unknown propagation", set("propagation", "On"),
			[]string{"spec.propagation", "Unsupported value"}},
		{"unknown statusCollection", set("statusCollection", "Yes"),
			[]string{"spec.statusCollection", "Unsupported value"}},
	}
	for _, tc := range rejected {
		t.Run("create: "+tc.name, func(t *testing.T) {
			err := host.Create(ctx, typeConfig(tc.edit), client.DryRunAll)
			wantInvalid(t, err, tc.wants...)
		})
	}

	// What KubeFed accepts stays accepted: the core group is empty, a kind
	// is CamelCase, a status type is optional.
	accepted := []struct {
		name string
		edit func(map[string]any)
	}{
		{"the core group", nil},
		{"a group of its own", func(spec map[string]any) {
			set("targetType", map[string]any{"group": "apps", "kind": "Deployment", "pluralName": "deployments", "scope": "Namespaced", "version": "v1"})(spec)
			set("federatedType.kind", "FederatedDeployment")(spec)
			set("federatedType.pluralName", "federateddeployments")(spec)
		}},
		{"a status type", set("statusType", map[string]any{"group": "types.kubefed.io", "kind": "FederatedServiceStatus", "pluralName": "federatedservicestatuses", "scope": "Namespaced", "version": "v1alpha1"})},
		{"a federated group of its own", set("federatedType.group", "federation.example.com")},
	}
	for _, tc := range accepted {
		t.Run("accepted: "+tc.name, func(t *testing.T) {
			if err := host.Create(ctx, typeConfig(tc.edit), client.DryRunAll); err != nil {
				t.Fatalf("KubeFed accepts this FederatedTypeConfig; got %v", err)
			}
		})
	}

	// Update and patch are held to the same rules.
	ftc := typeConfig(nil)
	if err := host.Create(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Delete(ctx, ftc) }()
	t.Run("update", func(t *testing.T) {
		bad := ftc.DeepCopy()
		set("federatedType.group", nil)(bad.Object["spec"].(map[string]any))
		wantInvalid(t, host.Update(ctx, bad), "spec.federatedType.group: Required value")
	})
	t.Run("merge patch", func(t *testing.T) {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"targetType":{"version":"V1"}}}`))
		wantInvalid(t, host.Patch(ctx, ftc.DeepCopy(), patch), "spec.targetType.version", "DNS-1035 label")
	})
	t.Run("json patch", func(t *testing.T) {
		patch := client.RawPatch("application/json-patch+json", []byte(`[{"op":"remove","path":"/spec/federatedType/group"}]`))
		wantInvalid(t, host.Patch(ctx, ftc.DeepCopy(), patch), "spec.federatedType.group: Required value")
	})
}

func wantInvalid(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want it rejected with %q", wants)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err.Error(), want)
		}
	}
}

// Clients built on KubeFed's Go types send every field whose JSON tag has
// no omitempty, and every struct-valued field, at its zero value. Each
// document below is what such a client sends for a minimal object of each
// kind (KubeFed v0.8.1's types, and v0.6.1's for the DNS kinds): every one
// is accepted, read back with its zero values meaning "unset", and can be
// written back as it was read, as such a client's Get-modify-Update does.
func TestKubeFedGoClientZeroValuesAreAccepted(t *testing.T) {
	ctx := context.Background()
	docs := map[string]string{
		"KubeFedCluster": `{"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
			"metadata": {"name": "zero-values", "namespace": "kube-federation-system", "creationTimestamp": null},
			"spec": {"apiEndpoint": "https://10.0.0.1:6443", "secretRef": {"name": "zero-values-token"}, "proxyURL": ""},
			"status": {"conditions": null}}`,
		"FederatedTypeConfig": `{"apiVersion": "core.kubefed.io/v1beta1", "kind": "FederatedTypeConfig",
			"metadata": {"name": "secrets", "namespace": "kube-federation-system", "creationTimestamp": null},
			"spec": {"targetType": {"version": "v1", "kind": "Secret", "pluralName": "secrets", "scope": "Namespaced"},
				"propagation": "Enabled",
				"federatedType": {"group": "types.kubefed.io", "version": "v1beta1", "kind": "FederatedSecret", "pluralName": "federatedsecrets", "scope": "Namespaced"}},
			"status": {"observedGeneration": 0, "propagationController": ""}}`,
		"KubeFedConfig": `{"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedConfig",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"scope": "Cluster"}}`,
		"ReplicaSchedulingPreference": `{"apiVersion": "scheduling.kubefed.io/v1alpha1", "kind": "ReplicaSchedulingPreference",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"targetKind": "FederatedDeployment", "totalReplicas": 0, "intersectWithClusterSelector": false},
			"status": {}}`,
		"ReplicaSchedulingPreference with clusters": `{"apiVersion": "scheduling.kubefed.io/v1alpha1", "kind": "ReplicaSchedulingPreference",
			"metadata": {"name": "zero-weights", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"targetKind": "FederatedDeployment", "totalReplicas": 9, "intersectWithClusterSelector": false,
				"clusters": {"*": {"maxReplicas": null}, "member1": {"minReplicas": 1}}},
			"status": {}}`,
		"ServiceDNSRecord": `{"apiVersion": "multiclusterdns.kubefed.io/v1alpha1", "kind": "ServiceDNSRecord",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"domainRef": "example"}, "status": {}}`,
		"IngressDNSRecord": `{"apiVersion": "multiclusterdns.kubefed.io/v1alpha1", "kind": "IngressDNSRecord",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"hosts": ["app.example.com"]}, "status": {}}`,
		"DNSEndpoint": `{"apiVersion": "multiclusterdns.kubefed.io/v1alpha1", "kind": "DNSEndpoint",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {}, "status": {}}`,
		"Domain": `{"apiVersion": "multiclusterdns.kubefed.io/v1alpha1", "kind": "Domain",
			"metadata": {"name": "zero-values", "namespace": "kube-federation-system", "creationTimestamp": null},
			"domain": "example.com"}`,
		"FederatedConfigMap": `{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
			"metadata": {"name": "zero-values", "namespace": "team-a", "creationTimestamp": null},
			"spec": {"template": {"data": {"a": "b"}}, "placement": {},
				"overrides": [{"clusterName": "member1", "clusterOverrides": [{"path": "/data/a"}, {"path": "/data/b", "op": ""}]}]}}`,
	}
	for kind, doc := range docs {
		t.Run(kind, func(t *testing.T) {
			obj := object(doc)
			if err := host.Create(ctx, obj); err != nil {
				t.Fatalf("KubeFed's Go types send this %s; it was refused: %v", obj.GetKind(), err)
			}
			defer func() { _ = host.Delete(ctx, obj) }()
			// Written back with the zero values again, as read.
			again := object(doc)
			again.SetResourceVersion(obj.GetResourceVersion())
			if err := host.Update(ctx, again); err != nil {
				t.Fatalf("an update of %s with the zero values was refused: %v", obj.GetKind(), err)
			}
		})
	}

	// An empty proxyURL is no proxy.
	kfc := &corev1beta1.KubeFedCluster{}
	obj := object(docs["KubeFedCluster"])
	if err := host.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Delete(ctx, obj) }()
	if err := host.Get(ctx, client.ObjectKeyFromObject(obj), kfc); err != nil {
		t.Fatal(err)
	}
	if kfc.Spec.ProxyURL != "" {
		t.Fatalf("proxyURL %q, want it empty", kfc.Spec.ProxyURL)
	}
	// A proxy that is not one is still refused.
	bad := object(strings.Replace(docs["KubeFedCluster"], `"proxyURL": ""`, `"proxyURL": "ftp://proxy.example.com"`, 1))
	bad.SetName("bad-proxy")
	wantInvalid(t, host.Create(ctx, bad, client.DryRunAll), "spec.proxyURL", "http, https or socks5")
}

// KubeFed's defaulting webhook filled featureGates with every gate; the
// MutatingAdmissionPolicy of config/admission does the same, in any
// namespace, and its result is pkg/kubefedconfig's SetDefaults.
func TestKubeFedConfigDefaultingIsKubeFeds(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, namespace, spec string
	}{
		{"scope only", "team-a", `{scope: Cluster}`},
		{"one gate off", "team-a", `{scope: Namespaced, featureGates: [{name: SchedulerPreferences, configuration: Disabled}]}`},
		{"gates out of order, some fields", ns, `{scope: Cluster, featureGates: [{name: RawResourceStatusCollection, configuration: Disabled}, {name: PushReconciler, configuration: Enabled}],
			leaderElect: {leaseDuration: 30s}, syncController: {maxConcurrentReconciles: 4}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(fmt.Sprintf(`{apiVersion: core.kubefed.io/v1beta1, kind: KubeFedConfig, metadata: {name: defaulted, namespace: %s}, spec: %s}`, tc.namespace, tc.spec))
			given := &corev1beta1.KubeFedConfig{}
			if err := runtimeConvert(obj, given); err != nil {
				t.Fatal(err)
			}
			if err := host.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = host.Delete(ctx, obj) }()
			stored := &corev1beta1.KubeFedConfig{}
			if err := host.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				t.Fatal(err)
			}
			want := given.Spec.DeepCopy()
			kubefedconfig.SetDefaults(want)
			gotGates, wantGates := fmt.Sprint(stored.Spec.FeatureGates), fmt.Sprint(want.FeatureGates)
			if gotGates != wantGates {
				t.Fatalf("stored featureGates %s, want %s", gotGates, wantGates)
			}
			if len(stored.Spec.FeatureGates) != 5 {
				t.Fatalf("stored %d feature gates, want every gate: %s", len(stored.Spec.FeatureGates), gotGates)
			}
			gotJSON, _ := yaml.Marshal(stored.Spec)
			wantJSON, _ := yaml.Marshal(want)
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("the API server stored\n%s\nSetDefaults gives\n%s", gotJSON, wantJSON)
			}

			// An update that drops the gates gets them back, with their defaults.
			stored.Spec.FeatureGates = nil
			if err := host.Update(ctx, stored); err != nil {
				t.Fatal(err)
			}
			if len(stored.Spec.FeatureGates) != 5 {
				t.Fatalf("after an update without featureGates: %v, want every gate", stored.Spec.FeatureGates)
			}
		})
	}

	t.Run("an unknown gate is refused, not dropped", func(t *testing.T) {
		obj := object(`{apiVersion: core.kubefed.io/v1beta1, kind: KubeFedConfig, metadata: {name: unknown-gate, namespace: team-a},
			spec: {scope: Cluster, featureGates: [{name: PushReconciler, configuration: Enabled}, {name: Teleport, configuration: Enabled}]}}`)
		wantInvalid(t, host.Create(ctx, obj, client.DryRunAll), "spec.featureGates[1].name", "Teleport")
	})
	t.Run("a gate twice is refused", func(t *testing.T) {
		obj := object(`{apiVersion: core.kubefed.io/v1beta1, kind: KubeFedConfig, metadata: {name: gate-twice, namespace: team-a},
			spec: {scope: Cluster, featureGates: [{name: PushReconciler, configuration: Enabled}, {name: PushReconciler, configuration: Disabled}]}}`)
		wantInvalid(t, host.Create(ctx, obj, client.DryRunAll), "spec.featureGates[1]", "Duplicate value")
	})
}

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, into)
}

// An override path written the way old tutorials did (spec.replicas) is
// refused with the path, an example and the rule to turn it into a JSON
// pointer.
func TestOverridePathWithDotsGetsThePointerToUse(t *testing.T) {
	ctx := context.Background()
	for _, path := range []string{"spec.replicas", "spec.template.spec.containers[0].image", "spec/replicas"} {
		t.Run(path, func(t *testing.T) {
			obj := object(fmt.Sprintf(`{apiVersion: types.kubefed.io/v1beta1, kind: FederatedDeployment, metadata: {name: dotted, namespace: team-a},
				spec: {template: {spec: {replicas: 1}}, placement: {clusters: [{name: member1}]},
					overrides: [{clusterName: member1, clusterOverrides: [{path: %q, value: 2}]}]}}`, path))
			want := fmt.Sprintf(`Invalid value: %q: path must be a JSON pointer starting with '/', such as /spec/replicas for spec.replicas: each '.' becomes '/' and [0] becomes /0`, path)
			wantInvalid(t, host.Create(ctx, obj, client.DryRunAll), "spec.overrides[0].clusterOverrides[0].path", want)
		})
	}
}

// Overrides are lists keyed by clusterName and path: a cluster listed twice
// or a path twice for one cluster, which KubeFed refused when it synced the
// object, is refused when it is written.
func TestOverridesAreKeyedByClusterAndPath(t *testing.T) {
	ctx := context.Background()
	for name, overrides := range map[string]string{
		"a cluster twice": `[{clusterName: member1, clusterOverrides: [{path: /spec/replicas, value: 1}]}, {clusterName: member1}]`,
		"a path twice":    `[{clusterName: member1, clusterOverrides: [{path: /spec/replicas, value: 1}, {path: /spec/replicas, value: 2}]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			obj := object(fmt.Sprintf(`{apiVersion: types.kubefed.io/v1beta1, kind: FederatedDeployment, metadata: {name: twice, namespace: team-a},
				spec: {template: {spec: {replicas: 1}}, overrides: %s}}`, overrides))
			wantInvalid(t, host.Create(ctx, obj, client.DryRunAll), "Duplicate value")
		})
	}
}

// KubeFed's endpoint rules: a host, host:port or URL, with a port from 1
// to 65535. (http:// is refused here, where KubeFed took it: the token the
// control plane sends must not travel in clear.)
func TestKubeFedClusterEndpoints(t *testing.T) {
	ctx := context.Background()
	cluster := func(endpoint string) *unstructured.Unstructured {
		return object(fmt.Sprintf(`{apiVersion: core.kubefed.io/v1beta1, kind: KubeFedCluster, metadata: {name: endpoint, namespace: kube-federation-system},
			spec: {apiEndpoint: %q, secretRef: {name: endpoint-token}}}`, endpoint))
	}
	for _, ok := range []string{"10.0.0.1", "10.0.0.1:6443", "https://10.0.0.1:6443", "member.example.com", "https://[fd00::1]:6443", "https://proxy.example.com/k8s/clusters/c-1", "10.0.0.1:0443"} {
		if err := host.Create(ctx, cluster(ok), client.DryRunAll); err != nil {
			t.Errorf("apiEndpoint %q refused: %v", ok, err)
		}
	}
	for endpoint, want := range map[string]string{
		"10.0.0.1:0":             "port must be between 1 and 65535",
		"https://10.0.0.1:99999": "port must be between 1 and 65535",
		"http://10.0.0.1:6443":   "must be a host, host:port or an https:// URL",
		"":                       "spec.apiEndpoint",
	} {
		wantInvalid(t, host.Create(ctx, cluster(endpoint), client.DryRunAll), want)
	}
}

// statusAggregation (ours, additive) is checked by the schema: a READY that
// names no field or a path that is not a JSON pointer is refused when
// written, not found out by the controller.
func TestStatusAggregationIsValidated(t *testing.T) {
	ctx := context.Background()
	fields := []any{
		map[string]any{"name": "desired", "path": "/spec/size"},
		map[string]any{"name": "up", "path": "/status/readyMembers"},
	}
	agg := func(m map[string]any) func(map[string]any) { return set("statusAggregation", m) }
	for _, tc := range []struct {
		name  string
		edit  func(map[string]any)
		wants []string
	}{
		{"ready naming no field", agg(map[string]any{"fields": fields, "ready": "down", "desired": "desired"}),
			[]string{"spec.statusAggregation.ready", "ready must name one of fields"}},
		{"ready without desired", agg(map[string]any{"fields": fields, "ready": "up"}),
			[]string{"spec.statusAggregation", "ready and desired go together"}},
		{"a dotted path", agg(map[string]any{"fields": []any{map[string]any{"name": "up", "path": "status.readyMembers"}}}),
			[]string{"spec.statusAggregation.fields[0].path", "must be a JSON pointer"}},
		{"a bad escape", agg(map[string]any{"fields": []any{map[string]any{"name": "up", "path": "/metadata/annotations/a~2b"}}}),
			[]string{"spec.statusAggregation.fields[0].path", "not ~0 (for '~') or ~1 (for '/')"}},
		{"a trailing tilde", agg(map[string]any{"fields": []any{map[string]any{"name": "up", "path": "/status/up~"}}}),
			[]string{"spec.statusAggregation.fields[0].path", "not ~0"}},
		{"a name that is no identifier", agg(map[string]any{"fields": []any{map[string]any{"name": "ready-members", "path": "/status/readyMembers"}}}),
			[]string{"spec.statusAggregation.fields[0].name"}},
		{"a field twice", agg(map[string]any{"fields": []any{fields[0], fields[0]}}),
			[]string{"spec.statusAggregation.fields[1]", "Duplicate value"}},
		{"an unknown mode", agg(map[string]any{"mode": "Off"}),
			[]string{"spec.statusAggregation.mode", "Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantInvalid(t, host.Create(ctx, typeConfig(tc.edit), client.DryRunAll), tc.wants...)
		})
	}
	for name, m := range map[string]map[string]any{
		"fields with READY": {"fields": fields, "ready": "up", "desired": "desired"},
		"fields alone":      {"fields": fields[:1]},
		"escapes":           {"fields": []any{map[string]any{"name": "n", "path": "/metadata/annotations/example.com~1count~0x"}}},
		"disabled":          {"mode": "Disabled"},
	} {
		if err := host.Create(ctx, typeConfig(agg(m)), client.DryRunAll); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
}
