package retention

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// object decodes a YAML manifest the way the API server's unstructured
// decoding does (integers as int64).
func object(t testing.TB, manifest string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	if obj == nil {
		obj = map[string]any{}
	}
	return obj
}

var (
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	configMapKind  = schema.GroupKind{Kind: "ConfigMap"}
)

type retainCase struct {
	name           string
	kind           schema.GroupKind
	retainReplicas bool
	desired        string
	current        string
	want           string
}

func runRetainCases(t *testing.T, cases []retainCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired, current := object(t, tc.desired), object(t, tc.current)
			if err := Retain(tc.kind, desired, current, tc.retainReplicas); err != nil {
				t.Fatal(err)
			}
			if want := object(t, tc.want); !reflect.DeepEqual(desired, want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, desired), mustJSON(t, want))
			}
			if !reflect.DeepEqual(current, object(t, tc.current)) {
				t.Errorf("member object changed: %s", mustJSON(t, current))
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRetainMetadata(t *testing.T) {
	runRetainCases(t, []retainCase{
		{
			name:    "resourceVersion comes from the member",
			kind:    configMapKind,
			desired: `{metadata: {name: a, resourceVersion: "1"}, data: {k: v}}`,
			current: `{metadata: {name: a, resourceVersion: "42"}, data: {k: old}}`,
			want:    `{metadata: {name: a, resourceVersion: "42"}, data: {k: v}}`,
		},
		{
			name:    "no member resourceVersion clears desired's",
			kind:    configMapKind,
			desired: `{metadata: {name: a, resourceVersion: "1"}}`,
			current: `{metadata: {name: a}}`,
			want:    `{metadata: {name: a}}`,
		},
		{
			name:    "finalizers come from the member",
			kind:    configMapKind,
			desired: `{metadata: {name: a, finalizers: [from-override]}}`,
			current: `{metadata: {name: a, resourceVersion: "7", finalizers: [member.io/x, member.io/y]}}`,
			want:    `{metadata: {name: a, resourceVersion: "7", finalizers: [member.io/x, member.io/y]}}`,
		},
		{
			name:    "no member finalizers clears desired's, as in KubeFed",
			kind:    configMapKind,
			desired: `{metadata: {name: a, finalizers: [x]}}`,
			current: `{metadata: {name: a}}`,
			want:    `{metadata: {name: a}}`,
		},
		{
			name:    "member annotations are kept, desired's win for their keys",
			kind:    configMapKind,
			desired: `{metadata: {name: a, annotations: {b: desired, c: "3"}}}`,
			current: `{metadata: {name: a, annotations: {a: "1", b: member}}}`,
			want:    `{metadata: {name: a, annotations: {a: "1", b: desired, c: "3"}}}`,
		},
		{
			name:    "member annotations when desired has none",
			kind:    configMapKind,
			desired: `{metadata: {name: a}}`,
			current: `{metadata: {name: a, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
			want:    `{metadata: {name: a, annotations: {deployment.kubernetes.io/revision: "3"}}}`,
		},
		{
			name:    "desired annotations when the member has none",
			kind:    configMapKind,
			desired: `{metadata: {name: a, annotations: {x: y}}}`,
			current: `{metadata: {name: a}}`,
			want:    `{metadata: {name: a, annotations: {x: y}}}`,
		},
		{
			name:    "member without metadata",
			kind:    configMapKind,
			desired: `{metadata: {name: a, resourceVersion: "1", finalizers: [x], annotations: {x: y}}}`,
			current: `{}`,
			want:    `{metadata: {name: a, annotations: {x: y}}}`,
		},
		{
			name:    "desired without metadata",
			kind:    configMapKind,
			desired: `{data: {}}`,
			current: `{metadata: {resourceVersion: "5"}}`,
			want:    `{data: {}, metadata: {resourceVersion: "5"}}`,
		},
	})
}

func TestRetainReplicas(t *testing.T) {
	runRetainCases(t, []retainCase{
		{
			name: "member replicas kept with retainReplicas", kind: deploymentKind, retainReplicas: true,
			desired: `{spec: {replicas: 3, paused: false}}`,
			current: `{spec: {replicas: 7}}`,
			want:    `{metadata: {}, spec: {replicas: 7, paused: false}}`,
		},
		{
			name: "desired replicas without retainReplicas", kind: deploymentKind,
			desired: `{spec: {replicas: 3}}`,
			current: `{spec: {replicas: 7}}`,
			want:    `{metadata: {}, spec: {replicas: 3}}`,
		},
		{
			name: "member without replicas keeps desired's", kind: deploymentKind, retainReplicas: true,
			desired: `{spec: {replicas: 3}}`,
			current: `{spec: {}}`,
			want:    `{metadata: {}, spec: {replicas: 3}}`,
		},
		{
			name: "member without spec keeps desired's", kind: deploymentKind, retainReplicas: true,
			desired: `{spec: {replicas: 3}}`,
			current: `{}`,
			want:    `{metadata: {}, spec: {replicas: 3}}`,
		},
		{
			name: "member null replicas keeps desired's", kind: deploymentKind, retainReplicas: true,
			desired: `{spec: {replicas: 3}}`,
			current: `{spec: {replicas: null}}`,
			want:    `{metadata: {}, spec: {replicas: 3}}`,
		},
		{
			name: "zero member replicas are kept", kind: deploymentKind, retainReplicas: true,
			desired: `{spec: {replicas: 3}}`,
			current: `{spec: {replicas: 0}}`,
			want:    `{metadata: {}, spec: {replicas: 0}}`,
		},
		{
			name: "desired without spec", kind: deploymentKind, retainReplicas: true,
			desired: `{}`,
			current: `{spec: {replicas: 2}}`,
			want:    `{metadata: {}, spec: {replicas: 2}}`,
		},
	})
}

var serviceKindForTest = schema.GroupKind{Kind: "Service"}

func TestRetainService(t *testing.T) {
	runRetainCases(t, []retainCase{
		{
			name:    "cluster IPs come from the member",
			kind:    serviceKindForTest,
			desired: `{spec: {ports: [{port: 80}]}}`,
			current: `{spec: {clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5, "fd00::5"], ports: [{port: 80}]}}`,
			want:    `{metadata: {}, spec: {clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5, "fd00::5"], ports: [{port: 80}]}}`,
		},
		{
			name:    "member cluster IP wins: it is immutable",
			kind:    serviceKindForTest,
			desired: `{spec: {clusterIP: 10.9.9.9, clusterIPs: [10.9.9.9]}}`,
			current: `{spec: {clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5]}}`,
			want:    `{metadata: {}, spec: {clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5]}}`,
		},
		{
			name:    "headless",
			kind:    serviceKindForTest,
			desired: `{spec: {clusterIP: None}}`,
			current: `{spec: {clusterIP: None, clusterIPs: [None]}}`,
			want:    `{metadata: {}, spec: {clusterIP: None, clusterIPs: [None]}}`,
		},
		{
			name:    "no cluster IP for ExternalName",
			kind:    serviceKindForTest,
			desired: `{spec: {type: ExternalName, externalName: db.example.com}}`,
			current: `{spec: {type: ClusterIP, clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5]}}`,
			want:    `{metadata: {}, spec: {type: ExternalName, externalName: db.example.com}}`,
		},
		{
			name: "node ports matched by name",
			kind: serviceKindForTest,
			desired: `{spec: {type: NodePort, ports: [
				{name: https, port: 443, protocol: TCP},
				{name: http, port: 8080, protocol: TCP}]}}`,
			current: `{spec: {type: NodePort, clusterIP: 10.0.0.5, ports: [
				{name: http, port: 80, protocol: TCP, nodePort: 30080},
				{name: https, port: 443, protocol: TCP, nodePort: 30443}]}}`,
			want: `{metadata: {}, spec: {type: NodePort, clusterIP: 10.0.0.5, ports: [
				{name: https, port: 443, protocol: TCP, nodePort: 30443},
				{name: http, port: 8080, protocol: TCP, nodePort: 30080}]}}`,
		},
		{
			name: "node ports matched by protocol and port when unnamed",
			kind: serviceKindForTest,
			desired: `{spec: {type: NodePort, ports: [
				{port: 53, protocol: UDP},
				{port: 53}]}}`,
			current: `{spec: {type: NodePort, ports: [
				{port: 53, protocol: TCP, nodePort: 30053},
				{port: 53, protocol: UDP, nodePort: 31053}]}}`,
			want: `{metadata: {}, spec: {type: NodePort, ports: [
				{port: 53, protocol: UDP, nodePort: 31053},
				{port: 53, nodePort: 30053}]}}`,
		},
		{
			name:    "a renamed port falls back to protocol and port",
			kind:    serviceKindForTest,
			desired: `{spec: {type: LoadBalancer, ports: [{name: web, port: 80}]}}`,
			current: `{spec: {type: LoadBalancer, ports: [{name: http, port: 80, protocol: TCP, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {type: LoadBalancer, ports: [{name: web, port: 80, nodePort: 30080}]}}`,
		},
		{
			name: "name matches come before protocol and port matches",
			kind: serviceKindForTest,
			// The new port "alt" has http's old port number; http keeps its node port.
			desired: `{spec: {type: NodePort, ports: [{name: alt, port: 80}, {name: http, port: 8080}]}}`,
			current: `{spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {type: NodePort, ports: [{name: alt, port: 80}, {name: http, port: 8080, nodePort: 30080}]}}`,
		},
		{
			name:    "a member node port is given to one desired port only",
			kind:    serviceKindForTest,
			desired: `{spec: {type: NodePort, ports: [{port: 80}, {port: 80, name: dup}]}}`,
			current: `{spec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {type: NodePort, ports: [{port: 80, nodePort: 30080}, {port: 80, name: dup}]}}`,
		},
		{
			name:    "a node port set in desired wins",
			kind:    serviceKindForTest,
			desired: `{spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 32000}]}}`,
			current: `{spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 32000}]}}`,
		},
		{
			name:    "a new port gets no node port",
			kind:    serviceKindForTest,
			desired: `{spec: {type: NodePort, ports: [{name: metrics, port: 9090}]}}`,
			current: `{spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {type: NodePort, ports: [{name: metrics, port: 9090}]}}`,
		},
		{
			name:    "no node ports when desired is ClusterIP",
			kind:    serviceKindForTest,
			desired: `{spec: {ports: [{name: http, port: 80}]}}`,
			current: `{spec: {type: NodePort, clusterIP: 10.0.0.5, ports: [{name: http, port: 80, nodePort: 30080}]}}`,
			want:    `{metadata: {}, spec: {clusterIP: 10.0.0.5, ports: [{name: http, port: 80}]}}`,
		},
		{
			name:    "health check node port with externalTrafficPolicy Local",
			kind:    serviceKindForTest,
			desired: `{spec: {type: LoadBalancer, externalTrafficPolicy: Local}}`,
			current: `{spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32123}}`,
			want:    `{metadata: {}, spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32123}}`,
		},
		{
			name:    "no health check node port with externalTrafficPolicy Cluster",
			kind:    serviceKindForTest,
			desired: `{spec: {type: LoadBalancer, externalTrafficPolicy: Cluster}}`,
			current: `{spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32123}}`,
			want:    `{metadata: {}, spec: {type: LoadBalancer, externalTrafficPolicy: Cluster}}`,
		},
		{
			name:    "a health check node port set in desired wins",
			kind:    serviceKindForTest,
			desired: `{spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 31000}}`,
			current: `{spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 32123}}`,
			want:    `{metadata: {}, spec: {type: LoadBalancer, externalTrafficPolicy: Local, healthCheckNodePort: 31000}}`,
		},
		{
			name:    "a Service of another group is not a core Service",
			kind:    schema.GroupKind{Group: "serving.knative.dev", Kind: "Service"},
			desired: `{spec: {template: {}}}`,
			current: `{spec: {clusterIP: 10.0.0.5}}`,
			want:    `{metadata: {}, spec: {template: {}}}`,
		},
	})
}

func TestRetainServiceAccount(t *testing.T) {
	sa := schema.GroupKind{Kind: "ServiceAccount"}
	runRetainCases(t, []retainCase{
		{
			name: "member secrets when desired has none", kind: sa,
			desired: `{metadata: {name: sa}}`,
			current: `{metadata: {name: sa}, secrets: [{name: sa-token-abcde}]}`,
			want:    `{metadata: {name: sa}, secrets: [{name: sa-token-abcde}]}`,
		},
		{
			name: "member secrets when desired's list is empty", kind: sa,
			desired: `{metadata: {name: sa}, secrets: []}`,
			current: `{metadata: {name: sa}, secrets: [{name: sa-token-abcde}]}`,
			want:    `{metadata: {name: sa}, secrets: [{name: sa-token-abcde}]}`,
		},
		{
			name: "desired secrets win", kind: sa,
			desired: `{metadata: {name: sa}, secrets: [{name: mine}]}`,
			current: `{metadata: {name: sa}, secrets: [{name: sa-token-abcde}]}`,
			want:    `{metadata: {name: sa}, secrets: [{name: mine}]}`,
		},
		{
			name: "neither has secrets", kind: sa,
			desired: `{metadata: {name: sa}}`,
			current: `{metadata: {name: sa}}`,
			want:    `{metadata: {name: sa}}`,
		},
		{
			name: "secrets are only retained for ServiceAccounts", kind: configMapKind,
			desired: `{metadata: {name: sa}}`,
			current: `{metadata: {name: sa}, secrets: [{name: x}]}`,
			want:    `{metadata: {name: sa}}`,
		},
	})
}

// TestRetainDoesNotAlias checks that desired shares nothing with the member
// object, which usually sits in an informer cache.
func TestRetainDoesNotAlias(t *testing.T) {
	const member = `{metadata: {resourceVersion: "1", finalizers: [f], annotations: {a: b}},
		spec: {clusterIP: 10.0.0.1, clusterIPs: [10.0.0.1], replicas: 2},
		secrets: [{name: tok}]}`
	for _, kind := range []schema.GroupKind{serviceKindForTest, {Kind: "ServiceAccount"}} {
		desired, current := object(t, `{}`), object(t, member)
		if err := Retain(kind, desired, current, true); err != nil {
			t.Fatal(err)
		}
		scribble(desired)
		if !reflect.DeepEqual(current, object(t, member)) {
			t.Errorf("%s: changing desired changed the member object: %s", kind, mustJSON(t, current))
		}
	}
}

// scribble overwrites every scalar and adds a key to every object in v.
func scribble(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				v[k] = "scribbled"
			}
		}
		v["scribbled"] = true
	case []any:
		for i, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				v[i] = "scribbled"
			}
		}
	}
}

func TestRetainErrors(t *testing.T) {
	cases := []struct {
		name             string
		kind             schema.GroupKind
		desired, current string
		want             string
	}{
		{"member metadata", configMapKind, `{}`, `{metadata: []}`, "member object metadata: expected an object, got a list"},
		{"desired metadata", configMapKind, `{metadata: x}`, `{}`, "desired object metadata: expected an object, got a string"},
		{"resourceVersion", configMapKind, `{}`, `{metadata: {resourceVersion: 5}}`, "member object metadata.resourceVersion: expected a string, got a number"},
		{"finalizers", configMapKind, `{}`, `{metadata: {finalizers: x}}`, "member object metadata.finalizers: expected a list, got a string"},
		{"finalizer", configMapKind, `{}`, `{metadata: {finalizers: [a, 1]}}`, "member object metadata.finalizers: element 1: expected a string, got a number"},
		{"member annotations", configMapKind, `{}`, `{metadata: {annotations: [a]}}`, "member object metadata.annotations: expected an object, got a list"},
		{"member annotation", configMapKind, `{}`, `{metadata: {annotations: {a: true}}}`, "member object metadata.annotations[a]: expected a string, got a boolean"},
		{"desired annotations", configMapKind, `{metadata: {annotations: x}}`, `{metadata: {annotations: {a: b}}}`, "desired object metadata.annotations: expected an object, got a string"},
		{"member spec", serviceKindForTest, `{}`, `{spec: 1}`, "member object spec: expected an object, got a number"},
		{"desired spec", serviceKindForTest, `{spec: 1}`, `{spec: {}}`, "desired object spec: expected an object, got a number"},
		{"service type", serviceKindForTest, `{spec: {type: 1}}`, `{spec: {}}`, "desired object spec.type: expected a string, got a number"},
		{"clusterIP", serviceKindForTest, `{spec: {}}`, `{spec: {clusterIP: 1}}`, "member object spec.clusterIP: expected a string, got a number"},
		{"clusterIPs", serviceKindForTest, `{spec: {}}`, `{spec: {clusterIPs: [1]}}`, "member object spec.clusterIPs: element 0: expected a string, got a number"},
		{"member ports", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: 80}]}}`, `{spec: {ports: {}}}`, "member object spec.ports: expected a list, got an object"},
		{"desired ports", serviceKindForTest, `{spec: {type: NodePort, ports: x}}`, `{spec: {ports: [{port: 80, nodePort: 30080}]}}`, "desired object spec.ports: expected a list, got a string"},
		{"member port", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: 80}]}}`, `{spec: {ports: [{port: 80, nodePort: 30080}, 8]}}`, "member object spec.ports[1]: expected an object, got a number"},
		{"port number", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: http}]}}`, `{spec: {ports: [{port: 80, nodePort: 30080}]}}`, "desired object spec.ports[0].port: expected an integer, got a string"},
		{"fractional node port", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: 80}]}}`, `{spec: {ports: [{port: 80, nodePort: 30080.5}]}}`, "member object spec.ports[0].nodePort: expected an integer, got a number"},
		{"port name", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: 80, name: 1}]}}`, `{spec: {ports: [{port: 80, nodePort: 30080}]}}`, "desired object spec.ports[0].name: expected a string, got a number"},
		{"port protocol", serviceKindForTest, `{spec: {type: NodePort, ports: [{port: 80}]}}`, `{spec: {ports: [{port: 80, protocol: [], nodePort: 30080}]}}`, "member object spec.ports[0].protocol: expected a string, got a list"},
		{"traffic policy", serviceKindForTest, `{spec: {type: LoadBalancer, externalTrafficPolicy: 1}}`, `{spec: {}}`, "desired object spec.externalTrafficPolicy: expected a string, got a number"},
		{"health check node port", serviceKindForTest, `{spec: {type: LoadBalancer, externalTrafficPolicy: Local}}`, `{spec: {healthCheckNodePort: x}}`, "member object spec.healthCheckNodePort: expected an integer, got a string"},
		{"member secrets", schema.GroupKind{Kind: "ServiceAccount"}, `{}`, `{secrets: {}}`, "member object secrets: expected a list, got an object"},
		{"desired secrets", schema.GroupKind{Kind: "ServiceAccount"}, `{secrets: 1}`, `{}`, "desired object secrets: expected a list, got a number"},
		{"replicas", deploymentKind, `{spec: {}}`, `{spec: {replicas: "3"}}`, "member object spec.replicas: expected an integer, got a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Retain(tc.kind, object(t, tc.desired), object(t, tc.current), true)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if err := Retain(configMapKind, nil, object(t, `{}`), false); err == nil {
		t.Error("want an error for a nil desired object")
	}
}

