package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubefed-io/kubefed/pkg/placement"
	"github.com/kubefed-io/kubefed/pkg/sharding"
)

// One status writer per object across replicas.
//
// Without a channel between the replicas, each replica serving a share of
// an object's members writes its own entries of the object's status and
// records its own events: with three replicas, three status writes and
// three events per created object, where one replica makes one of each.
// With Peers, the replica that hashing names for an object (its owner, the
// one that adds and releases its finalizer) writes the whole status and
// records the events: the others send it their entries (the status they
// would apply for their members) and their per-member events, batched,
// over the peer channel; the owner writes them with its own, in one write
// per burst, and records one event for every member that answered within
// the event window. Every replica reports on each new generation of the
// object, entries the host already shows included, and the owner writes
// that generation's status once it has every replica's word (gatherPeers),
// or after peerGather.
//
// Nothing rests on the channel: a replica that sent its entries looks
// again after peerConfirmWait, and when the host does not show them yet
// (the owner went away, or wrote something else since) it sends them
// again, to whoever owns the object now, and from the second time on
// applies them itself as without peers. A message that cannot be delivered
// is applied (entries) or recorded (events) by its sender at once. Entries
// the owner holds for others are kept until written or peerEntryTTL, and
// only the current owner uses them; the sender's own check repairs a stale
// write.

// PeerChannel reaches the other live replicas; *sharding.Peers implements it.
type PeerChannel interface {
	// Identity is this replica's name.
	Identity() string
	// OwnerOf is the live replica that hashing names for name.
	OwnerOf(name string) string
	// Reachable reports whether identity is a live replica that published
	// where to reach it.
	Reachable(identity string) bool
	// Send delivers body to identity and returns once it took it.
	Send(ctx context.Context, identity string, body []byte) error
}

// peerConfirmWait is how long a replica that sent its entries to an
// object's owner waits for the host to show them before it looks again.
// Its second look past that applies them itself, which must come after
// the owner's longest wait for the others' word (peerGather) and a moment
// to write: an owner still gathering is not one that went away. With 3 s
// and the owner's wait at 6–8 s, the replicas wrote their own entries of 9
// and 11 objects in two full-speed waves of 300 Deployments, and the owner
// wrote those objects again.
const peerConfirmWait = (peerGather + 2*time.Second) / 2

// peerFailedFor is how long after a failed delivery to an object's owner a
// replica writes that object's entries itself.
const peerFailedFor = 30 * time.Second

// peerEntryTTL is how long an owner keeps entries another replica sent it.
const peerEntryTTL = 30 * time.Second

// peerGather is how long, from when it saw a new or changed object, its
// owner waits for the other replicas' word on its members, to write their
// entries with its own. A replica sends its entries once its members
// answered (within statusHold of its plan) and reported on their copies
// (within reportHold of the answer), and its plan may come later than the
// owner's by what its own queue held before it: a wait of 1 s
// wrote a new Deployment's status twice with three replicas (1.84 writes
// per object), once without the entries of members still being answered
// and again when they came.
const peerGather = statusHold + reportHold + 2*time.Second

// peerLinger is how long a message waits for more to go with it.
const peerLinger = 20 * time.Millisecond

type peerMessage struct {
	Reports []peerReport `json:"reports,omitempty"`
	Events  []peerEvent  `json:"events,omitempty"`
}

// peerReport is a replica's entries of an object's status.
type peerReport struct {
	// Type is the FederatedTypeConfig's name.
	Type string    `json:"type"`
	Key  string    `json:"key"`
	UID  types.UID `json:"uid"`
	// Generation is the object's generation the entries are for.
	Generation int64 `json:"generation,omitempty"`
	// Clusters are the members the sender speaks for; one without an
	// entry has none.
	Clusters []string `json:"clusters"`
	Entries  []any    `json:"entries,omitempty"`
	Bulk     bool     `json:"bulk,omitempty"`
}

