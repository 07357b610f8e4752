package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const (
	kubefedNS = corev1beta1.DefaultKubeFedNamespace
	// benchNS holds the federated objects and, in the members, their copies.
	benchNS = "bench"
	// directNS holds, in the members, the objects of the physical-limit
	// scenarios; it is not federated, so the control plane ignores it.
	directNS = "bench-direct"
)

// cluster is one running cluster with unthrottled clients: the bench's own
// client-side rate limit must never be what a scenario measures, except in
// the physical-limit scenarios, which build their own clients.
type cluster struct {
	name   string
	local  *localcluster.Cluster
	cfg    *rest.Config
	client client.Client
	dyn    dynamic.Interface
	kube   kubernetes.Interface
}

func newCluster(lc *localcluster.Cluster) (*cluster, error) {
	cfg := lc.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "kubefed-bench"
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", lc.Name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", lc.Name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", lc.Name, err)
	}
	return &cluster{name: lc.Name, local: lc, cfg: cfg, client: c, dyn: dyn, kube: kube}, nil
}

// env is a running federation with the control plane under test.
type env struct {
	o           options
	root        string
	workDir     string
	ownsWorkDir bool
	fed         *localcluster.Federation
	host        *cluster
	members     []*cluster
	cmBin       string
	cm          *framework.ControllerManager
	// replicas are the controller-managers beside cm once the scale-out
	// scenario replaced it with replicas running --scale-out.
	replicas []*framework.ControllerManager
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// setUp brings the federation up. It returns the env even on error so that
// the caller can tear down what was started.
func setUp(ctx context.Context, o options) (*env, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return nil, err
	}
	e := &env{o: o, root: root, workDir: o.workDir, cmBin: o.controllerMgr}
	if e.cmBin == "" {
		e.cmBin = filepath.Join(root, "bin", "controller-manager")
	}
	if _, err := os.Stat(e.cmBin); err != nil {
		return nil, fmt.Errorf("controller-manager binary: %w (run `make build`)", err)
	}
	if e.workDir == "" {
		e.workDir, err = os.MkdirTemp("", "kubefed-bench-")
		if err != nil {
			return nil, err
		}
		e.ownsWorkDir = true
	}
	names := []string{"host"}
	for i := 1; i <= o.members; i++ {
		names = append(names, fmt.Sprintf("member%d", i))
	}
	logf("starting %d clusters in %s", len(names), e.workDir)
	e.fed, err = localcluster.Start(ctx, localcluster.Options{
		WorkDir:      filepath.Join(e.workDir, "clusters"),
		Clusters:     names,
		BinDir:       filepath.Join(root, "bin"),
		StartTimeout: localcluster.DefaultStartTimeout + time.Duration(o.members)*30*time.Second,
		// Room for every bench pod: -n Deployments of one replica each.
		Nodes:     localcluster.NodeOptions{Count: o.nodes, CPU: o.nodeCPU, Memory: o.nodeMemory, Pods: max(110, 2*o.n/max(o.nodes, 1))},
		ExtraArgs: map[localcluster.Component][]string{localcluster.APIServer: strings.Fields(o.apiserverArgs)},
	})
	if err != nil {
		return e, fmt.Errorf("start clusters: %w", err)
	}
	for i, lc := range e.fed.Clusters {
		c, err := newCluster(lc)
		if err != nil {
			return e, err
		}
		if i == 0 {
			e.host = c
		} else {
			e.members = append(e.members, c)
		}
	}
	return e, e.installControlPlane(ctx)
}

func (e *env) installControlPlane(ctx context.Context) error {
	crds, err := framework.ReadCRDs(filepath.Join(e.root, "config", "crd", "bases"), filepath.Join(e.root, "config", "crd", "federated"))
	if err != nil {
		return err
	}
	logf("installing %d CRDs", len(crds))
	if err := framework.InstallCRDs(ctx, e.host.client, crds); err != nil {
		return err
	}
	if err := framework.EnsureNamespace(ctx, e.host.client, kubefedNS); err != nil {
		return err
	}
	// The KubeFedConfig exists before the controller-manager starts, so
	// it runs with the tuning under test from the first reconcile.
	if err := e.host.client.Create(ctx, e.kubefedConfig()); err != nil {
		return fmt.Errorf("create KubeFedConfig: %w", err)
	}
	if err := e.applyDefaultTypes(ctx); err != nil {
		return err
	}
	if e.cm, err = startControllerManager(ctx, e); err != nil {
		return err
	}
	for _, m := range e.members {
		logf("joining %s", m.name)
		if err := e.kubefedctl(ctx, "join", m.name, "--cluster-context", m.name, "--host-cluster-context", e.host.name); err != nil {
			return err
		}
	}
	if err := e.waitMembersReady(ctx); err != nil {
		return err
	}
	if err := e.waitTypesRunning(ctx, "namespaces", "deployments.apps", "configmaps"); err != nil {
		return err
	}
	if err := e.prepareNamespaces(ctx); err != nil {
		return err
	}
	if !e.o.finalizerPolicy {
		return nil
	}
	logf("installing the sync finalizer policy")
	return e.installFinalizerPolicy(ctx)
}

