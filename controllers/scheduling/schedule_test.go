package scheduling

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/test/framework"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	spec := schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: "FederatedDeployment", TotalReplicas: 10}
	rebalance := spec
	rebalance.Rebalance = true
	limited, four, five := int64(2), int64(4), int64(5)
	const toleration = time.Minute
	tests := []struct {
		name       string
		spec       schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
		members    []member
		current    map[string]int64
		want       map[string]int64
		failedOver []string
		unplaced   int64
		waiting    map[string]int64
		recheckAt  time.Time
	}{
		{
			name:    "ready clusters share",
			spec:    spec,
			members: []member{{name: "c1", ready: true}, {name: "c2", ready: true}},
			want:    map[string]int64{"c1": 5, "c2": 5},
		},
		{
			name:    "a cluster not ready within the toleration keeps what it has and gets no more",
			spec:    rebalance,
			members: []member{{name: "c1", notReadySince: t0.Add(-30 * time.Second)}, {name: "c2", ready: true}},
			current: map[string]int64{"c1": 3, "c2": 5},
			// Rebalance would give c1 5; it is held at 3.
			want:      map[string]int64{"c1": 3, "c2": 7},
			recheckAt: t0.Add(30 * time.Second),
		},
		{
			name:       "past the toleration a cluster's replicas go to the others",
			spec:       spec,
			members:    []member{{name: "c1", notReadySince: t0.Add(-toleration)}, {name: "c2", ready: true}},
			current:    map[string]int64{"c1": 5, "c2": 5},
			want:       map[string]int64{"c2": 10},
			failedOver: []string{"c1"},
		},
		{
			name: "a cluster recorded as failed over stays so while not ready, whatever the clock says",
			spec: spec,
			// A restart of the controller restarts the clock.
			members:    []member{{name: "c1", notReadySince: t0, failedOver: true}, {name: "c2", ready: true}},
			current:    map[string]int64{"c1": 5, "c2": 10},
			want:       map[string]int64{"c2": 10},
			failedOver: []string{"c1"},
		},
		{
			// c1 is first in the tie-break of ns/web: keeping the
			// existing replicas without the restore would leave c1 its 10
			// and c2 none.
			name:    "a failed-over cluster that is ready again gets its replicas back",
			spec:    spec,
			members: []member{{name: "c1", ready: true}, {name: "c2", ready: true, failedOver: true}},
			current: map[string]int64{"c1": 10, "c2": 5},
			want:    map[string]int64{"c1": 5, "c2": 5},
		},
		{
			name:    "capacity overflows to the other cluster",
			spec:    spec,
			members: []member{{name: "c1", ready: true, capacity: &limited}, {name: "c2", ready: true}},
			current: map[string]int64{"c1": 5, "c2": 5},
			want:    map[string]int64{"c1": 2, "c2": 8},
		},
		{
			// KubeFed's overflow: c2's maximum leaves 3 replicas
			// nowhere to go but c1, whose capacity kept them out.
			name: "replicas that fit nowhere else wait where capacity kept them out",
			spec: schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: "FederatedDeployment", TotalReplicas: 10,
				Clusters: map[string]schedulingv1alpha1.ClusterPreferences{"*": {Weight: 1}, "c2": {Weight: 1, MaxReplicas: &five}}},
			members: []member{{name: "c1", ready: true, capacity: &limited}, {name: "c2", ready: true}},
			current: map[string]int64{"c1": 5, "c2": 5},
			want:    map[string]int64{"c1": 5, "c2": 5},
			waiting: map[string]int64{"c1": 3},
		},
		{
			// Only what capacity kept out waits: c1's maximum of 4 still
			// leaves 1 replica unplaced.
			name: "beyond a maximum nothing waits",
			spec: schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: "FederatedDeployment", TotalReplicas: 10,
				Clusters: map[string]schedulingv1alpha1.ClusterPreferences{"c1": {Weight: 1, MaxReplicas: &four}, "c2": {Weight: 1, MaxReplicas: &five}}},
			members:  []member{{name: "c1", ready: true, capacity: &limited}, {name: "c2", ready: true}},
			current:  map[string]int64{"c1": 5, "c2": 5},
			want:     map[string]int64{"c1": 4, "c2": 5},
			waiting:  map[string]int64{"c1": 2},
			unplaced: 1,
		},
		{
			name:       "every cluster failed",
			spec:       spec,
			members:    []member{{name: "c1", notReadySince: t0.Add(-time.Hour)}},
			current:    map[string]int64{"c1": 10},
			want:       map[string]int64{},
			failedOver: []string{"c1"},
			unplaced:   10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(&tt.spec, "ns/web", tt.members, tt.current, t0, toleration)
			if !maps.Equal(d.replicas, tt.want) {
				t.Errorf("replicas = %v, want %v", d.replicas, tt.want)
			}
			failed := map[string]bool{}
			for _, name := range tt.failedOver {
				failed[name] = true
			}
			if !maps.Equal(d.failedOver, failed) {
				t.Errorf("failed over = %v, want %v", d.failedOver, failed)
			}
			if !maps.Equal(d.waiting, tt.waiting) {
				t.Errorf("waiting = %v, want %v", d.waiting, tt.waiting)
			}
			if d.unplaced != tt.unplaced || !d.recheckAt.Equal(tt.recheckAt) {
				t.Errorf("unplaced %d recheck %v, want %d %v", d.unplaced, d.recheckAt, tt.unplaced, tt.recheckAt)
			}
		})
	}
}

