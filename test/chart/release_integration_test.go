//go:build integration

package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

var releaseManifests = map[corev1beta1.Scope]string{
	corev1beta1.ClusterScoped:   "kubefed.yaml",
	corev1beta1.NamespaceScoped: "kubefed-namespaced.yaml",
}

// TestReleaseManifestsAreTheChart renders the chart as `make
// release-manifests` does and compares the result with dist/: the plain
// manifests cannot drift from the chart.
func TestReleaseManifestsAreTheChart(t *testing.T) {
	helm := binary(t, "helm", "make helm")
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "release-manifests.sh"), out)
	cmd.Env = append(os.Environ(), "HELM="+helm)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/release-manifests.sh: %v\n%s", err, b)
	}
	for _, name := range releaseManifests {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(repoRoot, "dist", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("dist/%s differs from the chart's rendering; run 'make release-manifests' and commit", name)
		}
	}
}

// manifestObjects decodes the documents of a dist/ manifest.
func manifestObjects(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "dist", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestReleaseManifestInstall installs dist/kubefed.yaml on a fresh host the
// way KubeFed's instructions read, `kubectl create namespace` then one
// `kubectl apply -f`, and runs the controller-manager with the manifest's
// Deployment flags on nothing but its ServiceAccount's token: it creates
// its KubeFedConfig (defaulted by the manifest's admission policy) and the
// default types, a member joins, and a federated ConfigMap reaches it. The
// Namespaced manifest is applied with a server-side dry run on the same host.
func TestReleaseManifestInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := startHostAndMember(ctx, t)
	ns := corev1beta1.DefaultKubeFedNamespace
	manifest := filepath.Join(repoRoot, "dist", releaseManifests[corev1beta1.ClusterScoped])
	if out, err := fw.Kubectl(ctx, fw.Host.Name, "create", "namespace", ns); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "-f", manifest)
	if err != nil {
		t.Fatalf("kubectl apply -f dist/kubefed.yaml must succeed in one go: %v\n%s", err, out)
	}
	t.Run("the Namespaced manifest passes a server-side dry run", func(t *testing.T) {
		path := filepath.Join(repoRoot, "dist", releaseManifests[corev1beta1.NamespaceScoped])
		if out, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--dry-run=server", "-f", path); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	})

	// The controller-manager as the manifest's Deployment runs it, out of
	// cluster: its flags but the listen addresses, which the framework sets.
	var deployment appsv1.Deployment
	objs := manifestObjects(t, releaseManifests[corev1beta1.ClusterScoped])
	into(t, only(t, objs, "Deployment"), &deployment)
	var args []string
	for _, a := range deployment.Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(a, "--metrics-addr") && !strings.HasPrefix(a, "--health-addr") {
			args = append(args, a)
		}
	}
	if !slices.Contains(args, "--install-default-types") {
		t.Fatalf("the manifest's controller-manager does not install the default types: %v", args)
	}
	var sa corev1.ServiceAccount
	into(t, only(t, objs, "ServiceAccount"), &sa)
	cp := &controlPlane{install: install{scope: corev1beta1.ClusterScoped, namespace: ns, release: "kubefed"}, fw: fw, serviceAccount: sa.Name}
	cp.start(ctx, t, args...)

	var cfg corev1beta1.KubeFedConfig
	eventually(t, time.Minute, "the controller-manager's KubeFedConfig", func() (bool, string) {
		if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.KubeFedConfigName}, &cfg); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if cfg.Spec.Scope != corev1beta1.ClusterScoped {
		t.Errorf("KubeFedConfig scope %s, want Cluster", cfg.Spec.Scope)
	}
	// The controller-manager wrote every gate itself; the manifest's
	// admission policy fills them back in when a write leaves them out,
	// keeping the gate given. An API server loads a policy some time after
	// it is created (a write before that passes as it is, and the
	// controller-manager defaults what it reads the same way), so the
	// update is made again until the policy acts on it.
	eventually(t, time.Minute, "an update with one gate stored with every gate (the manifest's MutatingAdmissionPolicy)", func() (bool, string) {
		if err := fw.Host.Client.Get(ctx, client.ObjectKeyFromObject(&cfg), &cfg); err != nil {
			return false, err.Error()
		}
		cfg.Spec.FeatureGates = []corev1beta1.FeatureGatesConfig{{Name: corev1beta1.SchedulerPreferences, Configuration: corev1beta1.Disabled}}
		if err := fw.Host.Client.Update(ctx, &cfg); err != nil {
			return false, err.Error()
		}
		gates := map[corev1beta1.FeatureGate]corev1beta1.Mode{}
		for _, g := range cfg.Spec.FeatureGates {
			gates[g.Name] = g.Configuration
		}
		return len(cfg.Spec.FeatureGates) == 5 && gates[corev1beta1.SchedulerPreferences] == corev1beta1.Disabled,
			fmt.Sprintf("stored %v", cfg.Spec.FeatureGates)
	})
	cfg.Spec.FeatureGates = nil
	if err := fw.Host.Client.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	cp.checkMemberJoins(ctx, t)
	cp.checkDefaultTypesRun(ctx, t)
	cp.checkPropagates(ctx, t)
	cp.checkNothingForbidden(t)
}

// checkPropagates federates a namespace and a ConfigMap in it and waits for
// the ConfigMap in the member.
func (cp *controlPlane) checkPropagates(ctx context.Context, t *testing.T) {
	t.Helper()
	host := cp.fw.Host.Client
	namespace := cp.federationNamespace()
	if err := framework.EnsureNamespace(ctx, host, namespace); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{
		`{apiVersion: types.kubefed.io/v1beta1, kind: FederatedNamespace, metadata: {name: ` + namespace + `, namespace: ` + namespace + `},
			spec: {placement: {clusterSelector: {}}}}`,
		`{apiVersion: types.kubefed.io/v1beta1, kind: FederatedConfigMap, metadata: {name: greeting, namespace: ` + namespace + `},
			spec: {template: {data: {hello: world}}, placement: {clusterSelector: {}}}}`,
	} {
		objs, err := decodeManifests(doc)
		if err != nil {
			t.Fatal(err)
		}
		// Created at once, as a user's script would, however soon after the
		// install: the controller-manager lists a type for the sync
		// finalizer policy only once the API server can apply it (in its
		// first seconds without the federated group's schema it would
		// refuse the create with 503).
		if err := host.Create(ctx, objs[0]); err != nil {
			t.Fatalf("create %s: %v", objs[0].GetKind(), err)
		}
	}
	member := cp.fw.Members[0]
	eventually(t, time.Minute, "the ConfigMap in "+member.Name, func() (bool, string) {
		var cm corev1.ConfigMap
		if err := member.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "greeting"}, &cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["hello"] == "world", fmt.Sprintf("data %v", cm.Data)
	})
}