// peerEvent is a per-member Normal event, for the owner's burst.
type peerEvent struct {
	Type       string    `json:"type"`
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	Reason     string    `json:"reason"`
	Verb       string    `json:"verb"`
	CopyKind   string    `json:"copyKind"`
	CopyName   string    `json:"copyName"`
	Cluster    string    `json:"cluster"`
	Note       string    `json:"note,omitempty"`
}

// peerSent is what a replica last sent of an object's entries.
type peerSent struct {
	owner      string
	generation int64
	entries    []any
	at         time.Time
	tries      int
	// failed is when a delivery to the owner failed.
	failed time.Time
}

// peerHeld are the entries other replicas sent for an object.
type peerHeld struct {
	uid      types.UID
	clusters map[string]peerEntry
}

type peerEntry struct {
	entry map[string]any // nil: no entry
	at    time.Time
	seq   uint64
	// generation is the object's generation the sender reported on.
	generation int64
}

// peerOwner is the replica that writes key's status, and whether it is
// another one that can be reached.
func (w *typeWorker) peerOwner(key string) (string, bool) {
	p := w.e.opts.Peers
	if p == nil {
		return "", false
	}
	owner := p.OwnerOf(w.hashName(key))
	return owner, owner != "" && owner != p.Identity() && p.Reachable(owner)
}

// ownEntries are status's entries keep accepts, in the order of their
// names.
func ownEntries(status map[string]any, keep func(string) bool) []any {
	entries, _ := sortedEntries(map[string]any{"clusters": ownPart(status, keep)["clusters"]})["clusters"].([]any)
	return entries
}

// entryNames are the names of status's entries.
func entryNames(status map[string]any) map[string]bool {
	entries, _ := status["clusters"].([]any)
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if n, _ := m["name"].(string); n != "" {
				names[n] = true
			}
		}
	}
	return names
}

// sameEntries reports whether two lists of status entries are alike, as
// sameStatus compares them.
func sameEntries(a, b []any) bool {
	return sameStatus(map[string]any{"clusters": a}, map[string]any{"clusters": b})
}

// reportToOwner sends this replica's entries of fed's status to the
// object's owner, when another replica owns it and can be reached; it
// reports whether it did (or need not), and when to look again.
func (w *typeWorker) reportToOwner(key string, fed *unstructured.Unstructured, old, status map[string]any, keep func(string) bool, bulk bool) (time.Duration, bool) {
	owner, ok := w.peerOwner(key)
	if !ok {
		return 0, false
	}
	mine := ownEntries(status, keep)
	generation := fed.GetGeneration()
	// The host cache holds digests of remote statuses: compare as
	// sameStatus does. Entries the host already shows are still sent
	// while the owner gathers the replicas' word on a change (an
	// unchanged entry is one).
	if sameEntries(ownEntries(old, keep), mine) && !gathering(fed, old) {
		// The host shows ours; the rest is the owner's to write.
		w.forgetSent(key)
		return 0, true
	}
	now := time.Now()
	w.peerMu.Lock()
	sent, ok := w.peerSent[key]
	w.peerMu.Unlock()
	if ok && now.Sub(sent.failed) < peerFailedFor {
		return 0, false
	}
	if ok && sent.owner == owner && sent.generation == generation && sameEntries(sent.entries, mine) {
		if wait := peerConfirmWait - now.Sub(sent.at); wait > 0 {
			return wait, true
		}
		if sent.tries >= 2 {
			// Sent twice and not written: ours to write.
			peerFallbacks.Inc()
			return 0, false
		}
	} else {
		sent = peerSent{}
	}
	clusters := w.spokenFor(old, status, keep)
	w.peerMu.Lock()
	w.peerSent[key] = peerSent{owner: owner, generation: generation, entries: mine, at: now, tries: sent.tries + 1}
	w.peerMu.Unlock()
	w.e.outbox.add(owner, peerMessage{Reports: []peerReport{{
		Type: w.name, Key: key, UID: fed.GetUID(), Generation: generation, Clusters: clusters, Entries: mine, Bulk: bulk,
	}}})
	peerReportsSent.Inc()
	return peerConfirmWait, true
}