func TestDecideModes(t *testing.T) {
	members := []member{{name: "c1", ready: true}, {name: "c2", ready: true}, {name: "c3", ready: true}}
	current := map[string]int64{"c1": 8, "c2": 1}
	tests := []struct {
		name string
		spec schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
		want map[string]int64
	}{
		{"keep-existing", schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 9}, map[string]int64{"c1": 8, "c2": 1, "c3": 0}},
		{"avoid-disruption wins over rebalance", schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10, Rebalance: true, AvoidDisruption: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(&tt.spec, "ns/web", members, current, t0, time.Minute)
			if tt.want != nil && !maps.Equal(d.replicas, tt.want) {
				t.Errorf("replicas = %v, want %v", d.replicas, tt.want)
			}
			if !tt.spec.AvoidDisruption {
				return
			}
			// c3 joins with its preferred share, paid for by c1 alone,
			// while rebalance would also have moved replicas to c2.
			rebalanced := decide(&schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10, Rebalance: true}, "ns/web", members, current, t0, time.Minute)
			if d.replicas["c2"] != 1 || d.replicas["c3"] != rebalanced.replicas["c3"] || rebalanced.replicas["c2"] == 1 {
				t.Errorf("avoid-disruption: %v, rebalance %v; c3 should get its share from c1 alone", d.replicas, rebalanced.replicas)
			}
		})
	}
}

func TestEstimateCapacity(t *testing.T) {
	const threshold, holdFor = time.Minute, 5 * time.Minute
	old := t0.Add(-2 * time.Minute)
	tests := []struct {
		name      string
		in        capacityInput
		wantLimit int64 // -1 for no hold
		recheckAt time.Time
	}{
		{
			name:      "no unschedulable pods",
			in:        capacityInput{current: 5, changedAt: old},
			wantLimit: -1,
		},
		{
			name:      "pods unschedulable past the threshold reduce capacity",
			in:        capacityInput{current: 5, changedAt: old, unschedulableSince: []time.Time{old, old.Add(time.Second)}},
			wantLimit: 3,
			recheckAt: t0.Add(holdFor),
		},
		{
			name:      "pods unschedulable for less than the threshold are looked at again when they cross it",
			in:        capacityInput{current: 5, changedAt: old, unschedulableSince: []time.Time{t0.Add(-10 * time.Second)}},
			wantLimit: -1,
			recheckAt: t0.Add(50 * time.Second),
		},
		{
			name:      "pods do not count until the member settled after a change",
			in:        capacityInput{current: 5, changedAt: t0.Add(-20 * time.Second), unschedulableSince: []time.Time{old}},
			wantLimit: -1,
			recheckAt: t0.Add(40 * time.Second),
		},
		{
			name:      "a hold outlives the pods",
			in:        capacityInput{current: 3, changedAt: old, hold: &capacityHold{limit: 3, until: t0.Add(time.Minute)}},
			wantLimit: 3,
			recheckAt: t0.Add(time.Minute),
		},
		{
			name:      "an expired hold is dropped",
			in:        capacityInput{current: 3, changedAt: old, hold: &capacityHold{limit: 3, until: t0}},
			wantLimit: -1,
		},
		{
			name:      "a new estimate never exceeds a held one",
			in:        capacityInput{current: 9, changedAt: old, unschedulableSince: []time.Time{old}, hold: &capacityHold{limit: 3, until: t0.Add(time.Minute)}},
			wantLimit: 3,
			recheckAt: t0.Add(holdFor),
		},
		{
			name:      "more unschedulable pods than replicas leave none",
			in:        capacityInput{current: 1, changedAt: old, unschedulableSince: []time.Time{old, old, old}},
			wantLimit: 0,
			recheckAt: t0.Add(holdFor),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hold, recheck := estimateCapacity(tt.in, t0, threshold, holdFor)
			limit := int64(-1)
			if hold != nil {
				limit = hold.limit
			}
			if limit != tt.wantLimit || !recheck.Equal(tt.recheckAt) {
				t.Errorf("limit %d recheck %v, want %d %v", limit, recheck, tt.wantLimit, tt.recheckAt)
			}
		})
	}
}

