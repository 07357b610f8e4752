package informermanager

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/rest"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// ErrUnknownCluster is returned for a cluster that was not added, so that
// callers do not mistake it for an object that does not exist.
var ErrUnknownCluster = errors.New("member cluster is not added to the informer manager")

// ErrStopped is returned by AddCluster after Stop.
var ErrStopped = errors.New("informer manager is stopped")

// ReadinessChecker says whether a member cluster is ready;
// *cluster.ReadinessTracker implements it.
type ReadinessChecker interface {
	IsReady(cluster string) bool
}

// Options configures a Manager; the zero value is usable.
type Options struct {
	// LabelSelector restricts what every informer lists and watches, in
	// the member's apiserver. Nil means kubefed.io/managed=true, the
	// objects the control plane manages; labels.Everything() caches every
	// object, for a manager whose consumers must see unlabelled ones too.
	LabelSelector labels.Selector

	// Namespace, when set, restricts every informer to one namespace: a
	// Namespaced-scope control plane's members grant no more, and only
	// namespaced resources are federated there.
	Namespace string

	// Readiness, when set, holds back a cluster's informers until the
	// cluster is first ready, so that a member that never came up costs no
	// connection attempts per resource. Once started, informers keep
	// running while the cluster is not ready: they retry on their own with
	// backoff, serve the last known state meanwhile, and resume the watch
	// without relisting when the member returns, which a restart would
	// turn into a full list of every resource. Register the Manager with
	// the tracker's AddListener so that it hears about readiness changes.
	Readiness ReadinessChecker

	// Logger receives the manager's logs and client-go's logs about its
	// informers, with the cluster and resource as values.
	Logger logr.Logger
}

// Manager shares one informer per (member cluster, resource) between every
// subscriber. It is safe for concurrent use.
//
// The informers hold full objects without managedFields, because the
// propagation engine compares them with the desired state and reads their
// status. They see only what Options.LabelSelector matches, by default the
// objects labelled kubefed.io/managed=true, so that unrelated objects in a
// member cost neither memory nor events. A Lister miss therefore means "no
// managed object of that name", not "no object": the propagation engine
// creates the object, and an AlreadyExists error tells it that an object the
// control plane does not manage is in the way. Only then does it read that
// object with Get, a live read past the cache and the selector, to adopt it
// or report the conflict as its adoption policy says; adoption is rare, so a
// live read is cheaper than caching every unmanaged object of every member.
//
// No method waits for a member: informers list, watch and retry with
// client-go's backoff (up to about a minute between attempts) in their own
// goroutines, and a member that is down, or does not serve a resource, only
// leaves its own informers unsynced. Connections to a member that vanishes
// without closing them are detected by client-go's HTTP/2 health checks
// rather than a request timeout, which would also end every watch.
type Manager struct {
	selector  string
	namespace string
	readiness ReadinessChecker
	logger    logr.Logger
	// newClient builds a member's dynamic client; tests substitute fakes.
	newClient func(*rest.Config) (dynamic.Interface, error)

	// ctx is the parent of every informer's context; Stop cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.RWMutex
	stopped  bool
	clusters map[string]*member
	// subs holds every subscription by resource and ID; it outlives
	// clusters, so that clusters added later get them too.
	subs   map[schema.GroupVersionResource]map[uint64]*subscription
	nextID uint64
}

// member is one added cluster.
type member struct {
	name string
	// watchClient has no request timeout, which would end every watch.
	watchClient dynamic.Interface
	// readClient has the caller's timeout, for Get.
	readClient dynamic.Interface
	// started is set once informers may run: at once without a
	// ReadinessChecker, else when the cluster is first ready.
	started   bool
	informers map[schema.GroupVersionResource]*resourceInformer
	// replaced are the informers of the member this one replaced (new
	// clients), until this one's of the same resource has synced: what
	// they held and the successor does not list was deleted meanwhile,
	// perhaps while their watch could not report it, and subscribers are
	// told so.
	replaced map[schema.GroupVersionResource]*resourceInformer
}

