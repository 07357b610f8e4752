//go:build integration

package sync_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestEngineScaleOut runs two replicas with --scale-out in this process,
// under the race detector: each serves one member, the status of every
// object adds up both replicas' entries, a replica that stops hands its
// member over at once, and deletion coordinates both.
func TestEngineScaleOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx)
	host := fw.Host.Client
	names := []string{fw.Members[0].Name, fw.Members[1].Name}
	ids := splittingReplicas(names, "replica-", 2)
	stops := map[string]func(){}
	for _, id := range ids {
		stops[id] = runControllerManager(t, ctx, fw, func(o *controllermanager.Options) { o.ScaleOut, o.ReplicaID = true, id })
	}
	fences := func() map[string]string {
		f, _ := sharding.FenceHolders(ctx, host, corev1beta1.DefaultKubeFedNamespace)
		return f
	}
	assigned := sharding.Assign(names, ids)
	both := joinMembers(t, ctx, fw)
	waitFor(t, ctx, "each member fenced by its replica", time.Minute, func() bool {
		f := fences()
		return f[names[0]] == assigned[names[0]] && f[names[1]] == assigned[names[1]]
	})

	const n = 3 * workers
	want := "True| " + strings.Join(both, " ")
	allPropagated := func(what string, from, to int) {
		t.Helper()
		waitFor(t, ctx, what, 2*time.Minute, func() bool {
			for i := from; i < to; i++ {
				if state(ctx, host, "ConfigMap", "cm-"+strconv.Itoa(i)) != want {
					return false
				}
			}
			return true
		})
	}
	// Before the fences settled a replica may have served both members
	// for a moment, and the one taking a member over then drops the
	// other's fields of its entry with a guarded write, which may conflict.
	conflictsBefore := counterValue(t, "kubefed_status_write_conflicts_total")
	for i := range n {
		create(t, ctx, host, fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	// Each replica writes only its member's entry: both entries present
	// means neither write lost the other's.
	allPropagated("every object's status listing both replicas' members", 0, n)
	// Each replica applied its member's entry server-side under its own
	// field manager, and no status write was refused for another's.
	for i := range n {
		u := fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), nil, nil)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		for _, member := range names {
			if got := statusManagerOf(u, member); got != "kubefed-status/"+assigned[member] {
				t.Fatalf("%s: the entry of %s is applied by %q, want its replica %s's field manager (managedFields %v)",
					u.GetName(), member, got, assigned[member], u.GetManagedFields())
			}
		}
	}
	if c := counterValue(t, "kubefed_status_write_conflicts_total") - conflictsBefore; c != 0 {
		t.Fatalf("%v status writes of the wave refused with a conflict, want none", c)
	}
	for _, m := range fw.Members {
		if got := copies(t, ctx, m); got != n {
			t.Fatalf("%s has %d copies, want %d", m.Name, got, n)
		}
	}

	// Deleting while both replicas serve: the finalizer goes once both
	// members' copies are gone.
	gone := func(from, to int) func() bool {
		return func() bool {
			for i := from; i < to; i++ {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("types.kubefed.io/v1beta1")
				u.SetKind("FederatedConfigMap")
				if err := host.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "cm-" + strconv.Itoa(i)}, u); err == nil {
					return false
				}
			}
			return true
		}
	}
	// Writes of the objects themselves and of their status, answered or
	// refused.
	writeSeries := func(subresource string) map[string]int {
		t.Helper()
		got, err := framework.APIServerRequestSeries(ctx, fw.Host, func(line string) bool {
			return (strings.Contains(line, `verb="PUT"`) || strings.Contains(line, `verb="PATCH"`) || strings.Contains(line, `verb="APPLY"`)) &&
				strings.Contains(line, `resource="federatedconfigmaps"`) && strings.Contains(line, `subresource="`+subresource+`"`)
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	writes := func(subresource string) int { return framework.SeriesTotal(writeSeries(subresource)) }
	objectSeriesBefore := writeSeries("")
	objectsBefore, statusBefore := framework.SeriesTotal(objectSeriesBefore), writes("status")
	for i := range n / 2 {
		if err := host.Delete(ctx, fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "half the objects deleted across both replicas", time.Minute, gone(0, n/2))
	// While the objects are deleted, one replica per object (by hashing)
	// releases the finalizer, once; the other drops its entries, once its
	// copy is gone, and the releaser's go with the object.
	waitFor(t, ctx, "the releases counted", 10*time.Second, func() bool { return writes("")-objectsBefore >= n/2 })
	objectSeries := writeSeries("")
	objects, status := framework.SeriesTotal(objectSeries), writes("status")
	t.Logf("deleting %d objects took %d writes of the objects and %d of their status", n/2, objects-objectsBefore, status-statusBefore)
	if got := objects - objectsBefore; got != n/2 {
		t.Errorf("%d writes of the %d objects deleted while both replicas served, want one release of the finalizer each", got, n/2)
		for labels, count := range objectSeries {
			if d := count - objectSeriesBefore[labels]; d != 0 {
				t.Logf("%d more of %s", d, labels)
			}
		}
	}
	if got := status - statusBefore; got > n {
		t.Errorf("%d status writes while %d objects were deleted by 2 replicas, want at most one per object and replica", got, n/2)
	}
	for _, m := range fw.Members {
		if got := copies(t, ctx, m); got != n-n/2 {
			t.Fatalf("%s has %d copies after deleting %d of %d, want %d", m.Name, got, n/2, n, n-n/2)
		}
	}

	// The replica serving member1 stops: its member is handed over
	// without waiting for the fence to expire.
	leaving := assigned[names[0]]
	staying := assigned[names[1]]
	stopped := time.Now()
	stops[leaving]()
	waitFor(t, ctx, "member1 handed over", 10*time.Second, func() bool { return fences()[names[0]] == staying })
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("the handover took %s", took)
	}
	for i := n; i < 2*n; i++ {
		create(t, ctx, host, fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	allPropagated("the next objects propagated by the remaining replica", n, 2*n)

	for i := n / 2; i < 2*n; i++ {
		if err := host.Delete(ctx, fedObject("ConfigMap", testNS, "cm-"+strconv.Itoa(i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitAllGone(t, ctx, fw)
}

// splittingReplicas are count replica names, prefix and a number, among
// which Assign gives each of the two members a replica of its own.
func splittingReplicas(members []string, prefix string, count int) []string {
	for i := 0; ; i++ {
		ids := make([]string, count)
		for j := range ids {
			ids[j] = prefix + strconv.Itoa(i+j)
		}
		if o := sharding.Assign(members, ids); o[members[0]] != o[members[1]] {
			return ids
		}
	}
}

// statusManagerOf is the field manager that applied the status entry of
// member in u, or "" when none did.
func statusManagerOf(u *unstructured.Unstructured, member string) string {
	key := `k:{"name":"` + member + `"}`
	for _, m := range u.GetManagedFields() {
		if m.Operation != metav1.ManagedFieldsOperationApply || m.Subresource != "status" || m.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]map[string]any
		if err := json.Unmarshal(m.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields["f:status"]["f:clusters"][key]; ok {
			return m.Manager
		}
	}
	return ""
}

// counterValue reads a counter of the controller-runtime metrics registry,
// which every engine of this process counts into: the sum of its series
// with the given label values (pairs of name and value).
func counterValue(t *testing.T, name string, labelValues ...string) float64 {
	t.Helper()
	v, err := framework.MetricValue(name, labelValues...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
