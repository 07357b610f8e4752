package cluster

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func node(name string, ready corev1.ConditionStatus, labels map[string]string, allocatable corev1.ResourceList) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Allocatable: allocatable}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready},
		}
	}
	return n
}

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func zoneRegion(zone, region string) map[string]string {
	l := map[string]string{}
	if zone != "" {
		l[corev1.LabelTopologyZone] = zone
	}
	if region != "" {
		l[corev1.LabelTopologyRegion] = region
	}
	return l
}

func TestSummarizeNodes(t *testing.T) {
	tests := []struct {
		name            string
		nodes           []corev1.Node
		wantZones       []string
		wantRegion      *string
		wantCount       fedv1b1.NodeSummary
		wantAllocatable corev1.ResourceList
	}{
		{name: "no nodes"},
		{
			name: "one region, two zones, one node not ready",
			nodes: []corev1.Node{
				node("a", corev1.ConditionTrue, zoneRegion("eu-1b", "eu-1"), resources("cpu", "2", "memory", "4Gi", "pods", "110")),
				node("b", corev1.ConditionFalse, zoneRegion("eu-1a", "eu-1"), resources("cpu", "1500m", "memory", "2Gi", "pods", "110")),
				node("c", corev1.ConditionTrue, zoneRegion("eu-1a", "eu-1"), resources("cpu", "500m")),
			},
			wantZones:       []string{"eu-1a", "eu-1b"},
			wantRegion:      ptr.To("eu-1"),
			wantCount:       fedv1b1.NodeSummary{TotalNum: 3, ReadyNum: 2},
			wantAllocatable: resources("cpu", "4", "memory", "6Gi", "pods", "220"),
		},
		{
			name: "regions disagree: no region",
			nodes: []corev1.Node{
				node("a", corev1.ConditionTrue, zoneRegion("eu-1a", "eu-1"), nil),
				node("b", corev1.ConditionTrue, zoneRegion("us-1a", "us-1"), nil),
			},
			wantZones: []string{"eu-1a", "us-1a"},
			wantCount: fedv1b1.NodeSummary{TotalNum: 2, ReadyNum: 2},
		},
		{
			name: "unlabelled nodes do not veto the region",
			nodes: []corev1.Node{
				node("a", corev1.ConditionTrue, zoneRegion("eu-1a", "eu-1"), nil),
				node("b", corev1.ConditionTrue, nil, nil),
			},
			wantZones:  []string{"eu-1a"},
			wantRegion: ptr.To("eu-1"),
			wantCount:  fedv1b1.NodeSummary{TotalNum: 2, ReadyNum: 2},
		},
		{
			name: "beta labels of old members",
			nodes: []corev1.Node{
				node("a", "", map[string]string{corev1.LabelFailureDomainBetaZone: "z", corev1.LabelFailureDomainBetaRegion: "r"}, nil),
			},
			wantZones:  []string{"z"},
			wantRegion: ptr.To("r"),
			wantCount:  fedv1b1.NodeSummary{TotalNum: 1, ReadyNum: 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := summarizeNodes(tc.nodes)
			if fmt.Sprint(got.zones) != fmt.Sprint(tc.wantZones) {
				t.Errorf("zones = %v, want %v", got.zones, tc.wantZones)
			}
			if ptr.Deref(got.region, "<nil>") != ptr.Deref(tc.wantRegion, "<nil>") {
				t.Errorf("region = %v, want %v", ptr.Deref(got.region, "<nil>"), ptr.Deref(tc.wantRegion, "<nil>"))
			}
			if got.count != tc.wantCount {
				t.Errorf("count = %+v, want %+v", got.count, tc.wantCount)
			}
			if !apiequality.Semantic.DeepEqual(got.allocatable, tc.wantAllocatable) {
				t.Errorf("allocatable = %v, want %v", got.allocatable, tc.wantAllocatable)
			}
		})
	}
}

