package sync

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every replica's host cache holds every federated object, and with the
// RawResourceStatusCollection gate each status.clusters entry carries its
// copy's status (remoteStatus): what the member caches hold already, and
// about half of a FederatedDeployment's decoded size at six members. The
// host cache keeps a digest of each remote status instead. The engine
// compares the status it would write with the cached one through digests
// (sameStatus), and never writes a digest: a write that must carry entries
// it did not compute itself (another writer's, from a guarded merge patch)
// reads the object first (writeStatus).

// remoteDigestKey holds, in a cached entry, the digest of its remoteStatus.
// It is never written to the API (no CRD schema has it).
const remoteDigestKey = "kubefed.internal/remoteStatusDigest"

// remoteDigest is the digest of a remote status's JSON (object keys sorted,
// so equal values digest alike).
func remoteDigest(remote any) string {
	raw, err := json.Marshal(remote)
	if err != nil {
		// Unreachable for decoded JSON; an empty digest compares unequal
		// to every real one, which at worst writes the status again.
		return ""
	}
	sum := sha256.Sum256(raw)
	return base64.RawStdEncoding.EncodeToString(sum[:18])
}

// compactRemoteStatus puts a federated object's status in digest form: the
// host informer's transform.
func compactRemoteStatus(u *unstructured.Unstructured) {
	if status, ok := u.Object["status"].(map[string]any); ok {
		u.Object["status"] = digestForm(status)
	}
}

// digestForm is status with each entry's remoteStatus as its digest, the
// form the host cache holds; a shallow copy where anything changes.
func digestForm(status map[string]any) map[string]any {
	entries, _ := status["clusters"].([]any)
	var out []any
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		r, ok := m["remoteStatus"]
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), entries...)
		}
		c := maps.Clone(m)
		delete(c, "remoteStatus")
		c[remoteDigestKey] = remoteDigest(r)
		out[i] = c
	}
	if out == nil {
		return status
	}
	s := maps.Clone(status)
	s["clusters"] = out
	return s
}

// carriesDigests reports whether a status has an entry whose remote status
// is only a digest: it cannot be written as it is.
func carriesDigests(status map[string]any) bool {
	entries, _ := status["clusters"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if _, ok := m[remoteDigestKey]; ok {
				return true
			}
		}
	}
	return false
}