// staticReadiness is member readiness that never changes.
type staticReadiness map[string]bool

func (r staticReadiness) IsReady(name string) bool                     { return r[name] }
func (r staticReadiness) AddListener(cluster.ReadinessListener) func() { return func() {} }

// A cluster removed (unjoin tells the listeners it is not ready) and joined
// again under the same name an hour later is not ready since it was
// created, not since the old one went: it is not failed over before its
// first probe.
func TestARejoinedClusterIsNotReadySinceItWasCreated(t *testing.T) {
	r := &Reconciler{Readiness: staticReadiness{}, notReadySince: map[string]time.Time{"m1": t0}}
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	now := t0.Add(time.Hour)
	rejoined := corev1beta1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}}
	members := r.members(rsp, federatedObject{}, nil, []corev1beta1.KubeFedCluster{rejoined}, now)
	if len(members) != 1 || !members[0].notReadySince.Equal(now.Add(-time.Second)) {
		t.Fatalf("members = %+v, want m1 not ready since it was created", members)
	}
	d := decide(&schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 4}, "ns/web", members, map[string]int64{"m1": 4}, now, time.Minute)
	if d.failedOver["m1"] {
		t.Error("the rejoined cluster was failed over at once")
	}

	// A cluster not ready since before now, but after it was created,
	// keeps its time.
	r.notReadySince["m1"] = now.Add(-time.Millisecond)
	members = r.members(rsp, federatedObject{}, nil, []corev1beta1.KubeFedCluster{rejoined}, now)
	if !members[0].notReadySince.Equal(now.Add(-time.Millisecond)) {
		t.Errorf("notReadySince = %v, want the time seen", members[0].notReadySince)
	}
}

// Replicas that fit nowhere because of the preference itself are reported
// with what in spec.clusters is why.
func TestInsufficientCapacityNamesThePreferencesProblem(t *testing.T) {
	members := []member{{name: "us-east", ready: true}, {name: "us-west", ready: true}}
	for _, tc := range []struct {
		name     string
		clusters map[string]schedulingv1alpha1.ClusterPreferences
		want     string
	}{
		{"a typo", map[string]schedulingv1alpha1.ClusterPreferences{"us-east1": {Weight: 1}}, "spec.clusters names us-east1, which is no candidate cluster"},
		{"weights of 0", map[string]schedulingv1alpha1.ClusterPreferences{"*": {Weight: 0, MinReplicas: 1}}, "no candidate cluster has a weight above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10, Clusters: tc.clusters}
			d := decide(spec, "ns/web", members, nil, t0, time.Minute)
			reason, message := scheduledMessage(spec, d)
			if reason != ReasonInsufficientCapacity || !strings.Contains(message, tc.want) {
				t.Errorf("%s: %q, want one saying %q", reason, message, tc.want)
			}
		})
	}
	// Replicas only the estimated capacity keeps out are placed, and said
	// to wait.
	limited, five := int64(2), int64(5)
	spec := &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10,
		Clusters: map[string]schedulingv1alpha1.ClusterPreferences{"*": {Weight: 1}, "us-west": {Weight: 1, MaxReplicas: &five}}}
	full := []member{{name: "us-east", ready: true, capacity: &limited}, {name: "us-west", ready: true}}
	reason, message := scheduledMessage(spec, decide(spec, "ns/web", full, nil, t0, time.Minute))
	if want := "10 replicas over 2 clusters; 3 of them fit in no cluster's estimated capacity and wait where they were planned: us-east 3"; reason != ReasonInsufficientCapacity || message != want {
		t.Errorf("%s: %q, want %s: %q", reason, message, ReasonInsufficientCapacity, want)
	}
	// A preference that places every replica says nothing of the kind.
	spec = &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10}
	if _, message := scheduledMessage(spec, decide(spec, "ns/web", members, nil, t0, time.Minute)); strings.Contains(message, "spec.clusters") {
		t.Errorf("message %q", message)
	}
}

