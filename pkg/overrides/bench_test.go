package overrides

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// realisticDeployment is a template of the size users federate: a few
// containers with env, ports, probes and resources.
const realisticDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: frontend}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tier: frontend}}
    spec:
      containers:
      - name: app
        image: "nginx:1.0"
        ports: [{containerPort: 80, name: http}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}, {name: C, value: "3"}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 500m, memory: 256Mi}}
        readinessProbe: {httpGet: {path: /healthz, port: 80}, periodSeconds: 5}
      - name: sidecar
        image: envoy
        args: [--config, /etc/envoy.yaml]
`

func BenchmarkApply(b *testing.B) {
	fed := object(b, seedFederatedDeployment)
	byCluster, err := FromUnstructured(fed)
	if err != nil {
		b.Fatal(err)
	}
	ops := byCluster["cluster2"]
	template := object(b, realisticDeployment)

	// The seed operations are idempotent, so one object can take them again
	// and again: this measures Apply alone.
	b.Run("seed-ops", func(b *testing.B) {
		obj := runtime.DeepCopyJSON(template)
		b.ReportAllocs()
		for b.Loop() {
			if err := Apply(obj, ops); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the controller does per cluster: copy the template, then apply.
	b.Run("copy-template-and-seed-ops", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Apply(runtime.DeepCopyJSON(template), ops); err != nil {
				b.Fatal(err)
			}
		}
	})
	// KubeFed's approach for comparison: a JSON round trip of the object
	// around the patch (the patch itself not included).
	b.Run("json-round-trip-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			j, err := json.Marshal(template)
			if err != nil {
				b.Fatal(err)
			}
			var out map[string]any
			if err := utiljson.Unmarshal(j, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkFromUnstructured(b *testing.B) {
	fed := object(b, seedFederatedDeployment)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromUnstructured(fed); err != nil {
			b.Fatal(err)
		}
	}
}