// spokenFor are the members keep accepts among the joined members and
// old's and status's entries.
func (w *typeWorker) spokenFor(old, status map[string]any, keep func(string) bool) []string {
	names := entryNames(old)
	maps.Copy(names, entryNames(status))
	for _, c := range w.e.clusterSet().Names() {
		names[c] = true
	}
	out := make([]string, 0, len(names))
	for n := range names {
		if keep(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func (w *typeWorker) forgetSent(key string) {
	w.peerMu.Lock()
	delete(w.peerSent, key)
	w.peerMu.Unlock()
}

// sendFailed makes this replica write key's entries itself for a while.
func (w *typeWorker) sendFailed(key string) {
	w.peerMu.Lock()
	s := w.peerSent[key]
	s.failed = time.Now()
	w.peerSent[key] = s
	w.sweepPeersLocked(s.failed)
	w.peerMu.Unlock()
	enqueue(w.statusQueue, key, promptPriority, 0)
}

// tookReport keeps another replica's entries of an object this replica
// owns, for its next status write, and has it written.
func (w *typeWorker) tookReport(r peerReport) {
	given := w.holdReport(r)
	priority := promptPriority
	if r.Bulk {
		priority = bulkPriority
	}
	// Entries of members the object's status already lists change many
	// times a second in a rollout (their remote status): gathered over
	// statusCoalesceDelay, as a replica gathers its own members'. A
	// member's first entry, and the entries of a generation the status
	// does not show yet, which the owner may be waiting for
	// (gatherPeers), are taken at once; those of a generation the cache
	// does not show yet wait for it.
	var after time.Duration
	if w.reportWaits(r.Key, r.UID, r.Generation, given) {
		after = statusCoalesceDelay
	}
	enqueue(w.statusQueue, r.Key, priority, after)
}

// holdReport keeps r's entries, and returns them by member.
func (w *typeWorker) holdReport(r peerReport) map[string]map[string]any {
	now := time.Now()
	given := map[string]map[string]any{}
	for _, e := range r.Entries {
		if m, ok := e.(map[string]any); ok {
			if n, _ := m["name"].(string); n != "" {
				given[n] = m
			}
		}
	}
	w.peerMu.Lock()
	h := w.peerIn[r.Key]
	if h == nil || h.uid != r.UID {
		h = &peerHeld{uid: r.UID, clusters: map[string]peerEntry{}}
		w.peerIn[r.Key] = h
	}
	for _, c := range r.Clusters {
		w.peerSeq++
		h.clusters[c] = peerEntry{entry: given[c], at: now, seq: w.peerSeq, generation: r.Generation}
	}
	w.sweepPeersLocked(now)
	w.peerMu.Unlock()
	return given
}

// peerSweepEvery is how often the peer tables are swept of objects gone.
const peerSweepEvery = time.Minute

// sweepPeersLocked drops, at most every peerSweepEvery, what the peer
// tables hold of objects the host cache no longer shows and that nothing
// touched for their time to live: a report, or a failed delivery, that
// came after the object was forgotten (forgetGone) would stay for good.
// w.peerMu is held.
func (w *typeWorker) sweepPeersLocked(now time.Time) {
	if w.informer == nil || now.Sub(w.peerSwept) < peerSweepEvery {
		return
	}
	w.peerSwept = now
	gone := func(key string) bool {
		_, exists, err := w.informer.GetIndexer().GetByKey(key)
		return err == nil && !exists
	}
	for key, h := range w.peerIn {
		stale := true
		for _, e := range h.clusters {
			stale = stale && now.Sub(e.at) > peerEntryTTL
		}
		if stale && gone(key) {
			delete(w.peerIn, key)
		}
	}
	for key, s := range w.peerSent {
		if now.Sub(s.at) > peerFailedFor && now.Sub(s.failed) > peerFailedFor && gone(key) {
			delete(w.peerSent, key)
		}
	}
}

// reportWaits reports whether a report on the object at key, of uid and
// generation, giving entries of the members in given, is gathered with
// those that follow it rather than taken at once: when the cached object
// does not show that generation yet (its change brings the object's status
// sync), or shows its status of that generation (or is being deleted) and
// lists an entry for every member of given.
func (w *typeWorker) reportWaits(key string, uid types.UID, generation int64, given map[string]map[string]any) bool {
	fed := w.cachedFed(key, uid)
	if fed == nil {
		return false
	}
	if fed.GetGeneration() < generation {
		return true
	}
	status, _ := fed.Object["status"].(map[string]any)
	if fed.GetDeletionTimestamp() == nil && observedGeneration(status) < generation {
		// A report on a generation the owner may be gathering.
		return false
	}
	listed := entryNames(status)
	for c := range given {
		if !listed[c] {
			return false
		}
	}
	return true
}

// owns reports whether this replica writes the whole status of the object
// at key for every replica.
func (w *typeWorker) owns(key string) bool {
	p := w.e.opts.Peers
	return p != nil && p.OwnerOf(w.hashName(key)) == p.Identity()
}

// withPeerEntries is old with the entries other replicas sent for the
// object at key (of uid, at generation) in place of those keep does not
// accept, and the names and sequence numbers of those used. Only the
// object's owner uses them, and not those of a later generation than the
// one its cache shows (they wait for it).
func (w *typeWorker) withPeerEntries(key string, uid types.UID, generation int64, old map[string]any, keep func(string) bool) (map[string]any, map[string]uint64) {
	if keep == nil || w.e.opts.Peers == nil {
		return old, nil
	}
	w.peerMu.Lock()
	h := w.peerIn[key]
	if h == nil {
		w.peerMu.Unlock()
		return old, nil
	}
	if h.uid != uid {
		delete(w.peerIn, key)
		w.peerMu.Unlock()
		return old, nil
	}
	now := time.Now()
	use := map[string]peerEntry{}
	for c, e := range h.clusters {
		if now.Sub(e.at) > peerEntryTTL {
			delete(h.clusters, c)
			continue
		}
		if !keep(c) && e.generation <= generation {
			use[c] = e
		}
	}
	if len(h.clusters) == 0 {
		delete(w.peerIn, key)
	}
	w.peerMu.Unlock()
	if len(use) == 0 || !w.owns(key) {
		return old, nil
	}
	out := maps.Clone(old)
	if out == nil {
		out = map[string]any{}
	}
	entries, _ := old["clusters"].([]any)
	var merged []any
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if _, given := use[m["name"].(string)]; given {
				continue
			}
		}
		merged = append(merged, e)
	}
	used := make(map[string]uint64, len(use))
	for c, e := range use {
		if e.entry != nil {
			merged = append(merged, e.entry)
		}
		used[c] = e.seq
	}
	if len(merged) > 0 {
		out["clusters"] = merged
	} else {
		delete(out, "clusters")
	}
	return out, used
}

// wrotePeerEntries forgets the entries a status write carried, unless
// newer ones came meanwhile.
func (w *typeWorker) wrotePeerEntries(key string, used map[string]uint64) {
	if len(used) == 0 {
		return
	}
	w.peerMu.Lock()
	defer w.peerMu.Unlock()
	h := w.peerIn[key]
	if h == nil {
		return
	}
	for c, seq := range used {
		if e, ok := h.clusters[c]; ok && e.seq == seq {
			delete(h.clusters, c)
		}
	}
	if len(h.clusters) == 0 {
		delete(w.peerIn, key)
	}
}

// forgetPeer forgets what was sent and held of the object at key.
func (w *typeWorker) forgetPeer(key string) {
	w.peerMu.Lock()
	delete(w.peerSent, key)
	delete(w.peerIn, key)
	w.peerMu.Unlock()
}

// wroteGeneration reports whether this engine wrote the status of the
// object at key for generation (or a later one).
func (w *typeWorker) wroteGeneration(key string, generation int64) bool {
	w.statusMu.Lock()
	rec, wrote := w.statusWritten[key]
	w.statusMu.Unlock()
	return wrote && observedGeneration(rec.status) >= generation
}

// awaitsStatus reports whether the status of fed's generation is still to
// be written: fed, the object at key, is not being deleted, its status is
// of an earlier generation, and this engine has not written that
// generation's status either. Its members' events wait for that write.
func (w *typeWorker) awaitsStatus(key string, fed *unstructured.Unstructured) bool {
	status, _ := fed.Object["status"].(map[string]any)
	return gathering(fed, status) && !w.wroteGeneration(key, fed.GetGeneration())
}

// recordEvent records a per-member Normal event of fed, or sends it to the
// object's owner, which records the burst of every replica's members.
func (w *typeWorker) recordEvent(fed *unstructured.Unstructured, reason, verb, kind, name, cluster, note string) {
	key := objectKey(fed)
	if owner, ok := w.peerOwner(key); ok {
		w.e.outbox.add(owner, peerMessage{Events: []peerEvent{{
			Type: w.name, APIVersion: fed.GetAPIVersion(), Kind: fed.GetKind(), Namespace: fed.GetNamespace(),
			Name: fed.GetName(), UID: fed.GetUID(), Reason: reason, Verb: verb, CopyKind: kind, CopyName: name,
			Cluster: cluster, Note: note,
		}}})
		return
	}
	w.events.record(fed, reason, verb, kind, name, cluster, note, w.awaitsStatus(key, fed))
}

// recordPeerEvent records an event another replica sent; it waits for the
// status write of the object's generation as the cache shows it.
func (w *typeWorker) recordPeerEvent(ev peerEvent) {
	fed := &unstructured.Unstructured{}
	fed.SetAPIVersion(ev.APIVersion)
	fed.SetKind(ev.Kind)
	fed.SetNamespace(ev.Namespace)
	fed.SetName(ev.Name)
	fed.SetUID(ev.UID)
	key := objectKey(fed)
	cached := w.cachedFed(key, ev.UID)
	awaits := cached != nil && w.awaitsStatus(key, cached)
	w.events.record(fed, ev.Reason, ev.Verb, ev.CopyKind, ev.CopyName, ev.Cluster, ev.Note, awaits)
}

// cachedFed is the federated object at key as the host cache shows it, if
// it is the object uid; nil otherwise.
func (w *typeWorker) cachedFed(key string, uid types.UID) *unstructured.Unstructured {
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	if m, ok := objectMeta(obj); !ok || m.GetUID() != uid {
		return nil
	}
	fed, ok := decoded(obj)
	if !ok {
		return nil
	}
	return fed
}

// PeerMessage takes a message another replica sent; the controller-manager
// hands it the peer channel's messages.
func (e *Engine) PeerMessage(from string, body []byte) error {
	var m peerMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("a message from replica %q: %w", from, err)
	}
	// A message is taken whole or refused, so that the sender writes what
	// it carried itself at once (undelivered) instead of waiting for word
	// that does not come: refused while this replica's engine stopped (its
	// controllers restart) or does not run a type the message names yet.
	if e.ctx == nil || e.ctx.Err() != nil {
		return fmt.Errorf("a message from replica %q: this replica's engine is not running", from)
	}
	for _, ev := range m.Events {
		if e.worker(ev.Type) == nil {
			return fmt.Errorf("a message from replica %q: type %q does not run here", from, ev.Type)
		}
	}
	for _, r := range m.Reports {
		if e.worker(r.Type) == nil {
			return fmt.Errorf("a message from replica %q: type %q does not run here", from, r.Type)
		}
	}
	// Events first: a report can bring the status write that records
	// them.
	for _, ev := range m.Events {
		if w := e.worker(ev.Type); w != nil {
			w.recordPeerEvent(ev)
		}
	}
	for _, r := range m.Reports {
		if w := e.worker(r.Type); w != nil {
			w.tookReport(r)
		}
	}
	peerReportsTaken.Add(float64(len(m.Reports)))
	return nil
}

