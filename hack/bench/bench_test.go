package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubefed-io/kubefed/pkg/overrides"
)

// memberCopy is what a member holds for a federated object: its template
// with the named cluster's overrides applied, as the engine renders it.
func memberCopy(t *testing.T, fed *unstructured.Unstructured, cluster string) *unstructured.Unstructured {
	t.Helper()
	// A JSON round trip gives the number types a watch delivers.
	data, err := json.Marshal(fed.Object)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	byCluster, err := overrides.FromUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _, _ := unstructured.NestedMap(obj, "spec", "template")
	if err := overrides.Apply(tmpl, byCluster[cluster]); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: tmpl}
}

// TestWaveStates checks that every state a wave waits for is the state a
// member copy of that version is in, and differs from the state before the
// wave, so that no wave can be satisfied early or never.
func TestWaveStates(t *testing.T) {
	for _, r := range resources {
		t.Run(r.name, func(t *testing.T) {
			fed := federatedObject(r, "o", 0, []string{"member1", "member2"})
			created := memberCopy(t, fed, "member1")
			if got, want := stateOf(r.name, created), wantState(r, version{}, "member1"); got != want {
				t.Errorf("created: state %q, wave waits for %q", got, want)
			}

			patch := templatePatch(r, 1)
			merged := mergePatch(fed.Object, patch)
			updated := memberCopy(t, &unstructured.Unstructured{Object: merged}, "member1")
			if got, want := stateOf(r.name, updated), wantState(r, version{revision: 1}, "member1"); got != want {
				t.Errorf("updated: state %q, wave waits for %q", got, want)
			}
			if stateOf(r.name, updated) == stateOf(r.name, created) {
				t.Errorf("the update wave does not change the state %q", stateOf(r.name, created))
			}

			if err := unstructured.SetNestedSlice(merged, []any{overrideOf(r, "member1")}, "spec", "overrides"); err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"member1", "member2"} {
				v := version{revision: 1, overridden: c == "member1"}
				if got, want := stateOf(r.name, memberCopy(t, &unstructured.Unstructured{Object: merged}, c)), wantState(r, v, c); got != want {
					t.Errorf("overridden, %s: state %q, wave waits for %q", c, got, want)
				}
			}

			direct := directObject(r, "o", 1)
			if got, want := stateOf(r.name, direct), wantState(r, version{revision: 1}, "member1"); got != want {
				t.Errorf("direct object: state %q, limit wave waits for %q", got, want)
			}
		})
	}
}

// mergePatch applies a JSON merge patch (RFC 7386) to a copy of obj.
func mergePatch(obj, patch map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	for k, v := range patch {
		pm, isMap := v.(map[string]any)
		om, wasMap := out[k].(map[string]any)
		switch {
		case v == nil:
			delete(out, k)
		case isMap && wasMap:
			out[k] = mergePatch(om, pm)
		default:
			out[k] = v
		}
	}
	return out
}

func TestParseWrites(t *testing.T) {
	metrics := `# HELP apiserver_request_total x
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="scale",verb="PUT",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="types.kubefed.io",resource="federateddeployments",scope="resource",subresource="",verb="PATCH",version="v1beta1"} 11
`
	got := parseWrites(metrics, []string{"deployments"})
	want := writeCounts{"deployments": 9, "deployments/conflicts": 2, "deployments/status": 3}
	if !got.equal(want) {
		t.Fatalf("parseWrites = %v, want %v", got, want)
	}
	withCluster := writeCounts{}
	for k, v := range got {
		withCluster["m/"+k] = v
	}
	if n := withCluster.sum("m", func(string) bool { return true }); n != 12 {
		t.Errorf("sum counts conflicts twice or misses writes: %d, want 12", n)
	}
}