func FuzzRetain(f *testing.F) {
	f.Add("Service", `{"spec":{"type":"NodePort","ports":[{"port":80}]}}`, `{"metadata":{"resourceVersion":"1"},"spec":{"clusterIP":"10.0.0.1","ports":[{"port":80,"nodePort":30080}]}}`)
	f.Add("ServiceAccount", `{}`, `{"secrets":[{"name":"t"}]}`)
	f.Add("Deployment", `{"spec":{"replicas":1}}`, `{"metadata":{"annotations":{"a":"b"},"finalizers":["x"]},"spec":{"replicas":3}}`)
	f.Fuzz(func(t *testing.T, kind, desiredJSON, currentJSON string) {
		// The fuzzer minimizes new inputs in time quadratic in their length;
		// longer inputs add no coverage.
		if len(kind) > 32 || len(desiredJSON) > 512 || len(currentJSON) > 512 {
			return
		}
		var desired, current map[string]any
		if utiljson.Unmarshal([]byte(desiredJSON), &desired) != nil || utiljson.Unmarshal([]byte(currentJSON), &current) != nil {
			return
		}
		if desired == nil {
			return
		}
		if err := Retain(schema.GroupKind{Kind: kind}, desired, current, true); err != nil {
			return
		}
		// The result must stay a valid unstructured object.
		runtime.DeepCopyJSON(desired)
		if _, err := json.Marshal(desired); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkRetain(b *testing.B) {
	svcDesired := object(b, `{metadata: {name: web, labels: {app: web}}, spec: {type: LoadBalancer, selector: {app: web},
		ports: [{name: http, port: 80}, {name: https, port: 443}, {name: metrics, port: 9090}]}}`)
	svcCurrent := object(b, `{metadata: {name: web, resourceVersion: "123", annotations: {a: b}, finalizers: [service.kubernetes.io/load-balancer-cleanup]},
		spec: {type: LoadBalancer, clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5],
		ports: [{name: http, port: 80, protocol: TCP, nodePort: 30080}, {name: https, port: 443, protocol: TCP, nodePort: 30443}, {name: metrics, port: 9090, protocol: TCP, nodePort: 30909}]}}`)
	b.Run("service", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			desired := runtime.DeepCopyJSON(svcDesired)
			if err := Retain(serviceKindForTest, desired, svcCurrent, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	depDesired := object(b, `{metadata: {name: web, labels: {app: web}}, spec: {replicas: 3}}`)
	depCurrent := object(b, `{metadata: {name: web, resourceVersion: "9", annotations: {deployment.kubernetes.io/revision: "4"}}, spec: {replicas: 5}}`)
	b.Run("deployment-retain-replicas", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			desired := runtime.DeepCopyJSON(depDesired)
			if err := Retain(deploymentKind, desired, depCurrent, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestRetainNilMaps(t *testing.T) {
	// Typed nil maps never come from JSON but must not panic: nil desired
	// metadata and annotations are replaced, a nil port is an error.
	desired := map[string]any{"metadata": map[string]any(nil)}
	current := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}}}
	if err := Retain(configMapKind, desired, current, false); err != nil {
		t.Fatal(err)
	}
	if got := desired["metadata"].(map[string]any)["annotations"]; !reflect.DeepEqual(got, map[string]any{"a": "b"}) {
		t.Errorf("annotations %v", got)
	}

	desired = map[string]any{"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any(nil)}}}
	current = map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"nodePort": int64(30000)}}}}
	err := Retain(serviceKindForTest, desired, current, false)
	if want := "desired object spec.ports[0]: expected an object, got null"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestRetainJobSelectorAndGeneratedLabels(t *testing.T) {
	current := map[string]any{
		"metadata": map[string]any{"resourceVersion": "5"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{
				"batch.kubernetes.io/controller-uid": "u1", "job-name": "j", "app": "old"}}},
		},
	}
	desired := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "new"}}}}}
	if err := Retain(schema.GroupKind{Group: "batch", Kind: "Job"}, desired, current, false); err != nil {
		t.Fatal(err)
	}
	spec := desired["spec"].(map[string]any)
	if spec["selector"] == nil {
		t.Fatal("selector not retained")
	}
	labels := spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["batch.kubernetes.io/controller-uid"] != "u1" || labels["job-name"] != "j" || labels["app"] != "new" {
		t.Fatalf("labels: %v", labels)
	}
	// Other kinds are left alone.
	other := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{}}
	if err := Retain(schema.GroupKind{Group: "apps", Kind: "Deployment"}, other, current, false); err != nil {
		t.Fatal(err)
	}
	if other["spec"].(map[string]any)["selector"] != nil {
		t.Fatal("a Deployment's selector must not be retained")
	}
}
