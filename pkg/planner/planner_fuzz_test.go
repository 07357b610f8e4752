package planner

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// fuzzInput decodes up to 8 clusters from data, 6 bytes each: whether and
// how the cluster has a preference, its minimum, maximum, weight, capacity
// and current replicas. Small numbers make bounds bite often.
func fuzzInput(data []byte, total uint16, mode uint8) Input {
	in := Input{
		Key:           fmt.Sprintf("ns/w%d", len(data)),
		TotalReplicas: int32(total % 200),
		Preferences:   map[string]Preference{},
		Capacity:      map[string]int64{},
		Mode:          Mode(mode % 3),
	}
	if mode&4 != 0 {
		in.Current = map[string]int64{}
	}
	if mode&8 != 0 {
		in.Preferences[Wildcard] = Preference{Weight: int64(mode >> 4)}
	}
	for i := 0; i+6 <= len(data) && i < 6*8; i += 6 {
		b := data[i : i+6]
		name := fmt.Sprintf("c%d", i/6)
		in.Clusters = append(in.Clusters, name)
		if b[0]&1 != 0 {
			p := Preference{MinReplicas: int64(b[1] % 16), Weight: int64(b[3] % 5)}
			if b[0]&2 != 0 {
				p.MaxReplicas = ptr(p.MinReplicas + int64(b[2]%32))
			}
			in.Preferences[name] = p
		}
		if b[0]&4 != 0 {
			in.Capacity[name] = int64(b[4] % 40)
		}
		if in.Current != nil && b[0]&8 != 0 {
			in.Current[name] = int64(b[5] % 80)
		}
		if b[0]&16 != 0 {
			if in.Restored == nil {
				in.Restored = map[string]bool{}
			}
			in.Restored[name] = true
		}
	}
	return in
}

// bounds is what the input allows a cluster: at most upper, and lower when
// every cluster's minimum fits.
type bounds struct {
	eligible bool
	weight   int64
	upper    int64
	lower    int64
}

func clusterBounds(in Input, name string) bounds {
	prefs := in.Preferences
	if len(prefs) == 0 {
		prefs = map[string]Preference{Wildcard: {Weight: 1}}
	}
	p, ok := prefs[name]
	if !ok {
		p, ok = prefs[Wildcard]
	}
	if !ok {
		return bounds{}
	}
	b := bounds{eligible: true, weight: p.Weight, upper: 1 << 40}
	if p.MaxReplicas != nil {
		b.upper = *p.MaxReplicas
	}
	if c, ok := in.Capacity[name]; ok {
		b.upper = min(b.upper, c)
	}
	b.lower = min(p.MinReplicas, b.upper)
	return b
}

func FuzzPlan(f *testing.F) {
	f.Add([]byte{1, 1, 2, 1, 0, 0, 9, 0, 0, 2, 0, 0, 9, 0, 0, 2, 0, 0}, uint16(15), uint8(0))
	f.Add([]byte{13, 3, 4, 1, 7, 30, 9, 0, 0, 2, 0, 60, 29, 5, 0, 0, 3, 4}, uint16(40), uint8(4))
	f.Add([]byte{31, 2, 2, 2, 2, 2, 15, 1, 1, 1, 1, 1}, uint16(7), uint8(6))
	f.Add([]byte{8, 0, 0, 0, 0, 10, 8, 0, 0, 0, 0, 10}, uint16(13), uint8(4|8|16))
	f.Fuzz(func(t *testing.T, data []byte, total uint16, mode uint8) {
		in := fuzzInput(data, total, mode)
		got := Plan(in)
		check := func(what string, in Input, got Result) {
			t.Helper()
			var sum, capacity, minimums int64
			for _, name := range in.Clusters {
				n, ok := got.Replicas[name]
				if !ok {
					t.Fatalf("%s: candidate %s missing from %v", what, name, got.Replicas)
				}
				b := clusterBounds(in, name)
				if n < 0 || n > b.upper || (!b.eligible && n != 0) {
					t.Fatalf("%s: %s has %d, bounds %+v; input %+v", what, name, n, b, in)
				}
				sum += n
				minimums += b.lower
				if b.weight > 0 {
					capacity += b.upper
				} else {
					capacity += b.lower
				}
			}
			if len(got.Replicas) != len(in.Clusters) && !hasDuplicates(in.Clusters) {
				t.Fatalf("%s: result %v has clusters that are no candidates %v", what, got.Replicas, in.Clusters)
			}
			total := int64(in.TotalReplicas)
			if sum+got.Unplaced != total || got.Unplaced < 0 {
				t.Fatalf("%s: sum %d + unplaced %d != total %d", what, sum, got.Unplaced, total)
			}
			if capacity >= total && sum != total {
				t.Fatalf("%s: placed %d of %d although the clusters have room for %d; %v, input %+v", what, sum, total, capacity, got.Replicas, in)
			}
			if minimums <= total {
				for _, name := range in.Clusters {
					if b := clusterBounds(in, name); got.Replicas[name] < b.lower {
						t.Fatalf("%s: %s has %d below its minimum %d that fits; input %+v", what, name, got.Replicas[name], b.lower, in)
					}
				}
			}
		}
		check("plan", in, got)

		// The same input in another order gives the same plan.
		reordered := in
		reordered.Clusters = slices.Clone(in.Clusters)
		slices.Reverse(reordered.Clusters)
		if again := Plan(reordered); !maps.Equal(again.Replicas, got.Replicas) {
			t.Fatalf("reordered clusters: %v, before %v", again.Replicas, got.Replicas)
		}

		// Planning again from the plan changes nothing.
		from := in
		from.Current = got.Replicas
		from.Restored = nil
		if again := Plan(from); !maps.Equal(again.Replicas, got.Replicas) {
			t.Fatalf("replanning %v gives %v (mode %d)", got.Replicas, again.Replicas, in.Mode)
		}

		// Scaling a complete plan in the keeping modes only adds or only
		// removes replicas.
		if in.Mode == Rebalance || got.Unplaced != 0 {
			return
		}
		for _, delta := range []int32{-7, -1, 1, 9} {
			scaled := from
			scaled.TotalReplicas = max(in.TotalReplicas+delta, 0)
			res := Plan(scaled)
			check("scaled", scaled, res)
			for name, n := range res.Replicas {
				if (delta > 0 && n < got.Replicas[name]) || (delta < 0 && n > got.Replicas[name]) {
					t.Fatalf("scaling %d by %d moved replicas: %v -> %v (mode %d)", in.TotalReplicas, delta, got.Replicas, res.Replicas, in.Mode)
				}
			}
		}
	})
}

func hasDuplicates(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}
