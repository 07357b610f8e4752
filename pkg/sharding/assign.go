package sharding

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strings"
)

// Owner is the replica that should serve cluster: the one whose hash with
// the cluster's name is highest (rendezvous hashing). Every replica that
// sees the same live replicas picks the same owner; a replica that joins
// takes only the clusters it now wins, and one that leaves hands out only
// its own, so ownership moves as little as it can. It returns "" when
// there are no replicas.
func Owner(cluster string, replicas []string) string {
	best, bestScore := "", uint64(0)
	for _, r := range replicas {
		s := score(r, cluster)
		if best == "" || s > bestScore || (s == bestScore && r < best) {
			best, bestScore = r, s
		}
	}
	return best
}

// Assign is the owner of every cluster: rendezvous hashing with bounded
// loads. Pairs of cluster and replica are taken from the highest hash down,
// each cluster going to the first replica of its pairs that has room, and a
// replica has room for at most the fair share, len(clusters)/len(replicas)
// rounded up. So no replica serves more than its share (plain rendezvous
// hashing splits 9 members 4/3/2 or worse over 3 replicas, and the busiest
// replica sets the memory every replica must be given), and ownership still
// moves little when a replica comes or goes: a cluster keeps its replica
// unless a pair ranked above it now fills that replica, or a replica that
// ranks it higher has joined. Every replica that sees the same clusters and
// live replicas computes the same owners. Owner is the same ranking for a
// single name, without the bound.
func Assign(clusters, replicas []string) map[string]string {
	clusters, replicas = sortedUnique(clusters), sortedUnique(replicas)
	out := make(map[string]string, len(clusters))
	if len(replicas) == 0 {
		for _, c := range clusters {
			out[c] = ""
		}
		return out
	}
	type pair struct {
		cluster, replica string
		score            uint64
	}
	pairs := make([]pair, 0, len(clusters)*len(replicas))
	for _, c := range clusters {
		for _, r := range replicas {
			pairs = append(pairs, pair{c, r, score(r, c)})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.cluster, b.cluster), strings.Compare(a.replica, b.replica))
	})
	room := (len(clusters) + len(replicas) - 1) / len(replicas)
	load := make(map[string]int, len(replicas))
	for _, p := range pairs {
		if _, done := out[p.cluster]; done || load[p.replica] >= room {
			continue
		}
		out[p.cluster] = p.replica
		load[p.replica]++
	}
	return out
}

// score mixes a 64-bit FNV-1a hash of replica and cluster through a
// finalizer, so that names differing in one character still score far
// apart.
func score(replica, cluster string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(replica))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(cluster))
	x := h.Sum64()
	// splitmix64's finalizer.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sortedUnique returns names sorted without duplicates or empty names.
func sortedUnique(names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}
