package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestProbeHealthFallsBackToHealthz(t *testing.T) {
	tests := []struct {
		name        string
		readyz      int // 0 means "ok"
		healthz     int
		wantHealth  Health
		wantMessage string
		wantPaths   string
	}{
		{name: "readyz ok", wantHealth: HealthReady, wantPaths: "/readyz"},
		{name: "readyz missing", readyz: 404, wantHealth: HealthReady, wantPaths: "/readyz /healthz"},
		{name: "readyz forbidden", readyz: 403, wantHealth: HealthReady, wantPaths: "/readyz /healthz"},
		{name: "both forbidden", readyz: 403, healthz: 403, wantHealth: HealthNotReady,
			wantMessage: "/healthz responded with 403 Forbidden", wantPaths: "/readyz /healthz"},
		{name: "401 is final", readyz: 401, wantHealth: HealthNotReady,
			wantMessage: "/readyz responded with 401 Unauthorized (check the token in the cluster's Secret)", wantPaths: "/readyz"},
		{name: "500 is final", readyz: 500, wantHealth: HealthNotReady,
			wantMessage: "/readyz responded with 500 Internal Server Error", wantPaths: "/readyz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				paths = append(paths, r.URL.Path)
				code := map[string]int{"/readyz": tc.readyz, "/healthz": tc.healthz}[r.URL.Path]
				if code != 0 {
					w.WriteHeader(code)
					return
				}
				_, _ = w.Write([]byte("ok"))
			}))
			defer srv.Close()
			got := probeHealth(context.Background(), srv.Client(), srv.URL, time.Second)
			if got.health != tc.wantHealth || got.message != tc.wantMessage {
				t.Errorf("got %+v, want %v %q", got, tc.wantHealth, tc.wantMessage)
			}
			if strings.Join(paths, " ") != tc.wantPaths {
				t.Errorf("asked %v, want %s", paths, tc.wantPaths)
			}
		})
	}
}

func TestProbeHealthKeepsAPIPathPrefix(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/k8s/clusters/c1/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	if got := probeHealth(context.Background(), srv.Client(), srv.URL+"/k8s/clusters/c1", time.Second); got.health != HealthReady {
		t.Errorf("got %+v", got)
	}
}

// discoveryServer serves legacy discovery for v1 and apps/v1 and fails for
// metrics.k8s.io/v1beta1, like an aggregated API whose backend is down.
func discoveryServer(t *testing.T) *httptest.Server {
	t.Helper()
	write := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/version":
			write(w, map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2"})
		case "/api":
			write(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		case "/apis":
			write(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{
				{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}},
				{Name: "metrics.k8s.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}},
			}})
		case "/api/v1":
			write(w, metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}, {Name: "pods/log", Kind: "Pod"}}})
		case "/apis/apps/v1":
			write(w, metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}})
		default:
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCollectSummary(t *testing.T) {
	disc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: discoveryServer(t).URL})
	readyNode := node("n1", corev1.ConditionTrue, zoneRegion("z1", "r1"), resources("cpu", "4"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container("cpu", "1")}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	previous := []fedv1b1.APIEnablement{{GroupVersion: "metrics.k8s.io/v1beta1", Resources: []fedv1b1.APIResourceName{{Name: "pods", Kind: "PodMetrics"}}}}

	t.Run("everything", func(t *testing.T) {
		kube := fake.NewClientset(&readyNode, pod)
		s, err := collectSummary(context.Background(), kube, disc, previous)
		// Only the aggregated API failed, and it is reported.
		if err == nil || !strings.Contains(err.Error(), "metrics.k8s.io/v1beta1") {
			t.Errorf("err = %v, want the failed group reported", err)
		}
		if s.kubernetesVersion != "v1.37.2" {
			t.Errorf("version = %q", s.kubernetesVersion)
		}
		if s.nodes == nil || s.nodes.count != (fedv1b1.NodeSummary{TotalNum: 1, ReadyNum: 1}) {
			t.Errorf("nodes = %+v", s.nodes)
		}
		if !s.hasAllocated || s.allocated.Cpu().String() != "1" {
			t.Errorf("allocated = %v (has %v)", s.allocated, s.hasAllocated)
		}
		want := "[{apps/v1 [{deployments Deployment}]} {metrics.k8s.io/v1beta1 [{pods PodMetrics}]} {v1 [{pods Pod}]}]"
		if got := fmt.Sprint(s.apiEnablements); !s.hasAPIEnablements || got != want {
			t.Errorf("apiEnablements = %s, want %s", got, want)
		}
		for _, a := range kube.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
				// The apiserver, unlike the fake, filters: only bound, live pods travel.
				if f := a.(k8stesting.ListAction).GetListRestrictions().Fields.String(); f != fields.ParseSelectorOrDie(scheduledPodsSelector).String() {
					t.Errorf("pods listed with field selector %q, want %q", f, scheduledPodsSelector)
				}
			}
		}
	})

	t.Run("pods forbidden", func(t *testing.T) {
		kube := fake.NewClientset(&readyNode, pod)
		kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("namespaced join"))
		})
		s, err := collectSummary(context.Background(), kube, disc, nil)
		if err == nil || !strings.Contains(err.Error(), "listing pods") {
			t.Errorf("err = %v", err)
		}
		if s.hasAllocated {
			t.Error("allocated reported though pods could not be listed")
		}
		if s.nodes == nil || s.kubernetesVersion == "" {
			t.Error("a forbidden pod list cost the other fields")
		}
	})
}