// New returns a Manager with no clusters and no subscriptions; Stop
// releases it.
func New(o Options) *Manager {
	selector := o.LabelSelector
	if selector == nil {
		selector = labels.SelectorFromSet(labels.Set{fedv1b1.ManagedByKubeFedLabelKey: fedv1b1.ManagedByKubeFedLabelValue})
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		selector:  selector.String(),
		namespace: o.Namespace,
		readiness: o.Readiness,
		logger:    o.Logger,
		newClient: func(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) },
		ctx:       ctx,
		cancel:    cancel,
		clusters:  map[string]*member{},
		subs:      map[schema.GroupVersionResource]map[uint64]*subscription{},
	}
}

// AddCluster makes the member cluster name, reached with cfg, part of every
// current and future subscription; its informers start in the background.
// Adding a name again replaces its configuration and restarts its
// informers, which replay their objects as Added events, so call it again
// only when the configuration changed (see clusterclient.Clients.Generation).
func (m *Manager) AddCluster(name string, cfg *rest.Config) error {
	// A watch lasts minutes; cfg.Timeout, which client-go applies to the
	// whole request, would cut every watch short.
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	watchClient, err := m.newClient(watchCfg)
	if err != nil {
		return fmt.Errorf("building the watch client of cluster %q: %w", name, err)
	}
	readClient, err := m.newClient(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("building the read client of cluster %q: %w", name, err)
	}
	c := &member{name: name, watchClient: watchClient, readClient: readClient, informers: map[schema.GroupVersionResource]*resourceInformer{}}

	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return fmt.Errorf("adding cluster %q: %w", name, ErrStopped)
	}
	var t teardown
	old, replaced := m.clusters[name]
	if replaced {
		c.replaced = map[schema.GroupVersionResource]*resourceInformer{}
		for gvr, ri := range old.informers {
			c.replaced[gvr] = ri
		}
		for gvr, ri := range old.replaced {
			// Replaced twice before syncing: the first one's cache is
			// what subscribers last heard of.
			if _, ok := old.informers[gvr]; !ok || !old.informers[gvr].informer.HasSynced() {
				c.replaced[gvr] = ri
			}
		}
		t.member(old)
	}
	m.clusters[name] = c
	started := m.readiness == nil || m.readiness.IsReady(name)
	if started {
		m.startMemberLocked(c)
	}
	m.mu.Unlock()

	m.logger.V(1).Info("Added member cluster to informer manager", "cluster", name, "replaced", replaced, "started", started)
	m.finish(t)
	return nil
}

// RemoveCluster stops the informers of the named cluster. When it returns,
// no handler call for the cluster is running and none will follow, and its
// Listers are gone. Removing an unknown cluster does nothing.
func (m *Manager) RemoveCluster(name string) {
	m.mu.Lock()
	var t teardown
	c, ok := m.clusters[name]
	if ok {
		delete(m.clusters, name)
		t.member(c)
	}
	m.mu.Unlock()
	m.finish(t)
	if ok {
		m.logger.V(1).Info("Removed member cluster from informer manager", "cluster", name)
	}
}

