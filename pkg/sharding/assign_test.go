package sharding

import (
	"fmt"
	"testing"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func TestOwnerIsDeterministicAndAReplica(t *testing.T) {
	replicas := []string{"kubefed-a", "kubefed-b", "kubefed-c"}
	reversed := []string{"kubefed-c", "kubefed-b", "kubefed-a"}
	for _, c := range names("member", 50) {
		o := Owner(c, replicas)
		if o == "" || o != Owner(c, reversed) {
			t.Fatalf("cluster %s: owner %q, with the replicas reversed %q", c, o, Owner(c, reversed))
		}
	}
	if Owner("member1", nil) != "" {
		t.Error("an owner without replicas")
	}
	if Owner("member1", []string{"only"}) != "only" {
		t.Error("a single replica does not own everything")
	}
}

func TestAssignmentIsBalanced(t *testing.T) {
	for _, tc := range []struct{ clusters, replicas int }{{300, 3}, {1000, 4}, {600, 6}, {9, 3}, {6, 3}, {12, 5}, {2, 3}} {
		counts := map[string]int{}
		for _, o := range Assign(names("cluster-", tc.clusters), names("kubefed-controller-manager-7d9f-", tc.replicas)) {
			counts[o]++
		}
		// No replica serves more than its share, rounded up: the busiest
		// replica sets the memory and bandwidth each must be given.
		room := (tc.clusters + tc.replicas - 1) / tc.replicas
		total := 0
		for r, n := range counts {
			total += n
			if n > room {
				t.Errorf("%d clusters over %d replicas: %s serves %d, more than its share %d", tc.clusters, tc.replicas, r, n, room)
			}
		}
		if total != tc.clusters {
			t.Errorf("%d of %d clusters assigned", total, tc.clusters)
		}
		if want := min(tc.clusters, tc.replicas); len(counts) != want {
			t.Errorf("%d clusters over %d replicas: %d replicas serve clusters, want %d", tc.clusters, tc.replicas, len(counts), want)
		}
	}
}

func TestAssignmentMovesLittleWhenReplicasComeAndGo(t *testing.T) {
	clusters := names("member", 600)
	three := []string{"r0", "r1", "r2"}
	before := Assign(clusters, three)

	// A replica joins: it takes its share, and few other clusters move
	// (those a replica, now with less room, no longer has room for).
	four := append(three[:3:3], "r3")
	after := Assign(clusters, four)
	moved, taken := 0, 0
	for c, o := range after {
		if o != before[c] {
			moved++
		}
		if o == "r3" {
			taken++
		}
	}
	if taken != 150 {
		t.Errorf("the fourth replica took %d of 600 clusters, want its share, 150", taken)
	}
	if moved > taken*125/100 {
		t.Errorf("%d of 600 clusters moved for the fourth replica's 150", moved)
	}

	// A replica leaves: its clusters move, spread over the rest, and few others.
	two := []string{"r0", "r2"}
	after = Assign(clusters, two)
	spread := map[string]int{}
	mine, others := 0, 0
	for c, o := range after {
		if before[c] == "r1" {
			mine++
			spread[o]++
		} else if o != before[c] {
			others++
		}
	}
	if others > mine/4 {
		t.Errorf("r1 left with %d clusters and %d others moved", mine, others)
	}
	if spread["r0"] == 0 || spread["r2"] == 0 {
		t.Errorf("r1's clusters went to %v, want both survivors", spread)
	}
}
