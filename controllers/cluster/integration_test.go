//go:build integration

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/go-logr/logr/testr"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// period is the probe period of the test; short, so outages show quickly.
const period = time.Second

// TestIntegration runs the controller in a controller-runtime manager
// against a real host and member cluster.
func TestIntegration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	fed, err := localcluster.Start(ctx, localcluster.Options{Clusters: []string{"host", "member1"}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting clusters: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping clusters: %v", err)
		}
	})
	host, member := fed.Cluster("host"), fed.Cluster("member1")
	hostKube := kubernetes.NewForConfigOrDie(host.RESTConfig())
	memberKube := kubernetes.NewForConfigOrDie(member.RESTConfig())

	installCRDs(ctx, t, host)
	if _, err := hostKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := fedv1b1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{ns: {}}}
	mgr, err := ctrl.NewManager(host.RESTConfig(), ctrl.Options{
		Scheme:                 scheme,
		Logger:                 testr.New(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&fedv1b1.KubeFedCluster{}: inNamespace,
			&corev1.Secret{}:          inNamespace,
		}},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Options: Options{
		Namespace:        ns,
		Period:           period,
		Timeout:          time.Second,
		FailureThreshold: 2,
		SuccessThreshold: 1,
		SummaryPeriod:    period,
	}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stopMgr()
		if err := <-mgrDone; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	c := mgr.GetClient()
	join := func(name, token string, withSecret bool) {
		t.Helper()
		if withSecret {
			createSecret(ctx, t, c, name+"-secret", token, member.CAData)
		}
		kfc := &fedv1b1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: fedv1b1.KubeFedClusterSpec{
				// host:port, as many KubeFed users wrote it.
				APIEndpoint: strings.TrimPrefix(member.Server, "https://"),
				SecretRef:   fedv1b1.LocalSecretReference{Name: name + "-secret"},
			},
		}
		if err := c.Create(ctx, kfc); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *fedv1b1.KubeFedCluster {
		t.Helper()
		var kfc fedv1b1.KubeFedCluster
		if err := mgr.GetAPIReader().Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &kfc); err != nil {
			t.Fatal(err)
		}
		return &kfc
	}
	condition := func(name string, typ fedv1b1.ClusterConditionType) (string, *fedv1b1.ClusterCondition) {
		cond := findCondition(get(name).Status.Conditions, typ)
		if cond == nil {
			return "", nil
		}
		return string(cond.Status) + "/" + deref(cond.Reason), cond
	}
	waitFor := func(what string, timeout time.Duration, check func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return check(), nil })
		if err != nil {
			t.Fatalf("waiting %s for %s: %v", timeout, what, err)
		}
		return time.Since(start)
	}

	t.Run("member becomes Ready with its version and APIs", func(t *testing.T) {
		join("member1", member.Token, true)
		waitFor("member1 Ready", 30*time.Second, func() bool {
			s, _ := condition("member1", fedv1b1.ClusterReady)
			return s == "True/ClusterReady"
		})
		waitFor("kubernetesVersion", 10*time.Second, func() bool { return get("member1").Status.KubernetesVersion == "v1.37.2" })
		st := get("member1").Status
		if s, _ := condition("member1", fedv1b1.ClusterOffline); s != "False/ClusterReachable" {
			t.Errorf("Offline = %s", s)
		}
		if !servesResource(st.APIEnablements, "apps/v1", "deployments") || !servesResource(st.APIEnablements, "v1", "configmaps") {
			t.Errorf("apiEnablements lack apps/v1 deployments or v1 configmaps: %+v", st.APIEnablements)
		}
		if !r.IsReady("member1") {
			t.Error("IsReady(member1) = false")
		}
		if got := clusterStates(t)["member1"]; got != "ready" {
			t.Errorf("kubefedcluster_total state = %q", got)
		}
	})

	t.Run("nodes and pods are summarized", func(t *testing.T) {
		for i, zone := range []string{"eu-1a", "eu-1b"} {
			createReadyNode(ctx, t, memberKube, fmt.Sprintf("node-%d", i), zone, "eu-1")
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName: "node-0",
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				}}},
			},
		}
		if _, err := memberKube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor("nodeSummary {2,2}", 15*time.Second, func() bool {
			ns := get("member1").Status.NodeSummary
			return ns != nil && ns.TotalNum == 2 && ns.ReadyNum == 2
		})
		waitFor("allocated 250m", 15*time.Second, func() bool {
			rs := get("member1").Status.ResourceSummary
			return rs != nil && rs.Allocated.Cpu().MilliValue() == 250
		})
		st := get("member1").Status
		if fmt.Sprint(st.Zones) != "[eu-1a eu-1b]" || ptr.Deref(st.Region, "") != "eu-1" {
			t.Errorf("zones %v region %v", st.Zones, ptr.Deref(st.Region, "<nil>"))
		}
		if cpu := st.ResourceSummary.Allocatable.Cpu(); cpu.Value() != 8 {
			t.Errorf("allocatable cpu = %s, want 8", cpu)
		}
		if mem := st.ResourceSummary.Allocated.Memory(); mem.Value() != 128<<20 {
			t.Errorf("allocated memory = %s, want 128Mi", mem)
		}
	})

	t.Run("a stopped member goes offline and comes back", func(t *testing.T) {
		_, before := condition("member1", fedv1b1.ClusterReady)
		readySince := before.LastTransitionTime.Time
		stopStart := time.Now()
		if err := member.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		t.Logf("stopping member1's apiserver took %s", time.Since(stopStart))
		took := waitFor("member1 Offline", 3*period+5*time.Second, func() bool {
			s, _ := condition("member1", fedv1b1.ClusterOffline)
			return s == "True/ClusterNotReachable"
		})
		t.Logf("member1 reported offline %s after its apiserver stopped", took)
		// 2 failures at most one period apart after the first, plus the
		// status write: well within 3 periods.
		if took > 3*period {
			t.Errorf("offline after %s, want within 3 periods (%s)", took, 3*period)
		}
		if s, _ := condition("member1", fedv1b1.ClusterReady); s != "False/ClusterNotReady" {
			t.Errorf("Ready = %s", s)
		}
		if r.IsReady("member1") {
			t.Error("IsReady(member1) while offline")
		}
		if got := clusterStates(t)["member1"]; got != "offline" {
			t.Errorf("kubefedcluster_total state = %q", got)
		}

		if err := member.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor("member1 Ready again", 30*time.Second, func() bool {
			s, _ := condition("member1", fedv1b1.ClusterReady)
			return s == "True/ClusterReady"
		})
		_, after := condition("member1", fedv1b1.ClusterReady)
		if !after.LastTransitionTime.After(readySince) {
			t.Errorf("Ready lastTransitionTime %v did not move past %v", after.LastTransitionTime, readySince)
		}
		if s, _ := condition("member1", fedv1b1.ClusterOffline); s != "False/ClusterReachable" {
			t.Errorf("Offline = %s", s)
		}
	})

	t.Run("a wrong token is reachable but not ready, and fixing the Secret heals it", func(t *testing.T) {
		join("badtoken", "not-the-token", true)
		waitFor("badtoken not ready", 30*time.Second, func() bool {
			s, _ := condition("badtoken", fedv1b1.ClusterReady)
			return s == "False/ClusterNotReady"
		})
		if s, _ := condition("badtoken", fedv1b1.ClusterOffline); s != "False/ClusterReachable" {
			t.Errorf("Offline = %s", s)
		}
		_, ready := condition("badtoken", fedv1b1.ClusterReady)
		if msg := deref(ready.Message); !strings.Contains(msg, "401 Unauthorized") || strings.Contains(msg, "not-the-token") {
			t.Errorf("Ready message %q: want the 401 and never the token", msg)
		}
		waitForEvent(ctx, t, hostKube, "badtoken", EventRetrievingClusterHealthFailed, "401")

		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "badtoken-secret"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data["token"] = []byte(member.Token)
		if err := c.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
		waitFor("badtoken Ready after the Secret fix", 30*time.Second, func() bool {
			s, _ := condition("badtoken", fedv1b1.ClusterReady)
			return s == "True/ClusterReady"
		})
	})

	t.Run("a missing Secret is a malformed config until it is created", func(t *testing.T) {
		join("nosecret", "", false)
		waitFor("nosecret not ready", 30*time.Second, func() bool {
			s, _ := condition("nosecret", fedv1b1.ClusterReady)
			return s == "False/ClusterNotReady"
		})
		_, ready := condition("nosecret", fedv1b1.ClusterReady)
		if want := "malformed cluster config: Secret kube-federation-system/nosecret-secret referenced by KubeFedCluster nosecret does not exist"; deref(ready.Message) != want {
			t.Errorf("Ready message = %q, want %q", deref(ready.Message), want)
		}
		waitForEvent(ctx, t, hostKube, "nosecret", EventMalformedClusterConfig, "nosecret-secret")

		createSecret(ctx, t, c, "nosecret-secret", member.Token, member.CAData)
		waitFor("nosecret Ready once its Secret exists", 30*time.Second, func() bool {
			s, _ := condition("nosecret", fedv1b1.ClusterReady)
			return s == "True/ClusterReady"
		})
	})

	t.Run("a deleted cluster is forgotten", func(t *testing.T) {
		if err := c.Delete(ctx, get("nosecret")); err != nil {
			t.Fatal(err)
		}
		waitFor("nosecret forgotten", 10*time.Second, func() bool {
			_, hasClients := r.Registry.Get("nosecret")
			_, hasMetrics := clusterStates(t)["nosecret"]
			return !hasClients && !hasMetrics && !r.IsReady("nosecret")
		})
		if got := fmt.Sprint(r.ReadyClusters()); got != "[badtoken member1]" {
			t.Errorf("ReadyClusters() = %s", got)
		}
	})
}

func installCRDs(ctx context.Context, t *testing.T, host *localcluster.Cluster) {
	t.Helper()
	ext := apiextensionsclient.NewForConfigOrDie(host.RESTConfig())
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
}

func createSecret(ctx context.Context, t *testing.T, c client.Client, name, token string, ca []byte) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string][]byte{"token": []byte(token), "ca.crt": ca},
	}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// createReadyNode registers a Node as a kubelet would, with 4 CPUs.
func createReadyNode(ctx context.Context, t *testing.T, kube kubernetes.Interface, name, zone, region string) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: region},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForEvent waits for an event on the named KubeFedCluster with reason
// and a note containing substr, as `kubectl get events` shows it.
func waitForEvent(ctx context.Context, t *testing.T, kube kubernetes.Interface, name, reason, substr string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != "KubeFedCluster" || e.InvolvedObject.Name != name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, substr) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event mentioning %q on %s; events: %v", reason, substr, name, seen)
	}
}

func servesResource(apis []fedv1b1.APIEnablement, gv, resource string) bool {
	for _, a := range apis {
		if a.GroupVersion != gv {
			continue
		}
		for _, r := range a.Resources {
			if r.Name == resource {
				return true
			}
		}
	}
	return false
}
