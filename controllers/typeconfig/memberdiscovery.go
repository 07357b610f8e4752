package typeconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
)

// Defaults of memberDiscovery.
const (
	// defaultDiscoveryTTL is how long a member's discovery is used before
	// it is read again, so that CRDs installed in members are noticed.
	defaultDiscoveryTTL = 30 * time.Second
	// discoveryTimeout bounds one discovery of a member.
	discoveryTimeout = 10 * time.Second
	// discoveryWait is the most any reconcile waits for a member's first
	// discovery; the answer, when it comes later, re-evaluates every type.
	discoveryWait = 3 * time.Second
	// discoveryRetry is how soon a failed discovery is tried again.
	discoveryRetry = 10 * time.Second
)

// errDiscoveryPending is returned for a member whose first discovery did
// not answer within discoveryWait.
var errDiscoveryPending = errors.New("discovery has not answered yet")

// member is what discovery needs of a member cluster's clients;
// *clusterclient.Clients has it.
type member interface {
	ClusterName() string
	// Generation changes when the clients are rebuilt, e.g. for new
	// credentials, which may see other APIs.
	Generation() uint64
	Discovery() (discovery.DiscoveryInterface, error)
}

// memberDiscovery caches what each member cluster serves, one discovery per
// member shared by all types. A reconcile never pays for a slow member more
// than once: a member that answered before is served from its last answer
// while a refresh runs in the background, and the wait for a first answer
// ends at the same time for every caller.
type memberDiscovery struct {
	ttl     time.Duration
	timeout time.Duration
	wait    time.Duration
	retry   time.Duration
	fetch   func(context.Context, member) (*memberAPIs, error)
	// changed is told when a member's answer changed after a discovery, so
	// that every type is evaluated again; it must not block.
	changed func(cluster string)

	mu      sync.Mutex
	entries map[string]*discoveryEntry
}

// discoveryEntry is the cached discovery of one member.
type discoveryEntry struct {
	generation uint64
	// apis is the last successful answer, nil before the first.
	apis *memberAPIs
	// err is the last discovery's error, nil when it succeeded.
	err error
	// checkedAt is when the last discovery ended; zero before the first.
	checkedAt time.Time
	// running is closed when the running discovery ends; nil when none runs.
	running chan struct{}
	// waitUntil is when callers stop waiting for the running discovery.
	waitUntil time.Time
}

func newMemberDiscovery(ttl time.Duration, changed func(string)) *memberDiscovery {
	if ttl <= 0 {
		ttl = defaultDiscoveryTTL
	}
	return &memberDiscovery{
		ttl: ttl, timeout: discoveryTimeout, wait: discoveryWait, retry: discoveryRetry,
		fetch: discoverMember, changed: changed,
		entries: map[string]*discoveryEntry{},
	}
}

// apis returns what m serves, discovering it when the cached answer is
// missing or old. It waits for a first answer until discoveryWait after
// that discovery began, or ctx ends.
func (d *memberDiscovery) apis(ctx context.Context, m member) (*memberAPIs, error) {
	name := m.ClusterName()
	now := time.Now()
	d.mu.Lock()
	e := d.entries[name]
	if e == nil || e.generation != m.Generation() {
		e = &discoveryEntry{generation: m.Generation()}
		d.entries[name] = e
	}
	if e.running == nil && d.due(e, now) {
		e.running = make(chan struct{})
		e.waitUntil = now.Add(d.wait)
		go d.discover(name, e, m, e.running)
	}
	if e.apis != nil || e.running == nil {
		apis, err := e.apis, e.err
		d.mu.Unlock()
		if apis != nil {
			return apis, nil
		}
		return nil, err
	}
	running, wait := e.running, e.waitUntil.Sub(now)
	d.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-running:
	case <-timer.C:
	case <-ctx.Done():
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case e.apis != nil:
		return e.apis, nil
	case e.running != nil:
		return nil, errDiscoveryPending
	default:
		return nil, e.err
	}
}

// due reports whether e should be discovered (again).
func (d *memberDiscovery) due(e *discoveryEntry, now time.Time) bool {
	switch {
	case e.checkedAt.IsZero():
		return true
	case e.err != nil:
		return now.Sub(e.checkedAt) >= d.retry
	default:
		return now.Sub(e.checkedAt) >= d.ttl
	}
}

// discover runs one discovery of m and records it in e, unless e was
// dropped meanwhile. It outlives the reconcile that started it, bounded
// by d.timeout, so that a slow answer still lands in the cache.
func (d *memberDiscovery) discover(name string, e *discoveryEntry, m member, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	apis, err := d.fetch(ctx, m)
	cancel()

	d.mu.Lock()
	changed := false
	if err == nil {
		changed = !apis.equal(e.apis)
		e.apis = apis
	}
	e.err = err
	e.checkedAt = time.Now()
	e.running = nil
	current := d.entries[name] == e
	d.mu.Unlock()
	// The change is reported before the waiters wake, so that a caller
	// holding the answer knows its re-evaluation is already queued.
	// d.changed never blocks.
	if changed && current && d.changed != nil {
		d.changed(name)
	}
	close(done)
}

// forget drops a member's cached discovery, for a member that became
// ready (it may have changed while it was away) or stopped being ready.
func (d *memberDiscovery) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.entries, name)
}

// discoverMember reads a member's discovery. A group version that fails
// to answer, such as an aggregated API whose server is down, is recorded
// as unknown rather than failing the whole member.
func discoverMember(ctx context.Context, m member) (*memberAPIs, error) {
	dc, err := m.Discovery()
	if err != nil {
		return nil, err
	}
	_, lists, err := discovery.ToDiscoveryInterfaceWithContext(dc).ServerGroupsAndResourcesWithContext(ctx)
	failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err)
	if err != nil && !partial {
		return nil, fmt.Errorf("discovery failed: %w", err)
	}
	return newMemberAPIs(lists, failed)
}