// ClusterReadinessChanged starts the informers of a cluster that became
// ready for the first time, when Options.Readiness is set; it makes the
// Manager a cluster.ReadinessListener. It returns at once.
func (m *Manager) ClusterReadinessChanged(name string, ready bool) {
	if m.readiness == nil || !ready {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clusters[name]; ok && !c.started && !m.stopped {
		m.startMemberLocked(c)
	}
}

// Subscribe calls handler for the objects of gvr in every cluster, current
// and future, starting each cluster's informer for gvr if it is the first
// subscriber. Objects already cached are replayed to handler as Added
// events. It returns at once; the returned function ends the subscription,
// stopping the informers of gvr if it was the last one, and when it returns
// no handler call of this subscription is running and none will follow.
func (m *Manager) Subscribe(gvr schema.GroupVersionResource, handler Handler) (unsubscribe func()) {
	if handler == nil {
		panic("informermanager: Subscribe with a nil Handler")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return func() {}
	}
	id := m.nextID
	m.nextID++
	if m.subs[gvr] == nil {
		m.subs[gvr] = map[uint64]*subscription{}
	}
	sub := &subscription{handler: handler}
	m.subs[gvr][id] = sub
	for _, c := range m.clusters {
		if !c.started {
			continue
		}
		if ri, ok := c.informers[gvr]; ok {
			ri.addDelivery(id, sub)
		} else {
			m.startInformerLocked(c, gvr)
		}
	}
	var once sync.Once
	return func() { once.Do(func() { m.unsubscribe(gvr, id) }) }
}

func (m *Manager) unsubscribe(gvr schema.GroupVersionResource, id uint64) {
	m.mu.Lock()
	var t teardown
	sub := m.subs[gvr][id]
	delete(m.subs[gvr], id)
	last := len(m.subs[gvr]) == 0
	if last {
		delete(m.subs, gvr)
	}
	for _, c := range m.clusters {
		ri, ok := c.informers[gvr]
		if !ok {
			continue
		}
		if last {
			delete(c.informers, gvr)
			t.informer(ri)
		} else if d, ok := ri.deliveries[id]; ok {
			delete(ri.deliveries, id)
			t.removals = append(t.removals, removal{ri, d})
		}
	}
	m.mu.Unlock()
	// Deliveries of the subscription that a concurrent RemoveCluster or
	// AddCluster took out of the maps are closed by that call, perhaps
	// after this one returns; the subscription's own gate does not wait
	// for it. Handlers may call the Manager, so not under m.mu.
	if sub != nil {
		sub.close()
	}
	m.finish(t)
}

// Lister returns a reader of the cache of gvr in cluster and whether that
// cache holds the complete initial list. It is nil when no informer runs
// for the pair: nobody subscribes to gvr, or the cluster is unknown or not
// started. Objects it returns are shared and must not be modified; a
// Lister of a stopped informer keeps returning its last state, so get a
// fresh one per use rather than keeping it.
func (m *Manager) Lister(cluster string, gvr schema.GroupVersionResource) (lister dynamiclister.Lister, synced bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ri := m.informerLocked(cluster, gvr)
	if ri == nil {
		return nil, false
	}
	return dynamiclister.New(ri.informer.GetIndexer(), gvr), ri.informer.HasSynced()
}

// HasSynced says whether the cache of gvr in cluster holds the complete
// initial list. It stays true while the member is unreachable afterwards,
// when the cache holds the last known state; cluster readiness tells that.
func (m *Manager) HasSynced(cluster string, gvr schema.GroupVersionResource) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ri := m.informerLocked(cluster, gvr)
	return ri != nil && ri.informer.HasSynced()
}

// Get reads an object from the member cluster itself, past the cache and
// the label selector, with the request timeout of the cluster's
// configuration. It is meant for the rare reads of unmanaged objects, such
// as deciding on adoption after a create failed with AlreadyExists. An
// unknown cluster yields ErrUnknownCluster.
func (m *Manager) Get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	m.mu.RLock()
	c, ok := m.clusters[cluster]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("getting %s %s/%s from cluster %q: %w", resourceLabel(gvr), namespace, name, cluster, ErrUnknownCluster)
	}
	obj, err := c.readClient.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting %s %s/%s from cluster %q: %w", resourceLabel(gvr), namespace, name, cluster, err)
	}
	return obj, nil
}

// Stop stops every informer and ends every subscription; it returns when
// all their goroutines have, and no handler is called afterwards. Later
// calls of AddCluster fail and Subscribe does nothing.
func (m *Manager) Stop() {
	m.mu.Lock()
	var t teardown
	m.stopped = true
	for name, c := range m.clusters {
		delete(m.clusters, name)
		t.member(c)
	}
	clear(m.subs)
	m.mu.Unlock()
	m.cancel()
	m.finish(t)
}