func (e *env) kubefedConfig() *corev1beta1.KubeFedConfig {
	gate := corev1beta1.Enabled
	if !e.o.statusCollection {
		gate = corev1beta1.Disabled
	}
	var durations *corev1beta1.DurationConfig
	if e.o.unavailableDelay > 0 {
		durations = &corev1beta1.DurationConfig{UnavailableDelay: &metav1.Duration{Duration: e.o.unavailableDelay}}
	}
	return &corev1beta1.KubeFedConfig{
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: kubefedNS},
		Spec: corev1beta1.KubeFedConfigSpec{
			ControllerDuration: durations,
			Scope:              corev1beta1.ClusterScoped,
			// Probes that outlast the isolation scenario's slow member, so
			// that it stays Ready while slow.
			ClusterHealthCheck: &corev1beta1.ClusterHealthCheckConfig{Timeout: &metav1.Duration{Duration: 10 * time.Second}},
			SyncController: &corev1beta1.SyncControllerConfig{
				MaxConcurrentReconciles: ptr.To(int64(e.o.syncWorkers)),
			},
			FeatureGates: []corev1beta1.FeatureGatesConfig{
				{Name: corev1beta1.RawResourceStatusCollection, Configuration: gate},
			},
		},
	}
}

// applyDefaultTypes creates the FederatedTypeConfigs of config/default-types.
func (e *env) applyDefaultTypes(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(e.root, "config", "default-types", "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	return e.createAll(ctx, files...)
}

// createAll creates the objects of files in the host; those that exist
// are left as they are.
func (e *env) createAll(ctx context.Context, files ...string) error {
	objs, err := framework.ReadObjects(files...)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := e.host.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// installFinalizerPolicy installs config/admission/sync-finalizer.yaml, as
// the chart does, and waits until the API server gives a new
// FederatedConfigMap the sync controller's finalizer (it loads policies
// and their params asynchronously).
func (e *env) installFinalizerPolicy(ctx context.Context) error {
	if err := e.createAll(ctx, filepath.Join(e.root, "config", "admission", "sync-finalizer.yaml")); err != nil {
		return err
	}
	probe := configMaps
	return waitFor(ctx, "the sync finalizer policy in effect", time.Minute, func() (bool, error) {
		obj := federatedObject(probe, "finalizer-policy-probe", 0, nil)
		created, err := e.host.dyn.Resource(probe.fedGVR).Namespace(benchNS).
			Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return slices.Contains(created.GetFinalizers(), corev1beta1.SyncControllerFinalizer), nil
	})
}

func (e *env) kubefedctl(ctx context.Context, args ...string) error {
	full := append([]string{"--kubeconfig", e.fed.KubeconfigPath}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(e.root, "bin", "kubefedctl"), full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubefedctl %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// waitFor polls a setup condition; the scenarios themselves never poll.
func waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (e *env) waitMembersReady(ctx context.Context) error {
	return waitFor(ctx, "every member Ready", 2*time.Minute, func() (bool, error) {
		for _, m := range e.members {
			if ready, err := e.memberReady(ctx, m.name); err != nil || !ready {
				return false, fmt.Errorf("%s not Ready: %v", m.name, err)
			}
		}
		return true, nil
	})
}

func (e *env) waitTypesRunning(ctx context.Context, names ...string) error {
	return waitFor(ctx, "federated types running", 2*time.Minute, func() (bool, error) {
		for _, name := range names {
			ftc := &corev1beta1.FederatedTypeConfig{}
			if err := e.host.client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, ftc); err != nil {
				return false, err
			}
			if ftc.Status.PropagationController != corev1beta1.ControllerStatusRunning {
				return false, fmt.Errorf("FederatedTypeConfig %s: propagation %q", name, ftc.Status.PropagationController)
			}
		}
		return true, nil
	})
}

// prepareNamespaces federates the bench namespace to every member and
// creates the physical-limit namespace directly in each.
func (e *env) prepareNamespaces(ctx context.Context) error {
	if err := framework.EnsureNamespace(ctx, e.host.client, benchNS); err != nil {
		return err
	}
	fns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedNamespace",
		"metadata":   map[string]any{"name": benchNS, "namespace": benchNS},
		"spec":       map[string]any{"placement": map[string]any{"clusterSelector": map[string]any{}}},
	}}
	if err := e.host.client.Create(ctx, fns); err != nil {
		return fmt.Errorf("create FederatedNamespace: %w", err)
	}
	for _, m := range e.members {
		if err := framework.EnsureNamespace(ctx, m.client, directNS); err != nil {
			return err
		}
	}
	return waitFor(ctx, "the bench namespace in every member", 2*time.Minute, func() (bool, error) {
		for _, m := range e.members {
			if _, err := m.kube.CoreV1().Namespaces().Get(ctx, benchNS, metav1.GetOptions{}); err != nil {
				return false, fmt.Errorf("%s: %w", m.name, err)
			}
		}
		return true, nil
	})
}

// memberByName returns the member of that name, or nil.
func (e *env) memberByName(name string) *cluster {
	for _, m := range e.members {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (e *env) memberNames() []string {
	names := make([]string, len(e.members))
	for i, m := range e.members {
		names[i] = m.name
	}
	return names
}

func (e *env) tearDown() {
	for _, cm := range e.replicas {
		_ = cm.Stop()
	}
	if e.cm != nil {
		_ = e.cm.Stop()
	}
	if e.fed != nil {
		if err := e.fed.Stop(); err != nil {
			logf("stopping clusters: %v", err)
		}
	}
	switch {
	case e.o.keep:
		logf("work directory kept: %s", e.workDir)
	case e.ownsWorkDir:
		_ = os.RemoveAll(e.workDir)
	}
}