// A read of the namespaces type that fails is an error to retry, not a
// crash.
func TestNamespacePlacementReadErrorIsAnError(t *testing.T) {
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("the host is away")
		},
	}).Build()
	r := &Reconciler{Client: failing, Namespace: "kube-federation-system"}
	p, stop, err := r.namespacePlacement(context.Background(), "demo", t0)
	if err == nil || p != nil || stop != nil {
		t.Fatalf("namespacePlacement = %v, %v, %v; want an error", p, stop, err)
	}
}

// A failed-over cluster keeps the override of what it ran; one that never
// had one gets 0, so that its return does not create the template's
// replicas there before the next schedule.
func TestScheduleOfAFailedOverCluster(t *testing.T) {
	members := []member{{name: "c1", notReadySince: t0}, {name: "c2", ready: true}}
	d := decision{replicas: map[string]int64{"c2": 10}, failedOver: map[string]bool{"c1": true}}
	for _, tc := range []struct {
		name    string
		current map[string]int64
		want    map[string]int64
	}{
		{"with an override", map[string]int64{"c1": 5, "c2": 5}, map[string]int64{"c2": 10}},
		{"without one", map[string]int64{"c2": 5}, map[string]int64{"c1": 0, "c2": 10}},
		{"without any", nil, map[string]int64{"c1": 0, "c2": 10}},
	} {
		s := scheduleOf(members, d, tc.current)
		if !maps.Equal(s.replicas, tc.want) || !slices.Equal(s.placement, []string{"c1", "c2"}) {
			t.Errorf("%s: placement %v replicas %v, want [c1 c2] %v", tc.name, s.placement, s.replicas, tc.want)
		}
	}
	if d.replicas["c1"] != 0 || len(d.replicas) != 1 {
		t.Errorf("the decision was changed: %v", d.replicas)
	}
}

// A preference that cannot be scheduled keeps the record of its clusters
// failed over, and no other; a restore keeps it until the object is
// written.
func TestStatusKeepsTheFailedOverClusters(t *testing.T) {
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Status: schedulingv1alpha1.ReplicaSchedulingPreferenceStatus{Clusters: []schedulingv1alpha1.ClusterReplicas{
			{Name: "c1", FailedOver: true}, {Name: "c2", Replicas: 10},
		}},
	}
	restored := outcome{reason: ReasonScheduled, clusters: []schedulingv1alpha1.ClusterReplicas{{Name: "c1", Replicas: 5}, {Name: "c2", Replicas: 5}}}
	names := restoredClusters(rsp.Status.Clusters, restored)
	if !maps.Equal(names, map[string]bool{"c1": true}) {
		t.Fatalf("restored %v, want c1", names)
	}
	interim := restored.failedOverStill(names)
	if !interim.clusters[0].FailedOver || restored.clusters[0].FailedOver || interim.clusters[0].Replicas != 5 {
		t.Errorf("interim %+v, outcome %+v", interim.clusters, restored.clusters)
	}
	if got := restoredClusters(rsp.Status.Clusters, stopped(ReasonFederatedTypeNotFound, "", t0, 0).outcome); got != nil {
		t.Errorf("a stopped outcome restores %v", got)
	}

	c := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithObjects(rsp).
		WithStatusSubresource(&schedulingv1alpha1.ReplicaSchedulingPreference{}).Build()
	r := &Reconciler{Client: c}
	if err := r.writeStatus(context.Background(), rsp, stopped(ReasonFederatedTypeNotFound, "gone a moment", t0, 0).outcome); err != nil {
		t.Fatal(err)
	}
	got := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(rsp), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Clusters) != 1 || got.Status.Clusters[0].Name != "c1" || !got.Status.Clusters[0].FailedOver {
		t.Errorf("status clusters %+v, want c1 failed over only", got.Status.Clusters)
	}
}
