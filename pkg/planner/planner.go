package planner

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/big"
	"sort"
)

// Wildcard is the preference key that applies to every cluster without an
// entry of its own.
const Wildcard = "*"

// Preference bounds and weighs one cluster's share of the replicas.
type Preference struct {
	// MinReplicas are given to the cluster before any weighted share.
	MinReplicas int64
	// MaxReplicas caps the cluster; nil means unbounded.
	MaxReplicas *int64
	// Weight is the cluster's relative share of what is left after the
	// minimums; a cluster of weight 0 gets its minimum only.
	Weight int64
}

// Mode says what the current distribution means for the plan.
type Mode int

const (
	// KeepExisting is KubeFed's `rebalance: false`: after the minimums,
	// every cluster keeps what it runs, in preference order, as far as its
	// bounds and the total allow, and the rest is spread by weight, each
	// cluster's share taken first from what it kept (see distribute). A
	// change of the total adds or removes the difference, and the replicas
	// of a cluster that is no longer a candidate go elsewhere. With a
	// Restored cluster it plans as AvoidDisruption does, so that the
	// replicas that moved during the failover go back.
	KeepExisting Mode = iota
	// Rebalance ignores the current distribution and returns the preferred
	// one: KubeFed's `rebalance: true`.
	Rebalance
	// AvoidDisruption keeps what runs within the bounds and moves toward
	// the preferred distribution only the replicas a change forces:
	// replicas are added where the preferred distribution has more and
	// removed where it has fewer, and a cluster that joins the candidates
	// receives its preferred share at once, taken from the clusters that
	// run more than theirs. The distribution follows the preference as
	// clusters come and go, while every change moves only the replicas it
	// must.
	AvoidDisruption
)

// Input is everything a plan depends on.
type Input struct {
	// Key identifies the workload, typically "namespace/name"; hashed with
	// each cluster's name it orders clusters of equal weight, so that
	// different workloads break ties differently but each one always the
	// same way.
	Key string
	// TotalReplicas is the number of replicas to place; negative counts as
	// 0. It is an int32, as in the API, so that no sum can overflow.
	TotalReplicas int32
	// Preferences maps a cluster name or Wildcard to its preference. A
	// cluster with neither gets no replicas. Empty means
	// {"*": {Weight: 1}}.
	Preferences map[string]Preference
	// Clusters are the candidates that can receive replicas. Duplicates
	// are ignored.
	Clusters []string
	// Capacity caps a cluster at the replicas it is estimated to run;
	// clusters without an entry are unbounded.
	Capacity map[string]int64
	// Current is the replicas each cluster runs now, nil when the
	// workload has no current distribution (it is planned afresh in every
	// mode). A candidate missing from a non-nil Current runs none and, for
	// AvoidDisruption, joins. Entries of non-candidates are ignored.
	Current map[string]int64
	// Restored are clusters that come back after a failover: their Current
	// replicas are what they ran before it and are kept in preference to
	// the replicas that other clusters took over meanwhile. Rebalance
	// ignores it.
	Restored map[string]bool
	// Mode says how Current constrains the plan.
	Mode Mode
}

// Result is a plan.
type Result struct {
	// Replicas has an entry for every candidate cluster, also those
	// with 0.
	Replicas map[string]int64
	// Unplaced is the part of TotalReplicas that fits in no cluster, as
	// maximums, capacity and weights allow.
	Unplaced int64
}

// cluster is one candidate with its resolved preference.
type cluster struct {
	name     string
	hash     uint64
	eligible bool // it has a preference of its own or from Wildcard
	weight   int64
	min      int64 // the minimum, already within upper
	upper    int64 // the lesser of maximum and capacity
}

