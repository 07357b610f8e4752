package sync

import (
	gosync "sync"

	"github.com/go-logr/logr"

	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

// MemberCaches are the shared caches of managed objects in every member,
// kept in step with the members' clients: a member's informers start when
// it is first ready and restart when its clients are rebuilt (a rotated
// token, a new endpoint). They outlive the controllers of one KubeFedConfig,
// so a configuration change does not relist every member.
type MemberCaches struct {
	*informermanager.Manager
	registry  *clusterclient.Registry
	readiness *cluster.ReadinessTracker

	// mu is read on every member write (Ensure, caches): readers share it.
	mu gosync.RWMutex
	// added is the clients' generation each member was added with.
	added map[string]uint64
	// owned, when not nil, are the only members cached: a replica that
	// serves a share of the members caches only those.
	owned map[string]bool
}

// NewMemberCaches returns member caches fed by registry's clients and
// started as readiness reports members ready. A non-empty namespace limits
// them to it, for a Namespaced-scope control plane.
func NewMemberCaches(registry *clusterclient.Registry, readiness *cluster.ReadinessTracker, namespace string, log logr.Logger) *MemberCaches {
	m := &MemberCaches{
		Manager:   informermanager.New(informermanager.Options{Readiness: readiness, Namespace: namespace, Logger: log}),
		registry:  registry,
		readiness: readiness,
		added:     map[string]uint64{},
	}
	readiness.AddListener(m)
	registry.OnChange(m.clientsChanged)
	return m
}

// clientsChanged restarts the informers of a member cached here whose
// clients were rebuilt, or stops them if its clients were dropped: a token
// rotated while the member stayed Ready changes no readiness, and the old
// informers would relist with the withdrawn token, fail, and hold a frozen
// cache that says it is synced.
func (m *MemberCaches) clientsChanged(name string) {
	m.mu.RLock()
	_, added := m.added[name]
	m.mu.RUnlock()
	if added {
		m.Ensure(name)
	}
}

// ShareOnly makes the caches hold only the members passed to Own, for a
// replica that serves a share of them. Call it before any member is added.
func (m *MemberCaches) ShareOnly() {
	m.mu.Lock()
	if m.owned == nil {
		m.owned = map[string]bool{}
	}
	m.mu.Unlock()
}

// Own starts caching a member this replica now serves.
func (m *MemberCaches) Own(name string) {
	m.mu.Lock()
	if m.owned != nil {
		m.owned[name] = true
	}
	m.mu.Unlock()
	if m.Ensure(name) {
		m.Manager.ClusterReadinessChanged(name, m.readiness.IsReady(name))
	}
}

// Disown stops caching a member served by another replica now.
func (m *MemberCaches) Disown(name string) {
	m.mu.Lock()
	share := m.owned != nil
	if share {
		delete(m.owned, name)
	}
	m.mu.Unlock()
	if share {
		m.Remove(name)
	}
}

// caches reports whether the member's objects are cached here.
func (m *MemberCaches) caches(name string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.owned == nil || m.owned[name]
}

// ClusterReadinessChanged adds a member that became ready with its current
// clients before its informers are released, and removes one that is not
// ready and has no clients any more: it left the federation (however its
// KubeFedCluster went, even while the controllers restarted), its
// credentials were withdrawn, or it is served in Pull mode. A member that
// is only unreachable keeps its caches, to go on from when it is back.
func (m *MemberCaches) ClusterReadinessChanged(name string, ready bool) {
	if !m.caches(name) {
		return
	}
	if ready {
		m.Ensure(name)
	}
	m.Manager.ClusterReadinessChanged(name, ready)
	if !ready {
		if _, ok := m.registry.Get(name); !ok {
			// Not under the tracker's notification: stopping informers
			// waits for their handlers.
			go m.removeWithoutClients(name)
		}
	}
}

// Ensure makes sure the member's informers use its current clients and
// reports whether the member has clients at all.
func (m *MemberCaches) Ensure(name string) bool {
	if !m.caches(name) {
		return false
	}
	clients, ok := m.registry.Get(name)
	m.mu.RLock()
	gen, added := m.added[name]
	m.mu.RUnlock()
	if !ok {
		if added {
			// Its clients are gone: so go the informers that used them,
			// apart from the caller, which may be one of their handlers.
			go m.removeWithoutClients(name)
		}
		return false
	}
	if added && gen == clients.Generation() {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The newest clients: another Ensure may have added newer ones than
	// those read above while this one waited for the lock.
	if clients, ok = m.registry.Get(name); !ok {
		return false
	}
	if gen, ok := m.added[name]; ok && gen == clients.Generation() {
		return true
	}
	if m.owned != nil && !m.owned[name] {
		// Disowned since caches() said yes.
		return false
	}
	if err := m.Manager.AddCluster(name, clients.Config()); err != nil {
		return false
	}
	m.added[name] = clients.Generation()
	return true
}

// removeWithoutClients removes a member's caches if it still has no
// clients when this runs, on a goroutine of its own: the member may have
// been joined again meanwhile, and its new caches must stay.
func (m *MemberCaches) removeWithoutClients(name string) {
	if _, ok := m.registry.Get(name); ok {
		return
	}
	m.Remove(name)
}

// Remove stops the caches of a member that left the federation.
func (m *MemberCaches) Remove(name string) {
	m.mu.Lock()
	delete(m.added, name)
	m.mu.Unlock()
	// Whether or not it counts as added: an Ensure during an earlier
	// Remove may have added it to the Manager after that removal took it
	// out, its record undone below; removing nothing is cheap.
	m.Manager.RemoveCluster(name)
	// An Ensure in between may have added the member again, which the
	// removal undid: it must not count as added, so that the next Ensure
	// adds it (again, if it was added after the removal).
	m.mu.Lock()
	delete(m.added, name)
	m.mu.Unlock()
}