func container(kv ...string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: resources(kv...)}}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(kv ...string) corev1.Container {
		c := container(kv...)
		c.RestartPolicy = &always
		return c
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "containers add up", spec: corev1.PodSpec{Containers: []corev1.Container{container("cpu", "100m", "memory", "64Mi"), container("cpu", "200m")}},
			want: resources("cpu", "300m", "memory", "64Mi")},
		{name: "a big init container dominates", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("cpu", "1"), container("cpu", "500m", "memory", "1Gi")},
			Containers:     []corev1.Container{container("cpu", "300m", "memory", "64Mi")},
		}, want: resources("cpu", "1", "memory", "1Gi")},
		{name: "sidecars run beside everything", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("cpu", "100m"), container("cpu", "1")},
			Containers:     []corev1.Container{container("cpu", "300m")},
		}, want: resources("cpu", "1100m")},
		{name: "overhead is added", spec: corev1.PodSpec{
			Containers: []corev1.Container{container("cpu", "300m")},
			Overhead:   resources("cpu", "50m"),
		}, want: resources("cpu", "350m")},
		{name: "pod-level requests replace container sums", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: resources("cpu", "2")},
			Containers: []corev1.Container{container("cpu", "300m", "memory", "64Mi")},
		}, want: resources("cpu", "2", "memory", "64Mi")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := podRequests(&corev1.Pod{Spec: tc.spec})
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSumPodRequestsCountsScheduledLivePods(t *testing.T) {
	pod := func(nodeName string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{
			Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{container("cpu", "100m")}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	got := sumPodRequests([]corev1.Pod{
		pod("n1", corev1.PodRunning),
		pod("n1", corev1.PodPending),
		pod("", corev1.PodPending),
		pod("n2", corev1.PodSucceeded),
		pod("n2", corev1.PodFailed),
	})
	if want := resources("cpu", "200m"); !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAPIEnablements(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "configmaps", Kind: "ConfigMap"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "empty/v1"},
		nil,
	}
	previous := []fedv1b1.APIEnablement{
		{GroupVersion: "metrics.k8s.io/v1beta1", Resources: []fedv1b1.APIResourceName{{Name: "pods", Kind: "PodMetrics"}}},
		{GroupVersion: "gone.example.com/v1", Resources: []fedv1b1.APIResourceName{{Name: "things", Kind: "Thing"}}},
		{GroupVersion: "apps/v1", Resources: []fedv1b1.APIResourceName{{Name: "old", Kind: "Old"}}},
	}
	got := apiEnablements(lists, []string{"metrics.k8s.io/v1beta1"}, previous)
	want := []fedv1b1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []fedv1b1.APIResourceName{{Name: "deployments", Kind: "Deployment"}}},
		// Discovery of this group failed: the previous entry stands.
		{GroupVersion: "metrics.k8s.io/v1beta1", Resources: []fedv1b1.APIResourceName{{Name: "pods", Kind: "PodMetrics"}}},
		{GroupVersion: "v1", Resources: []fedv1b1.APIResourceName{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "pods", Kind: "Pod"}}},
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestSummaryApplyToKeepsWhatWasNotCollected(t *testing.T) {
	old := fedv1b1.KubeFedClusterStatus{
		KubernetesVersion: "v1.36.0",
		Zones:             []string{"old"},
		NodeSummary:       &fedv1b1.NodeSummary{TotalNum: 9, ReadyNum: 9},
		ResourceSummary:   &fedv1b1.ResourceSummary{Allocatable: resources("cpu", "9"), Allocated: resources("cpu", "1")},
		APIEnablements:    []fedv1b1.APIEnablement{{GroupVersion: "v1"}},
	}

	// Only nodes were collected: pods were forbidden, discovery and /version failed.
	st := old.DeepCopy()
	summary{nodes: &nodesSummary{zones: []string{"a"}, count: fedv1b1.NodeSummary{TotalNum: 2, ReadyNum: 1}, allocatable: resources("cpu", "4")}}.applyTo(st)
	want := fedv1b1.KubeFedClusterStatus{
		KubernetesVersion: "v1.36.0",
		Zones:             []string{"a"},
		NodeSummary:       &fedv1b1.NodeSummary{TotalNum: 2, ReadyNum: 1},
		ResourceSummary:   &fedv1b1.ResourceSummary{Allocatable: resources("cpu", "4"), Allocated: resources("cpu", "1")},
		APIEnablements:    []fedv1b1.APIEnablement{{GroupVersion: "v1"}},
	}
	if !apiequality.Semantic.DeepEqual(*st, want) {
		t.Errorf("got %+v\nwant %+v", *st, want)
	}
	if old.ResourceSummary.Allocatable.Cpu().String() != "9" {
		t.Error("applyTo modified the status it copied from")
	}

	// Everything collected.
	st = old.DeepCopy()
	summary{
		kubernetesVersion: "v1.37.2",
		nodes:             &nodesSummary{count: fedv1b1.NodeSummary{TotalNum: 1, ReadyNum: 1}},
		allocated:         resources("cpu", "2"), hasAllocated: true,
		apiEnablements: nil, hasAPIEnablements: true,
	}.applyTo(st)
	if st.KubernetesVersion != "v1.37.2" || st.Zones != nil || st.ResourceSummary.Allocatable != nil ||
		st.ResourceSummary.Allocated.Cpu().String() != "2" || st.APIEnablements != nil {
		t.Errorf("got %+v", *st)
	}
}