// Plan distributes in.TotalReplicas over in.Clusters.
//
// The preferred distribution is KubeFed's: clusters are ordered by weight,
// heaviest first, then by the hash of cluster name and Key; each gets its
// minimum in that order while replicas last; the rest is handed out in
// rounds (see distribute) until nothing is left or nobody has room.
// Rebalance returns it; KeepExisting runs KubeFed's planner again with the
// current distribution, and AvoidDisruption moves from the current
// distribution toward the preferred one (see Mode).
func Plan(in Input) Result {
	total := max(int64(in.TotalReplicas), 0)
	clusters := resolve(in)
	minimums, preferred := preferredPlan(clusters, total)

	var planned map[string]int64
	switch {
	case in.Mode == Rebalance || in.Current == nil:
		planned = preferred
	case in.Mode == KeepExisting && !anyRestored(in, clusters):
		_, planned = distribute(clusters, total, in.Current)
	default:
		planned = keep(in, clusters, total, minimums, preferred)
	}

	res := Result{Replicas: make(map[string]int64, len(clusters))}
	var sum int64
	for _, c := range clusters {
		res.Replicas[c.name] = planned[c.name]
		sum += planned[c.name]
	}
	res.Unplaced = total - sum
	return res
}

// resolve gives each distinct candidate its preference, bounds and hash,
// sorted in preference order: weight descending, hash ascending, name.
func resolve(in Input) []cluster {
	prefs := in.Preferences
	if len(prefs) == 0 {
		prefs = map[string]Preference{Wildcard: {Weight: 1}}
	}
	seen := make(map[string]bool, len(in.Clusters))
	clusters := make([]cluster, 0, len(in.Clusters))
	for _, name := range in.Clusters {
		if seen[name] {
			continue
		}
		seen[name] = true
		c := cluster{name: name, hash: tieBreakHash(name, in.Key)}
		p, ok := prefs[name]
		if !ok {
			p, ok = prefs[Wildcard]
		}
		if ok {
			c.eligible = true
			c.weight = max(p.Weight, 0)
			c.upper = math.MaxInt64
			if p.MaxReplicas != nil {
				c.upper = max(*p.MaxReplicas, 0)
			}
			if capacity, limited := in.Capacity[name]; limited {
				c.upper = min(c.upper, max(capacity, 0))
			}
			c.min = min(max(p.MinReplicas, 0), c.upper)
		}
		clusters = append(clusters, c)
	}
	sort.Slice(clusters, func(i, j int) bool {
		a, b := clusters[i], clusters[j]
		if a.weight != b.weight {
			return a.weight > b.weight
		}
		if a.hash != b.hash {
			return a.hash < b.hash
		}
		return a.name < b.name
	})
	return clusters
}