// peerOutbox batches the messages to each replica and sends them from
// one goroutine per replica.
type peerOutbox struct {
	e *Engine

	// limit is the largest message a replica takes.
	limit int

	mu      gosync.Mutex
	pending map[string]*peerMessage
	sending map[string]bool
}

func newPeerOutbox(e *Engine) *peerOutbox {
	return &peerOutbox{e: e, limit: sharding.MaxPeerMessage, pending: map[string]*peerMessage{}, sending: map[string]bool{}}
}

func (o *peerOutbox) add(to string, m peerMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.pending[to]
	if p == nil {
		p = &peerMessage{}
		o.pending[to] = p
	}
	p.Reports = append(p.Reports, m.Reports...)
	p.Events = append(p.Events, m.Events...)
	if !o.sending[to] {
		o.sending[to] = true
		go o.send(to)
	}
}

// send delivers what waits for to until nothing does.
func (o *peerOutbox) send(to string) {
	for {
		select {
		case <-o.e.ctx.Done():
		case <-time.After(peerLinger):
		}
		o.mu.Lock()
		m := o.pending[to]
		delete(o.pending, to)
		if m == nil || o.e.ctx.Err() != nil {
			o.sending[to] = false
			o.mu.Unlock()
			if m != nil {
				o.undelivered(*m)
			}
			return
		}
		o.mu.Unlock()
		o.deliver(to, *m)
	}
}

