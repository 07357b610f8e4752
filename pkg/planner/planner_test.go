package planner

import (
	"maps"
	"math"
	"slices"
	"testing"
)

func ptr(n int64) *int64 { return &n }

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want map[string]int64
		// unplaced is the expected Result.Unplaced.
		unplaced int64
	}{
		{
			name: "the seed example: wildcard weight 2 max 12, ap-northeast min 1 max 3 weight 1",
			in: Input{
				Key: "ns/web", TotalReplicas: 15,
				Preferences: map[string]Preference{
					"*":            {Weight: 2, MaxReplicas: ptr(12)},
					"ap-northeast": {MinReplicas: 1, MaxReplicas: ptr(3), Weight: 1},
				},
				Clusters: []string{"ap-northeast", "us-east", "us-west"},
			},
			want: map[string]int64{"ap-northeast": 3, "us-east": 6, "us-west": 6},
		},
		{
			name: "no preferences spread evenly",
			in:   Input{Key: "ns/web", TotalReplicas: 4, Clusters: []string{"c1", "c2"}},
			want: map[string]int64{"c1": 2, "c2": 2},
		},
		{
			name: "weights 2:1",
			in: Input{
				Key: "ns/web", TotalReplicas: 6,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 4, "c2": 2},
		},
		{
			name: "minimums 3 and 3 take everything before weights 2:1",
			in: Input{
				Key: "ns/web", TotalReplicas: 6,
				Preferences: map[string]Preference{"c1": {MinReplicas: 3, Weight: 2}, "c2": {MinReplicas: 3, Weight: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 3, "c2": 3},
		},
		{
			name: "minimums that do not all fit go to the heaviest first",
			in: Input{
				Key: "ns/web", TotalReplicas: 6,
				Preferences: map[string]Preference{"c1": {MinReplicas: 5, Weight: 1}, "c2": {MinReplicas: 5, Weight: 2}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 1, "c2": 5},
		},
		{
			name: "capacity overflows to the other cluster",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Clusters: []string{"c1", "c2"},
				Capacity: map[string]int64{"c1": 2},
			},
			want: map[string]int64{"c1": 2, "c2": 8},
		},
		{
			name: "capacity also bounds the minimum",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"c1": {MinReplicas: 6, Weight: 1}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Capacity:    map[string]int64{"c1": 4},
			},
			want: map[string]int64{"c1": 4, "c2": 6},
		},
		{
			name: "maximums leave replicas unplaced",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"c1": {MaxReplicas: ptr(2), Weight: 1}, "c2": {MaxReplicas: ptr(3), Weight: 5}},
				Clusters:    []string{"c1", "c2"},
			},
			want:     map[string]int64{"c1": 2, "c2": 3},
			unplaced: 5,
		},
		{
			name: "weight 0 gets only its minimum",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"c1": {MinReplicas: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 2, "c2": 8},
		},
		{
			name: "only weight 0 clusters leave the rest unplaced",
			in: Input{
				Key: "ns/web", TotalReplicas: 5,
				Preferences: map[string]Preference{"*": {MinReplicas: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want:     map[string]int64{"c1": 1, "c2": 1},
			unplaced: 3,
		},
		{
			name: "a cluster with no preference and no wildcard gets none",
			in: Input{
				Key: "ns/web", TotalReplicas: 5,
				Preferences: map[string]Preference{"c1": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 5, "c2": 0},
		},
		{
			name: "a cluster's own entry replaces the wildcard entirely",
			in: Input{
				Key: "ns/web", TotalReplicas: 9,
				Preferences: map[string]Preference{"*": {MinReplicas: 3, Weight: 1}, "c1": {Weight: 2}},
				Clusters:    []string{"c1", "c2"},
			},
			// c2: min 3, then 6 left split ceil(6*2/3)=4 to c1, 2 to c2.
			want: map[string]int64{"c1": 4, "c2": 5},
		},
		{
			name: "no candidates place nothing",
			in:   Input{Key: "ns/web", TotalReplicas: 3},
			want: map[string]int64{}, unplaced: 3,
		},
		{
			name: "negative total counts as zero",
			in:   Input{Key: "ns/web", TotalReplicas: -3, Clusters: []string{"c1"}},
			want: map[string]int64{"c1": 0},
		},
		{
			name: "duplicate candidates count once",
			in:   Input{Key: "ns/web", TotalReplicas: 4, Clusters: []string{"c1", "c2", "c1"}},
			want: map[string]int64{"c1": 2, "c2": 2},
		},
		{
			name: "huge weights do not overflow",
			in: Input{
				Key: "ns/web", TotalReplicas: math.MaxInt32,
				Preferences: map[string]Preference{"c1": {Weight: math.MaxInt64}, "c2": {Weight: math.MaxInt64}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": math.MaxInt32/2 + 1, "c2": math.MaxInt32 / 2},
		},
		{
			name: "rebalance ignores the current distribution",
			in: Input{
				Key: "ns/web", TotalReplicas: 10, Mode: Rebalance,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			want: map[string]int64{"c1": 7, "c2": 3},
		},
		{
			name: "keep-existing keeps a distribution that adds up",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			want: map[string]int64{"c1": 5, "c2": 5},
		},
		{
			name: "keep-existing without a current distribution plans afresh",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
			},
			want: map[string]int64{"c1": 7, "c2": 3},
		},
		{
			name: "keep-existing scales up where the preference has more",
			in: Input{
				Key: "ns/web", TotalReplicas: 13,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			// Preferred is 9/4: the 3 new replicas all go to c1.
			want: map[string]int64{"c1": 8, "c2": 5},
		},
		{
			name: "keep-existing scales down by keeping what runs in preference order, as KubeFed does",
			in: Input{
				Key: "ns/web", TotalReplicas: 6,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			want: map[string]int64{"c1": 5, "c2": 1},
		},
		{
			name: "keep-existing spreads what it adds by weight, each cluster's share taken first from what it runs",
			in: Input{
				Key: "ns/web", TotalReplicas: 14,
				Preferences: map[string]Preference{"a": {Weight: 2}, "b": {Weight: 1}, "c": {Weight: 1}},
				Clusters:    []string{"a", "b", "c"},
				Current:     map[string]int64{"c": 10},
			},
			// KubeFed's rounds: a is due 2 then 1; b 1; c's dues come
			// out of the 10 it runs.
			want: map[string]int64{"a": 3, "b": 1, "c": 10},
		},
		{
			name: "avoid-disruption scales down where the preference has fewer",
			in: Input{
				Key: "ns/web", TotalReplicas: 6, Mode: AvoidDisruption,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			want: map[string]int64{"c1": 4, "c2": 2},
		},
		{
			name: "keep-existing hands the replicas of a cluster that left to the others",
			in: Input{
				Key: "ns/web", TotalReplicas: 9,
				Clusters: []string{"c1", "c2"},
				Current:  map[string]int64{"c1": 3, "c2": 3, "gone": 3},
			},
			want: map[string]int64{"c1": 5, "c2": 4},
		},
		{
			name: "keep-existing gives a joining cluster nothing while the rest adds up",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Clusters: []string{"c1", "c2", "c3"},
				Current:  map[string]int64{"c1": 8, "c2": 2},
			},
			want: map[string]int64{"c1": 8, "c2": 2, "c3": 0},
		},
		{
			name: "keep-existing meets a minimum raised since, then keeps what runs in preference order",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"*": {Weight: 1}, "c3": {MinReplicas: 2, Weight: 1}},
				Clusters:    []string{"c1", "c2", "c3"},
				Current:     map[string]int64{"c1": 8, "c2": 2},
			},
			// Equal weights: this key orders c1 before c2.
			want: map[string]int64{"c1": 8, "c2": 0, "c3": 2},
		},
		{
			name: "keep-existing trims a cluster above a maximum lowered since",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"*": {Weight: 1}, "c1": {MaxReplicas: ptr(4), Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 8, "c2": 2},
			},
			want: map[string]int64{"c1": 4, "c2": 6},
		},
		{
			name: "keep-existing moves what exceeds capacity",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Clusters: []string{"c1", "c2"},
				Capacity: map[string]int64{"c1": 3},
				Current:  map[string]int64{"c1": 6, "c2": 4},
			},
			want: map[string]int64{"c1": 3, "c2": 7},
		},
		{
			name: "a capacity equal to the current replicas freezes a cluster",
			in: Input{
				Key: "ns/web", TotalReplicas: 12, Mode: Rebalance,
				Clusters: []string{"c1", "c2"},
				Capacity: map[string]int64{"c1": 2},
				Current:  map[string]int64{"c1": 2, "c2": 4},
			},
			want: map[string]int64{"c1": 2, "c2": 10},
		},
		{
			name: "a restored cluster keeps what it runs while others give back what they took over",
			in: Input{
				Key: "ns/web", TotalReplicas: 12,
				Clusters: []string{"c1", "c2", "c3"},
				// c1 ran 7 before it failed and c2 took them over; c3
				// runs none, which keep-existing does not change.
				Current:  map[string]int64{"c1": 7, "c2": 9, "c3": 0},
				Restored: map[string]bool{"c1": true},
			},
			want: map[string]int64{"c1": 7, "c2": 5, "c3": 0},
		},
		{
			name: "the same with c2 restored instead: c1 gives first",
			in: Input{
				Key: "ns/web", TotalReplicas: 12,
				Clusters: []string{"c1", "c2", "c3"},
				Current:  map[string]int64{"c1": 7, "c2": 9, "c3": 0},
				Restored: map[string]bool{"c2": true},
			},
			want: map[string]int64{"c1": 4, "c2": 8, "c3": 0},
		},
		{
			name: "a restored cluster comes down to its preferred share before anyone goes below theirs",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Clusters: []string{"c1", "c2"},
				Current:  map[string]int64{"c1": 8, "c2": 10},
				Restored: map[string]bool{"c1": true},
			},
			want: map[string]int64{"c1": 5, "c2": 5},
		},
		{
			name: "a restored cluster is bounded by the preference of now",
			in: Input{
				Key: "ns/web", TotalReplicas: 10,
				Preferences: map[string]Preference{"*": {Weight: 1}, "c1": {MaxReplicas: ptr(3), Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 8, "c2": 10},
				Restored:    map[string]bool{"c1": true},
			},
			want: map[string]int64{"c1": 3, "c2": 7},
		},
		{
			name: "a restored cluster after a scale-up meanwhile: what moved comes back, what was added stays",
			in: Input{
				Key: "ns/web", TotalReplicas: 12,
				Clusters: []string{"c1", "c2"},
				Current:  map[string]int64{"c1": 5, "c2": 12},
				Restored: map[string]bool{"c1": true},
			},
			want: map[string]int64{"c1": 5, "c2": 7},
		},
		{
			name: "a restored cluster after a scale-down meanwhile",
			in: Input{
				Key: "ns/web", TotalReplicas: 4,
				Clusters: []string{"c1", "c2"},
				Current:  map[string]int64{"c1": 5, "c2": 4},
				Restored: map[string]bool{"c1": true},
			},
			want: map[string]int64{"c1": 2, "c2": 2},
		},
		{
			name: "avoid-disruption gives a joining cluster its share from clusters above theirs",
			in: Input{
				Key: "ns/web", TotalReplicas: 10, Mode: AvoidDisruption,
				Preferences: map[string]Preference{"c1": {Weight: 1}, "c2": {Weight: 1}, "c3": {Weight: 3}},
				Clusters:    []string{"c1", "c2", "c3"},
				Current:     map[string]int64{"c1": 8, "c2": 2},
			},
			// Preferred is c3 6, then c1 and c2 2 each: only c1 is above its
			// share, so c1 alone pays for c3.
			want: map[string]int64{"c1": 2, "c2": 2, "c3": 6},
		},
		{
			name: "avoid-disruption leaves a distribution that adds up alone",
			in: Input{
				Key: "ns/web", TotalReplicas: 10, Mode: AvoidDisruption,
				Preferences: map[string]Preference{"c1": {Weight: 2}, "c2": {Weight: 1}},
				Clusters:    []string{"c1", "c2"},
				Current:     map[string]int64{"c1": 5, "c2": 5},
			},
			want: map[string]int64{"c1": 5, "c2": 5},
		},
		{
			name: "avoid-disruption with a preferred share of 0 for the joining cluster",
			in: Input{
				Key: "ns/web", TotalReplicas: 2, Mode: AvoidDisruption,
				Preferences: map[string]Preference{"c1": {Weight: 5}, "c2": {Weight: 5}, "c3": {Weight: 1}},
				Clusters:    []string{"c1", "c2", "c3"},
				Current:     map[string]int64{"c1": 1, "c2": 1},
			},
			want: map[string]int64{"c1": 1, "c2": 1, "c3": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.in)
			if !maps.Equal(got.Replicas, tt.want) || got.Unplaced != tt.unplaced {
				t.Errorf("Plan() = %v unplaced %d, want %v unplaced %d", got.Replicas, got.Unplaced, tt.want, tt.unplaced)
			}
		})
	}
}

// TestPlanScaleUpByOne shows what avoid-disruption and keep-existing spare
// a workload: under rebalance, one more replica can take one away from a
// cluster because the ceil rounds shift, while the other modes only add it.
func TestPlanScaleUpByOne(t *testing.T) {
	clusters := []string{"c1", "c2", "c3"}
	current := Plan(Input{Key: "ns/web", TotalReplicas: 12, Clusters: clusters, Mode: Rebalance}).Replicas
	if !maps.Equal(current, map[string]int64{"c1": 4, "c2": 4, "c3": 4}) {
		t.Fatalf("12 over 3 clusters = %v", current)
	}
	rebalanced := Plan(Input{Key: "ns/web", TotalReplicas: 13, Clusters: clusters, Mode: Rebalance, Current: current}).Replicas
	lost := false
	for c, n := range rebalanced {
		lost = lost || n < current[c]
	}
	if !lost {
		t.Fatalf("rebalance from 12 to 13 = %v; the test expects a cluster to lose a replica to the rounding", rebalanced)
	}
	for _, mode := range []Mode{KeepExisting, AvoidDisruption} {
		got := Plan(Input{Key: "ns/web", TotalReplicas: 13, Clusters: clusters, Mode: mode, Current: current}).Replicas
		var moved, added int64
		for c, n := range got {
			if n < current[c] {
				moved += current[c] - n
			} else {
				added += n - current[c]
			}
		}
		if moved != 0 || added != 1 {
			t.Errorf("mode %d from 12 to 13 = %v: moved %d, added %d; want only one added", mode, got, moved, added)
		}
	}
}

// TestPlanTieBreak shows that equal weights split by a hash of cluster and
// workload: deterministic for one workload, different across workloads.
func TestPlanTieBreak(t *testing.T) {
	clusters := []string{"a", "b"}
	first := map[string]int{}
	for i := range 64 {
		key := "ns/web-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		got := Plan(Input{Key: key, TotalReplicas: 3, Clusters: clusters}).Replicas
		if again := Plan(Input{Key: key, TotalReplicas: 3, Clusters: []string{"b", "a"}}).Replicas; !maps.Equal(got, again) {
			t.Fatalf("%s: %v, reordered %v", key, got, again)
		}
		if got["a"] == 2 {
			first["a"]++
		} else {
			first["b"]++
		}
	}
	if first["a"] == 0 || first["b"] == 0 {
		t.Errorf("the extra replica always went to the same cluster: %v", first)
	}
}

// TestPlanFirstRoundCountsFullClusters: KubeFed's first weighted round sums
// the weights of every weighted cluster, also one that its minimum (or its
// capacity) already filled; that cluster takes nothing and drops out, and
// the others' shares of the round are ceil(10 × 1/4) = 3 each, then one
// more to one of them: 4/3/3, not 4/4/2.
func TestPlanFirstRoundCountsFullClusters(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		full string
	}{
		{
			name: "filled by its minimum",
			in: Input{Key: "ns/web", TotalReplicas: 13, Mode: Rebalance,
				Preferences: map[string]Preference{"*": {Weight: 1}, "d": {MinReplicas: 3, MaxReplicas: ptr(3), Weight: 1}},
				Clusters:    []string{"a", "b", "c", "d"}},
			full: "d",
		},
		{
			name: "no capacity",
			in: Input{Key: "ns/web", TotalReplicas: 10, Mode: Rebalance,
				Clusters: []string{"a", "b", "c", "d"}, Capacity: map[string]int64{"d": 0}},
			full: "d",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.in).Replicas
			var rest []int64
			for name, n := range got {
				if name != tc.full {
					rest = append(rest, n)
				}
			}
			slices.Sort(rest)
			if !slices.Equal(rest, []int64{3, 3, 4}) {
				t.Errorf("plan %v: the others got %v, want 3, 3 and 4 as KubeFed's planner gives", got, rest)
			}
		})
	}
}

// TestPlanKeepExistingWithLargePreallocations: a replica left over two
// clusters whose bounds equal the billion each runs is due from both in
// every round, and their preallocations pay it; the rounds that only use
// up preallocations are done at once, not one per replica.
func TestPlanKeepExistingWithLargePreallocations(t *testing.T) {
	const running = 1_000_000_000
	got := Plan(Input{
		Key: "ns/web", TotalReplicas: 2*running + 1,
		Clusters: []string{"c1", "c2", "c3"},
		Capacity: map[string]int64{"c1": running, "c2": running, "c3": 0},
		Current:  map[string]int64{"c1": running, "c2": running},
	})
	want := map[string]int64{"c1": running, "c2": running, "c3": 0}
	if !maps.Equal(got.Replicas, want) || got.Unplaced != 1 {
		t.Errorf("Plan() = %v unplaced %d, want %v unplaced 1", got.Replicas, got.Unplaced, want)
	}
}
