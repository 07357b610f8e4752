//go:build integration

package sync_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr/testr"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/test/framework"
)

const testNS = "engine-test"

// TestEngine runs the whole controller-manager in this process (so that the
// race detector watches the engine) against a real host and two members,
// and checks that a hung member delays nobody else and converges when it
// comes back, and that deletion releases every object.
func TestEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx)
	host := fw.Host.Client
	runControllerManager(t, ctx, fw)

	member1, member2 := fw.Members[0], fw.Members[1]
	both := joinMembers(t, ctx, fw)

	// A wave while member2 hangs: more objects than workers, so workers
	// waiting for the hung member would hold back member1's copies.
	const n = 4 * workers
	if err := member2.Local.PauseAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = member2.Local.ResumeAPIServer()
		}
	})
	for i := range n {
		create(t, ctx, host, fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	waitFor(t, ctx, "every copy in member1 while member2 hangs", 20*time.Second, func() bool { return copies(t, ctx, member1) == n })
	waitFor(t, ctx, "status naming the hung member", 20*time.Second, func() bool {
		s := state(ctx, host, "ConfigMap", "cm-0")
		return strings.HasPrefix(s, "False/CheckClusters| "+member1.Name+" "+member2.Name+"=")
	})

	if err := member2.Local.ResumeAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	want := "True| " + strings.Join(both, " ")
	waitFor(t, ctx, "every object propagated after the member came back", 2*time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", "cm-"+strconv.Itoa(i)) != want {
				return false
			}
		}
		return true
	})
	if got := copies(t, ctx, member2); got != n {
		t.Fatalf("member2 has %d copies, want %d", got, n)
	}

	// Deleting releases every object once its copies are gone.
	for i := range n {
		u := fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), nil, nil)
		if err := host.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	waitAllGone(t, ctx, fw)
}

// waitAllGone waits until no FederatedConfigMap is left in the test
// namespace and no member holds a copy of one: their finalizers were
// released once the copies were gone.
func waitAllGone(t *testing.T, ctx context.Context, fw *framework.Framework) {
	t.Helper()
	waitFor(t, ctx, "copies and federated objects gone", 2*time.Minute, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("types.kubefed.io/v1beta1")
		list.SetKind("FederatedConfigMapList")
		if err := fw.Host.Client.List(ctx, list, client.InNamespace(testNS)); err != nil || len(list.Items) > 0 {
			return false
		}
		for _, m := range fw.Members {
			if copies(t, ctx, m) != 0 {
				return false
			}
		}
		return true
	})
}

// setUpHost starts a host and two members, installs the CRDs, a
// KubeFedConfig with fast probes and the namespaces and configmaps types.
func setUpHost(t *testing.T, ctx context.Context, configure ...func(*corev1beta1.KubeFedConfigSpec)) *framework.Framework {
	t.Helper()
	fw, err := framework.Start(ctx, t.TempDir(), 2, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fw.Stop(); err != nil {
			t.Errorf("stopping clusters: %v", err)
		}
	})
	crds, err := framework.ReadCRDs(fw.CRDDirs()...)
	if err != nil {
		t.Fatal(err)
	}
	host := fw.Host.Client
	if err := framework.InstallCRDs(ctx, host, crds); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, host, corev1beta1.DefaultKubeFedNamespace); err != nil {
		t.Fatal(err)
	}
	spec := corev1beta1.KubeFedConfigSpec{
		Scope: corev1beta1.ClusterScoped,
		ClusterHealthCheck: &corev1beta1.ClusterHealthCheckConfig{
			Period:           &metav1.Duration{Duration: time.Second},
			Timeout:          &metav1.Duration{Duration: 3 * time.Second},
			FailureThreshold: ptr.To[int64](2),
		},
		SyncController: &corev1beta1.SyncControllerConfig{MaxConcurrentReconciles: ptr.To[int64](workers)},
	}
	for _, c := range configure {
		c(&spec)
	}
	if err := host.Create(ctx, &corev1beta1.KubeFedConfig{
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: corev1beta1.DefaultKubeFedNamespace},
		Spec:       spec,
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"namespaces.yaml", "configmaps.yaml"} {
		if _, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--server-side", "-f", filepath.Join(fw.RepoRoot, "config", "default-types", f)); err != nil {
			t.Fatal(err)
		}
	}
	ctrl.SetLogger(testr.NewWithOptions(t, testr.Options{Verbosity: 0}))
	return fw
}