// deliver sends m to a replica: in parts, the events first, where it is
// larger than a replica takes (what gathers over peerLinger in a bulk
// fan-out, with remote statuses, can be); what cannot be sent is written
// here.
func (o *peerOutbox) deliver(to string, m peerMessage) {
	body, err := json.Marshal(m)
	if err == nil && len(body) > o.limit {
		switch {
		case len(m.Events) > 0 && len(m.Reports) > 0:
			// Events first: a report can bring the status write that
			// records them.
			o.deliver(to, peerMessage{Events: m.Events})
			o.deliver(to, peerMessage{Reports: m.Reports})
			return
		case len(m.Events) > 1:
			o.deliver(to, peerMessage{Events: m.Events[:len(m.Events)/2]})
			o.deliver(to, peerMessage{Events: m.Events[len(m.Events)/2:]})
			return
		case len(m.Reports) > 1:
			o.deliver(to, peerMessage{Reports: m.Reports[:len(m.Reports)/2]})
			o.deliver(to, peerMessage{Reports: m.Reports[len(m.Reports)/2:]})
			return
		}
		err = fmt.Errorf("a report of %d bytes, more than a replica takes (%d)", len(body), o.limit)
	}
	if err == nil {
		err = o.e.opts.Peers.Send(o.e.ctx, to, body)
	}
	if err != nil {
		if o.e.ctx.Err() == nil {
			o.e.opts.Log.V(1).Info("Cannot reach the replica that owns these objects; their entries and events are written here",
				"replica", to, "reports", len(m.Reports), "events", len(m.Events), "error", err.Error())
		}
		peerSendFailures.Inc()
		o.undelivered(m)
	}
}