// A wave's writes beyond its creates are told apart by verb and code.
func TestParseWriteKinds(t *testing.T) {
	metrics := `apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="504",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 4
`
	got := parseWriteKinds(metrics, []string{"deployments", "configmaps"})
	want := writeKinds{"deployments POST 201": 7, "deployments POST 504": 1, "deployments PUT 200": 2, "configmaps POST 201": 4}
	if len(got) != len(want) {
		t.Fatalf("parseWriteKinds = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parseWriteKinds[%q] = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	before := writeKinds{"m1/deployments POST 201": 5, "m1/deployments PUT 200": 2}
	after := writeKinds{"m1/deployments POST 201": 9, "m1/deployments PUT 200": 3, "m1/deployments POST 504": 1, "m2/deployments POST 504": 2}
	u := after.unusual(before)
	if strings.Join(u, "; ") != "deployments POST 504: 3 (m1 1, m2 2); deployments PUT 200: 1 (m1 1)" {
		t.Errorf("unusual = %v, want the timed-out create and the update only", u)
	}
}

// Writes of resources the bench does not name, but Leases, are counted
// apart: an engine that adds objects per object or per cluster shows there.
func TestParseOtherWrites(t *testing.T) {
	metrics := `apiserver_request_total{code="201",group="work.karmada.io",resource="works",subresource="",verb="POST",version="v1alpha1"} 6
apiserver_request_total{code="200",group="coordination.k8s.io",resource="leases",subresource="",verb="PUT",version="v1"} 40
apiserver_request_total{code="200",group="types.kubefed.io",resource="federateddeployments",subresource="status",verb="PATCH",version="v1beta1"} 11
apiserver_request_total{code="200",group="",resource="configmaps",subresource="",verb="GET",version="v1"} 9
apiserver_request_total{code="200",group="",resource="configmaps",subresource="",verb="PATCH",version="v1"} 1
`
	if got := parseOtherWrites(metrics, hostCounted); got != 7 {
		t.Errorf("parseOtherWrites = %v, want 7 (works and the ConfigMap patch)", got)
	}
}

func TestParseReads(t *testing.T) {
	metrics := `apiserver_request_total{code="200",component="apiserver",dry_run="",group="core.kubefed.io",resource="kubefedclusters",scope="namespace",subresource="",verb="GET",version="v1beta1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="types.kubefed.io",resource="federateddeployments",scope="cluster",subresource="",verb="LIST",version="v1beta1"} 2
apiserver_request_total{code="404",component="apiserver",dry_run="",group="types.kubefed.io",resource="federateddeployments",scope="namespace",subresource="",verb="GET",version="v1beta1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="types.kubefed.io",resource="federateddeployments",scope="namespace",subresource="",verb="GET",version="v1beta1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="types.kubefed.io",resource="federateddeployments",scope="namespace",subresource="status",verb="PATCH",version="v1beta1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/healthz",verb="GET",version=""} 9
`
	got := parseReads(metrics)
	want := writeCounts{"reads/kubefedclusters GET": 4, "reads/federateddeployments LIST": 2, "reads/federateddeployments GET": 8}
	if !maps.Equal(got, want) {
		t.Errorf("parseReads = %v, want %v (GETs and LISTs by resource, every code; no writes, no paths)", got, want)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarize(ds)
	want := latency{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}
	if *got != want {
		t.Errorf("summarize = %+v, want %+v", *got, want)
	}
	if summarize(nil) != nil {
		t.Error("summarize(nil) should be nil")
	}
}

func TestWaveDropAndWait(t *testing.T) {
	a := obsKey{cluster: "m1", resource: "configmaps", name: "a"}
	b := obsKey{cluster: "m2", resource: "configmaps", name: "a"}
	w := newWave(map[obsKey]string{a: "v1", b: "v1"})
	w.observe(a, "v0", time.Now())
	w.observe(a, "v1", time.Now())
	w.observe(a, "v1", time.Now())
	if w.remaining != 1 {
		t.Fatalf("remaining %d after one match, want 1", w.remaining)
	}
	w.drop(func(k obsKey) bool { return k == b })
	select {
	case <-w.done:
	default:
		t.Fatal("the wave is not done once its last wanted state was dropped")
	}
}

func TestHostCost(t *testing.T) {
	d := writeCounts{
		"host/federatedconfigmaps":                  14, // 10 finalizers + 4 bench writes
		"host/federatedconfigmaps/status":           12,
		"host/federatedconfigmaps/status/conflicts": 2,
		"host/federatedconfigmaps/conflicts":        1,
		"host/events":                               30,
		"member1/configmaps":                        10,
	}
	c := hostCost(d, 4, 30, 10)
	if c.Spec != 1 || c.Status != 1.2 || c.Events != 3 || c.PerObject != 5.2 {
		t.Errorf("got %+v, want object 1, status 1.2, events 3, total 5.2", c)
	}
	if c.StatusConflicts != 2.0/12 {
		t.Errorf("status conflicts %v, want %v", c.StatusConflicts, 2.0/12)
	}
	if got := d.sum(hostName, hostPropagationResource); got != 26 {
		t.Errorf("host propagation writes %d, want 26 (conflicts are counted among the writes once)", got)
	}
}

func TestCreatesFromWriteKinds(t *testing.T) {
	metrics := `apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="409",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="PUT",version="v1"} 4`
	kinds := writeKinds{}
	for k, v := range parseWriteKinds(metrics, memberCounted) {
		kinds["m/"+k] = v
	}
	if got := kinds.creates()["m"]; got != (creates{attempted: 12, conflicts: 2}) {
		t.Errorf("creates = %+v, want 12 attempted and 2 refused", got)
	}
}

// The slowest tenth of a wave's copies is split where the engine's
// finalizer appeared, and the timeline has the p99 of each second sent.
func TestStagesOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := newWave(nil)
	for i := range 10 {
		name := string(rune('a' + i))
		sent := t0.Add(time.Duration(i) * 200 * time.Millisecond)
		w.sentAt(obsKey{resource: "deployments", name: name}, sent)
		// Object j waits j×100 ms for the finalizer and 50 ms after it.
		planned := sent.Add(time.Duration(i) * 100 * time.Millisecond)
		w.plannedAt(obsKey{resource: "deployments", name: name}, false, true, sent)
		w.plannedAt(obsKey{resource: "deployments", name: name}, true, false, planned)
		w.plannedAt(obsKey{resource: "deployments", name: name}, true, false, planned.Add(time.Second))
		w.got[obsKey{cluster: "member1", resource: "deployments", name: name}] = planned.Add(50 * time.Millisecond)
	}
	sentFor := func(k obsKey) (time.Time, bool) {
		t, ok := w.sent[obsKey{resource: k.resource, name: k.name}]
		return t, ok
	}
	// An object only ever seen with the finalizer, and not created, was
	// not created in the wave: it has no split.
	w.sentAt(obsKey{resource: "deployments", name: "old"}, t0)
	w.plannedAt(obsKey{resource: "deployments", name: "old"}, true, false, t0)
	w.got[obsKey{cluster: "member1", resource: "deployments", name: "old"}] = t0.Add(time.Millisecond)
	if _, ok := w.planned[obsKey{resource: "deployments", name: "old"}]; ok {
		t.Fatal("an object never seen without the finalizer has a planned time")
	}
	delete(w.got, obsKey{cluster: "member1", resource: "deployments", name: "old"})
	st, timeline := stagesOf(w, t0, sentFor)
	if st == nil || st.Copies != 1 || st.ToPlanned.Max != 900 || st.ToMember.Max != 50 {
		t.Fatalf("slowest tenth: %+v %+v %+v", st, st.ToPlanned, st.ToMember)
	}
	// Sent in seconds 0 (a–e, latencies 50–450 ms) and 1 (f–j, 550–950 ms).
	if len(timeline) != 2 || timeline[0] != 450 || timeline[1] != 950 {
		t.Fatalf("timeline %v", timeline)
	}

	// Created with the finalizer (the admission policy adds it): the
	// split is at the creation the host's watch delivered.
	w = newWave(nil)
	for i := range 10 {
		k := obsKey{resource: "configmaps", name: string(rune('a' + i))}
		sent := t0.Add(time.Duration(i) * 200 * time.Millisecond)
		w.sentAt(k, sent)
		onHost := sent.Add(time.Duration(i+1) * 10 * time.Millisecond)
		w.plannedAt(k, true, true, onHost)
		w.plannedAt(k, true, false, onHost.Add(time.Second))
		w.got[obsKey{cluster: "member1", resource: k.resource, name: k.name}] = onHost.Add(time.Duration(i) * 100 * time.Millisecond)
	}
	st, _ = stagesOf(w, t0, sentFor)
	if st == nil || st.Copies != 1 || st.ToPlanned.Max != 100 || st.ToMember.Max != 900 {
		t.Fatalf("slowest tenth of objects created with the finalizer: %+v", st)
	}
}

// The flip's ratio is of medians: one wave slowed by the shared machine
// does not decide it.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{480}, 480},
		{[]float64{1419, 480, 900}, 900},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its argument: %v", c.in)
		}
	}
}