// runControllerManager runs the whole controller-manager in this process,
// so that the race detector watches it, until the test ends or the
// returned function stops it.
func runControllerManager(t *testing.T, ctx context.Context, fw *framework.Framework, configure ...func(*controllermanager.Options)) (stop func()) {
	t.Helper()
	opts := controllermanager.DefaultOptions()
	opts.Kubeconfig, opts.Context = fw.Kubeconfig, fw.Host.Name
	opts.MetricsAddr, opts.HealthAddr, opts.WebhookPort = "0", "0", 0
	for _, c := range configure {
		c(&opts)
	}
	cmCtx, stopCM := context.WithCancel(ctx)
	cmDone := make(chan error, 1)
	go func() { cmDone <- controllermanager.Run(cmCtx, opts) }()
	var once gosync.Once
	stop = func() {
		once.Do(func() {
			stopCM()
			if err := <-cmDone; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("controller-manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// joinMembers joins the members, waits for them to be Ready and federates
// the test namespace to them; it returns their names.
func joinMembers(t *testing.T, ctx context.Context, fw *framework.Framework) []string {
	t.Helper()
	host := fw.Host.Client
	names := joinOnly(t, ctx, fw)
	if err := framework.EnsureNamespace(ctx, host, testNS); err != nil {
		t.Fatal(err)
	}
	create(t, ctx, host, fedObject("Namespace", testNS, testNS, map[string]any{}, names))
	waitFor(t, ctx, "the namespace everywhere", time.Minute, func() bool {
		return state(ctx, host, "Namespace", testNS) == "True| "+strings.Join(names, " ")
	})
	return names
}

// joinOnly joins the members and waits for them to be Ready; it returns
// their names.
func joinOnly(t *testing.T, ctx context.Context, fw *framework.Framework) []string {
	t.Helper()
	host := fw.Host.Client
	var names []string
	for _, m := range fw.Members {
		if _, stderr, err := fw.Kubefedctl(ctx, "join", m.Name, "--cluster-context", m.Name, "--host-cluster-context", fw.Host.Name); err != nil {
			t.Fatalf("join %s: %v\n%s", m.Name, err, stderr)
		}
		names = append(names, m.Name)
	}
	for _, m := range fw.Members {
		waitFor(t, ctx, m.Name+" Ready", time.Minute, func() bool { return clusterReady(ctx, host, m.Name) })
	}
	return names
}

// workers is the KubeFedConfig's maxConcurrentReconciles in this test.
const workers = 4

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func waitFor(t *testing.T, ctx context.Context, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
	t.Logf("%s: after %s", what, time.Since(start).Round(time.Millisecond))
}

func create(t *testing.T, ctx context.Context, c client.Client, u *unstructured.Unstructured) {
	t.Helper()
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func fedObject(kind, namespace, name string, template map[string]any, clusters []string) *unstructured.Unstructured {
	list := []any{}
	for _, c := range clusters {
		list = append(list, map[string]any{"name": c})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "Federated" + kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       map[string]any{"template": template, "placement": map[string]any{"clusters": list}},
	}}
	return u
}

// state renders a federated object's Propagation condition and cluster
// statuses, e.g. "False/CheckClusters| member1 member2=Propagating".
func state(ctx context.Context, c client.Client, kind, name string) string {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("types.kubefed.io/v1beta1")
	u.SetKind("Federated" + kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: name}, u); err != nil {
		return err.Error()
	}
	return framework.PropagationState(u)
}

// copies counts the wave's copies in a member, failing on one with the
// wrong data.
func copies(t *testing.T, ctx context.Context, m *framework.Cluster) int {
	t.Helper()
	n, err := framework.WaveCopies(ctx, m, testNS, "cm-")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func clusterReady(ctx context.Context, c client.Client, name string) bool {
	kfc := &corev1beta1.KubeFedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: name}, kfc); err != nil {
		return false
	}
	return kfc.IsReady()
}
