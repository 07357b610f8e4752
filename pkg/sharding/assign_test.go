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
	for _, tc := range []struct{ clusters, replicas int }{{300, 3}, {1000, 4}, {600, 6}} {
		counts := map[string]int{}
		for _, o := range Assign(names("cluster-", tc.clusters), names("kubefed-controller-manager-7d9f-", tc.replicas)) {
			counts[o]++
		}
		fair := tc.clusters / tc.replicas
		for r, n := range counts {
			// Rendezvous hashing balances in expectation; ±35% of the fair
			// share is far outside what a uniform hash produces at these sizes.
			if n < fair*65/100 || n > fair*135/100 {
				t.Errorf("%d clusters over %d replicas: %s serves %d, fair share %d", tc.clusters, tc.replicas, r, n, fair)
			}
		}
		if len(counts) != tc.replicas {
			t.Errorf("%d of %d replicas serve clusters", len(counts), tc.replicas)
		}
	}
}

func TestAssignmentMovesLittleWhenReplicasComeAndGo(t *testing.T) {
	clusters := names("member", 600)
	three := []string{"r0", "r1", "r2"}
	before := Assign(clusters, three)

	// A replica joins: only clusters it takes move, about a quarter.
	four := append(three[:3:3], "r3")
	after := Assign(clusters, four)
	moved := 0
	for c, o := range after {
		if o != before[c] {
			moved++
			if o != "r3" {
				t.Fatalf("cluster %s moved from %s to %s, not to the new replica", c, before[c], o)
			}
		}
	}
	if moved < 600/4*65/100 || moved > 600/4*135/100 {
		t.Errorf("%d of 600 clusters moved to the fourth replica, want about 150", moved)
	}

	// A replica leaves: only its clusters move, and they spread over the rest.
	two := []string{"r0", "r2"}
	after = Assign(clusters, two)
	spread := map[string]int{}
	for c, o := range after {
		if before[c] != "r1" && o != before[c] {
			t.Fatalf("cluster %s of %s moved to %s when r1 left", c, before[c], o)
		}
		if before[c] == "r1" {
			spread[o]++
		}
	}
	if spread["r0"] == 0 || spread["r2"] == 0 {
		t.Errorf("r1's clusters went to %v, want both survivors", spread)
	}
}
