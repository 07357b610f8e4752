package sync

import (
	"time"

	"github.com/kubefed-io/kubefed/pkg/placement"
)

// A member that stops being Ready is reacted to after the KubeFedConfig's
// controllerDuration.unavailableDelay, as KubeFed does: until then the
// objects placed on it are not planned again, so a member back within the
// delay (an apiserver restart, a network blip) costs no plan and no status
// write for the thousands of objects it holds. Plans made meanwhile for
// other reasons (a new object, a change) see the member not ready and say
// ClusterNotReady at once; they are remembered in the spell, and only they
// are planned again when the member comes back. Past the delay every
// object placed on the member is planned again, then once more when it is
// Ready again, as before.

// unreadySpell is a member's time not Ready whose fan-out waits.
type unreadySpell struct {
	since time.Time
	timer *time.Timer
	// planned are the objects planned with the member not ready during
	// the spell: the ones to plan again should it end within the delay.
	planned map[typedKey]struct{}
}

// typedKey is a federated object's key in the type of a worker.
type typedKey struct{ typeConfig, key string }

// clusterEvent queues a change of member name; full says the change is
// more than its readiness (a join, labels, the replica serving it), which
// re-plans all its objects whatever the readiness.
func (e *Engine) clusterEvent(name string, full bool) {
	if full {
		e.unreadyMu.Lock()
		e.fullFanOut[name] = true
		e.unreadyMu.Unlock()
	}
	e.clusterEvents.Add(name)
}

// fanOutScope decides what a change of member name re-plans, given the
// cluster set now: all its objects (full), or only those in keys (none
// when the change waits for the unavailable delay or changed nothing).
func (e *Engine) fanOutScope(name string, set placement.ClusterSet, now time.Time) (keys map[typedKey]struct{}, full bool) {
	e.unreadyMu.Lock()
	defer e.unreadyMu.Unlock()
	c, joined := set.Get(name)
	fullCause := e.fullFanOut[name]
	delete(e.fullFanOut, name)
	acted, known := e.actedReady[name]
	spell := e.spells[name]
	switch {
	case !joined:
		e.endSpellLocked(name)
		delete(e.actedReady, name)
		return nil, true
	case fullCause || !known:
	case acted && !c.Ready && e.opts.UnavailableDelay > 0:
		if spell == nil {
			spell = &unreadySpell{since: now, planned: map[typedKey]struct{}{}}
			e.spells[name] = spell
		}
		if wait := spell.since.Add(e.opts.UnavailableDelay).Sub(now); wait > 0 {
			if spell.timer == nil {
				spell.timer = time.AfterFunc(wait, func() { e.clusterEvents.Add(name) })
			}
			return nil, false
		}
	case acted && c.Ready && spell != nil:
		// Back within the delay: what was planned without it meanwhile.
		e.endSpellLocked(name)
		return spell.planned, false
	case acted == c.Ready:
		// Heard twice (the health probe's listener, then the
		// KubeFedCluster's status), or a timer of a spell that ended.
		return nil, false
	}
	e.endSpellLocked(name)
	e.actedReady[name] = c.Ready
	return nil, true
}

// plannedUnready notes that a plan of the object key of typeConfig read
// member cluster as not ready, so that the object is planned again should
// the member be back within the unavailable delay. A plan that raced the
// member's return (it read the set before the member was Ready again, and
// the spell it belongs to is over) is queued again at once.
func (e *Engine) plannedUnready(cluster, typeConfig, key string) {
	if e.opts.UnavailableDelay <= 0 {
		return
	}
	k := typedKey{typeConfig, key}
	e.unreadyMu.Lock()
	if spell := e.spells[cluster]; spell != nil {
		spell.planned[k] = struct{}{}
		e.unreadyMu.Unlock()
		return
	}
	if acted := e.actedReady[cluster]; !acted {
		// Its objects were all planned as not ready, and are all planned
		// again when it is Ready.
		e.unreadyMu.Unlock()
		return
	}
	c, _ := e.clusterSet().Get(cluster)
	if !c.Ready {
		// The member's change is queued but not handled yet: its spell
		// starts here.
		e.spells[cluster] = &unreadySpell{since: time.Now(), planned: map[typedKey]struct{}{k: {}}}
		e.unreadyMu.Unlock()
		return
	}
	e.unreadyMu.Unlock()
	if w := e.worker(typeConfig); w != nil {
		enqueue(w.queue, key, bulkPriority, 0)
	}
}

func (e *Engine) endSpellLocked(name string) {
	if spell := e.spells[name]; spell != nil {
		if spell.timer != nil {
			spell.timer.Stop()
		}
		delete(e.spells, name)
	}
}

// endSpells stops the timers of every spell.
func (e *Engine) endSpells() {
	e.unreadyMu.Lock()
	defer e.unreadyMu.Unlock()
	for name := range e.spells {
		e.endSpellLocked(name)
	}
}