// undelivered has the sender write what a message carried.
func (o *peerOutbox) undelivered(m peerMessage) {
	for _, r := range m.Reports {
		if w := o.e.worker(r.Type); w != nil {
			w.sendFailed(r.Key)
		}
	}
	for _, ev := range m.Events {
		if w := o.e.worker(ev.Type); w != nil {
			w.recordPeerEvent(ev)
		}
	}
}

// gatherPeers is, on the replica that writes the status of the object at
// key for every replica, how long to wait for the others' word on fed's
// generation before writing: while some member the placement selects and
// another replica serves has no report of this generation from it, and no
// status of this generation was written, for up to peerGather after the
// change was first seen. A new or changed object's status is then one
// write, not one per replica. With Pull members the replicas write their
// own entries, and nothing is waited for.
func (w *typeWorker) gatherPeers(key string, fed *unstructured.Unstructured, keep func(string) bool) time.Duration {
	if keep == nil {
		return 0
	}
	w.changedMu.Lock()
	c, ok := w.changed[key]
	w.changedMu.Unlock()
	if !ok || c.generation != fed.GetGeneration() {
		return 0
	}
	left := peerGather - time.Since(c.at)
	if left <= 0 {
		return 0
	}
	if w.wroteGeneration(key, fed.GetGeneration()) {
		// Written for this generation already, and the cache does not
		// show it yet: what comes now is taken as it comes.
		return 0
	}
	old, _ := fed.Object["status"].(map[string]any)
	if len(w.unreported(key, fed, old, keep)) > 0 {
		return left
	}
	return 0
}