func (m *Manager) informerLocked(cluster string, gvr schema.GroupVersionResource) *resourceInformer {
	if c, ok := m.clusters[cluster]; ok {
		return c.informers[gvr]
	}
	return nil
}

// startMemberLocked starts an informer in c for every subscribed resource.
func (m *Manager) startMemberLocked(c *member) {
	c.started = true
	for gvr := range m.subs {
		m.startInformerLocked(c, gvr)
	}
}

// startInformerLocked starts the informer of gvr in c with every
// subscription of gvr; it does not wait for anything.
func (m *Manager) startInformerLocked(c *member, gvr schema.GroupVersionResource) {
	ri := newResourceInformer(c.name, gvr, c.watchClient, m.namespace, m.selector, m.logger)
	for id, sub := range m.subs[gvr] {
		ri.addDelivery(id, sub)
	}
	c.informers[gvr] = ri
	predecessor := c.replaced[gvr]
	delete(c.replaced, gvr)
	ri.run(m.ctx, func() { m.informerSynced(ri, predecessor) })
}

// informerSynced publishes ri's sync; with predecessor, the informer of
// the same cluster and resource that ri replaced, it tells ri's
// subscribers of the objects the predecessor held that ri did not list:
// deleted while the clients changed, their deletion seen by neither.
func (m *Manager) informerSynced(ri, predecessor *resourceInformer) {
	m.mu.Lock()
	// A replaced informer must not overwrite its successor's series.
	current := m.informerLocked(ri.cluster, ri.gvr) == ri
	if current {
		informerSynced.WithLabelValues(ri.cluster, resourceLabel(ri.gvr)).Set(1)
		ri.logger.V(1).Info("Member informer synced")
	}
	var deliveries []*delivery
	if current && predecessor != nil {
		for _, d := range ri.deliveries {
			deliveries = append(deliveries, d)
		}
	}
	m.mu.Unlock()
	if len(deliveries) == 0 {
		return
	}
	for _, obj := range predecessor.informer.GetStore().List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if _, exists, _ := ri.informer.GetStore().Get(u); exists {
			continue
		}
		for _, d := range deliveries {
			d.deliver(Event{Type: Deleted, Object: u})
		}
	}
}

// teardown is what is taken out of the maps under Manager.mu and stopped
// after releasing it, because stopping waits for running handlers, which
// may call the Manager.
type teardown struct {
	informers []*resourceInformer
	removals  []removal
}

// removal ends one subscription's delivery from an informer that keeps
// running for others.
type removal struct {
	ri *resourceInformer
	d  *delivery
}

// member adds every informer of c; c must be out of Manager.clusters.
func (t *teardown) member(c *member) {
	for gvr, ri := range c.informers {
		delete(c.informers, gvr)
		t.informer(ri)
	}
}

// informer adds ri, which must be out of its member's map, and cancels it
// so that it winds down while the lock is still held.
func (t *teardown) informer(ri *resourceInformer) {
	ri.cancel()
	t.informers = append(t.informers, ri)
}

func (m *Manager) finish(t teardown) {
	for _, r := range t.removals {
		r.d.close()
		// The delivery is closed, so this only frees the listener.
		if err := r.ri.informer.RemoveEventHandler(r.d.registration); err != nil {
			r.ri.logger.Error(err, "Cannot remove handler from member informer")
		}
	}
	for _, ri := range t.informers {
		for _, d := range ri.deliveries {
			d.close()
		}
	}
	for _, ri := range t.informers {
		<-ri.done
	}
	if len(t.informers) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ri := range t.informers {
		// A successor of the same cluster and resource owns the series now.
		if m.informerLocked(ri.cluster, ri.gvr) == nil {
			deleteMetrics(ri.cluster, ri.gvr)
		}
	}
}