// tieBreakHash orders clusters of equal weight for one workload. KubeFed
// used 32-bit FNV-1 of cluster and key, whose order barely depends on the
// key when cluster names differ early (c1, c2); a prefix of SHA-256 mixes
// every byte, so that workloads really do break ties differently.
func tieBreakHash(cluster, key string) uint64 {
	h := sha256.New()
	_, _ = h.Write([]byte(cluster))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// preferredPlan returns the minimums each cluster gets and the preferred
// distribution built on them.
func preferredPlan(clusters []cluster, total int64) (minimums, plan map[string]int64) {
	return distribute(clusters, total, nil)
}

// distribute is KubeFed's planner. Each cluster, in preference order, gets
// its minimum while replicas last. With current (KubeFed's `rebalance:
// false`), each then keeps, in the same order, what it runs beyond its
// minimum as far as its bound and what is left allow: its preallocation.
// The rest is handed out in rounds: each round every cluster of weight > 0
// still open is due ceil(left × weight / Σ weights) of what was left when
// the round began (at most what is still left), taken first from its
// preallocation and only then from what is left; a cluster that would go
// past its bound is capped there and leaves, one that just reaches it stays
// for the next round's Σ weights, as in KubeFed.
func distribute(clusters []cluster, total int64, current map[string]int64) (minimums, plan map[string]int64) {
	minimums = make(map[string]int64, len(clusters))
	plan = make(map[string]int64, len(clusters))
	left := total
	for _, c := range clusters {
		m := min(c.min, left)
		minimums[c.name] = m
		plan[c.name] = m
		left -= m
	}
	prealloc := make(map[string]int64)
	for _, c := range clusters {
		n, runs := current[c.name]
		if !c.eligible || !runs || n <= plan[c.name] {
			continue
		}
		kept := max(min(min(n, c.upper)-plan[c.name], left), 0)
		prealloc[c.name] = kept
		plan[c.name] += kept
		left -= kept
	}

	var open []cluster
	for _, c := range clusters {
		if c.eligible && c.weight > 0 {
			open = append(open, c)
		}
	}
	for left > 0 && len(open) > 0 {
		weights := new(big.Int)
		for _, c := range open {
			weights.Add(weights, big.NewInt(c.weight))
		}
		round := left
		skipIdleRounds(open, round, weights, prealloc)
		next := open[:0:0]
		progressed := false
		for _, c := range open {
			start := plan[c.name]
			due := min(share(round, c.weight, weights), left)
			used := min(due, prealloc[c.name])
			prealloc[c.name] -= used
			got := start + due - used
			full := got > c.upper
			if full {
				got = c.upper
			}
			plan[c.name] = got
			left -= got - start
			progressed = progressed || used > 0 || got > start
			if !full {
				next = append(next, c)
			}
		}
		open = next
		if !progressed {
			break
		}
	}
	return minimums, plan
}

// skipIdleRounds does at once the rounds that would only use up
// preallocations: while every open cluster's preallocation covers its due,
// a round adds nothing, so left and the dues stay the same, and k such
// rounds take k dues from each. Without it a few replicas left over large
// preallocations would take one round per replica (KubeFed's planner
// loops that long).
func skipIdleRounds(open []cluster, round int64, weights *big.Int, prealloc map[string]int64) {
	rounds := int64(math.MaxInt64)
	dues := make([]int64, len(open))
	for i, c := range open {
		dues[i] = share(round, c.weight, weights)
		if dues[i] == 0 {
			continue
		}
		rounds = min(rounds, prealloc[c.name]/dues[i])
	}
	// The round itself is done by the caller, which must see it use
	// something: leave one.
	if rounds == math.MaxInt64 || rounds < 2 {
		return
	}
	for i, c := range open {
		prealloc[c.name] -= (rounds - 1) * dues[i]
	}
}

// anyRestored says whether a candidate comes back after a failover.
func anyRestored(in Input, clusters []cluster) bool {
	for _, c := range clusters {
		if in.Restored[c.name] {
			return true
		}
	}
	return false
}

// share is ceil(n × weight / weights), computed without overflow; it is at
// most n because weight ≤ weights.
func share(n, weight int64, weights *big.Int) int64 {
	q := new(big.Int).Mul(big.NewInt(n), big.NewInt(weight))
	q.Add(q, weights)
	q.Sub(q, big.NewInt(1))
	q.Quo(q, weights)
	return q.Int64()
}

// keep plans from the current distribution: what runs is kept within the
// bounds, clusters that join under AvoidDisruption claim their preferred
// share, minimums are met, and the sum is then brought to total by adding
// replicas only where the preferred plan has more and removing them only
// where it has fewer.
func keep(in Input, clusters []cluster, total int64, minimums, preferred map[string]int64) map[string]int64 {
	plan := make(map[string]int64, len(clusters))
	protected := make(map[string]bool)
	var sum int64
	for _, c := range clusters {
		var n int64
		current, runs := in.Current[c.name]
		switch {
		case !c.eligible:
		case !runs && in.Mode == AvoidDisruption:
			n = preferred[c.name]
			protected[c.name] = true
		default:
			// Nothing runs more than total, which also keeps sums small.
			n = min(max(current, 0), c.upper, total)
			protected[c.name] = in.Restored[c.name]
		}
		n = max(n, minimums[c.name])
		plan[c.name] = n
		sum += n
	}

	if sum > total {
		excess := sum - total
		// Clusters come down to their preferred share first, those that
		// did not just return or join before those that did, so that the
		// replicas others took over during a failover are the first to
		// go; only then, in the same order, down to their minimums. The
		// least preferred clusters give first.
		for _, step := range []struct {
			protected bool
			floor     map[string]int64
		}{{false, preferred}, {true, preferred}, {false, minimums}, {true, minimums}} {
			for i := len(clusters) - 1; i >= 0 && excess > 0; i-- {
				name := clusters[i].name
				if protected[name] != step.protected {
					continue
				}
				cut := min(max(plan[name]-step.floor[name], 0), excess)
				plan[name] -= cut
				excess -= cut
			}
		}
	}
	if sum < total {
		missing := total - sum
		for _, c := range clusters {
			if missing == 0 {
				break
			}
			add := min(max(preferred[c.name]-plan[c.name], 0), missing)
			plan[c.name] += add
			missing -= add
		}
	}
	return plan
}
