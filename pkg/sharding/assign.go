package sharding

import (
	"hash/fnv"
	"slices"
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

// Assign is the owner of every cluster.
func Assign(clusters, replicas []string) map[string]string {
	out := make(map[string]string, len(clusters))
	for _, c := range clusters {
		out[c] = Owner(c, replicas)
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