// unreported are, on the replica that writes the status of the object at
// key for every replica, the members fed's placement selects and another
// replica serves that have no report of fed's generation from it, while
// old (the status being written over) is of an earlier generation: past
// the owner's wait for them (gatherPeers), their entries of the earlier
// generation say nothing of this one, and they are reported as still
// propagating, as a replica reports its own members that have not
// answered a new plan.
func (w *typeWorker) unreported(key string, fed *unstructured.Unstructured, old map[string]any, keep func(string) bool) map[string]bool {
	if w.e.opts.Peers == nil || w.e.anyPulled() || !gathering(fed, old) || !w.owns(key) {
		return nil
	}
	pl, err := placement.FromUnstructured(fed.Object)
	if err != nil {
		return nil
	}
	var others []string
	for _, m := range w.e.clusterSet().Select(pl).Clusters {
		if !keep(m) {
			others = append(others, m)
		}
	}
	w.peerMu.Lock()
	defer w.peerMu.Unlock()
	h := w.peerIn[key]
	out := map[string]bool{}
	for _, m := range others {
		if h == nil || h.uid != fed.GetUID() || h.clusters[m].generation < fed.GetGeneration() {
			out[m] = true
		}
	}
	return out
}

// unreportedMessage is the message of a member whose replica has not
// reported on the object's generation yet.
const unreportedMessage = "the replica serving the cluster has not reported on this generation yet"

// markUnreported is outcomes with the members of unreported as still
// propagating, added when they have no outcome.
func markUnreported(outcomes []outcome, unreported map[string]bool) []outcome {
	if len(unreported) == 0 {
		return outcomes
	}
	seen := map[string]bool{}
	for i := range outcomes {
		o := &outcomes[i]
		if unreported[o.cluster] {
			o.status, o.message, o.listed = Propagating, unreportedMessage, true
			seen[o.cluster] = true
		}
	}
	for _, m := range slices.Sorted(maps.Keys(unreported)) {
		if !seen[m] {
			outcomes = append(outcomes, outcome{cluster: m, listed: true, status: Propagating, message: unreportedMessage})
		}
	}
	return outcomes
}

// gathering reports whether the owner of fed, whose status is status,
// gathers every replica's word on fed's generation (gatherPeers): that
// status is of an earlier generation, and the object is not being deleted
// (setting its deletionTimestamp raised its generation, and no status is
// written for that one).
func gathering(fed *unstructured.Unstructured, status map[string]any) bool {
	return fed.GetDeletionTimestamp() == nil && observedGeneration(status) < fed.GetGeneration()
}

// observedGeneration is the generation a federated object's status was
// written for.
func observedGeneration(status map[string]any) int64 {
	g, _, _ := unstructured.NestedInt64(status, "observedGeneration")
	return g
}