// The isolation ratios are of the medians over the rounds, so one wave
// slowed by the rest of the machine moves them less than a single round's
// would; a round whose wave measured nothing is left out.
func TestIsolationRatiosAreOfMedians(t *testing.T) {
	wave := func(tput, p99 float64) *result {
		return &result{Throughput: tput, PerCluster: &latency{P99: p99}}
	}
	rounds := []isolationRound{
		{base: wave(40, 8000), slow: wave(10, 30000), hung: wave(40, 4000)},
		{base: wave(50, 6000), slow: wave(45, 6000), hung: wave(60, 3000)},
		{base: wave(20, 9000), slow: wave(50, 5000), hung: wave(30, 6000)},
		{base: wave(30, 7000), slow: &result{}, hung: wave(35, 7000)},
	}
	got := map[string]float64{}
	for _, r := range isolationRatios(rounds) {
		got[r.Name] = r.Value
	}
	want := map[string]float64{
		// slow: rounds 1-3; medians 45/40 and 8000/6000.
		"isolation-slow-throughput": 45.0 / 40,
		"isolation-slow-p99":        8000.0 / 6000,
		// hung: all four; medians 37.5/35 and 7500/5000.
		"isolation-hung-throughput": 37.5 / 35,
		"isolation-hung-p99":        7500.0 / 5000,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g < v-1e-9 || g > v+1e-9 {
			t.Errorf("%s = %v (present %t), want %v", name, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ratios %v, want only %v", got, want)
	}
	if r := isolationRatios([]isolationRound{{base: wave(40, 8000), slow: &result{}}}); len(r) != 0 {
		t.Errorf("a round measuring nothing gave ratios %v", r)
	}
}

// A ratio to the limit is given only where both waves saw every effect
// they expected: one that did not ends at the last copy it saw.
func TestRatiosOnlyOfCompleteWaves(t *testing.T) {
	r := &report{Results: []*result{
		{Scenario: scenarioCreateMax, Throughput: 90},
		{Scenario: scenarioLimitCreate, Throughput: 150},
		{Scenario: scenarioUpdate, Throughput: 120, Incomplete: 40},
		{Scenario: scenarioLimitUpdate, Throughput: 150},
		{Scenario: scenarioDelete, Throughput: 100},
		{Scenario: scenarioLimitDelete, Throughput: 150, Errors: 2},
	}}
	r.finish()
	if len(r.Ratios) != 1 || r.Ratios[0].Name != "create" || r.Ratios[0].Value != 0.6 {
		t.Fatalf("ratios %+v, want create 0.60 alone", r.Ratios)
	}
}
