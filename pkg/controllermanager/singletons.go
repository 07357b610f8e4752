package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// singletons runs the controllers only one replica may run at a time (the
// ReplicaSchedulingPreference and DNS controllers) when replicas scale out.
// It runs them in terms: a term starts when this replica wins the leader
// Lease and ends when it loses it or the manager stops, and a replica that
// lost the Lease stands for it again. controller-runtime's own election
// instead ends the whole manager when a renewal misses its deadline (a
// busy host apiserver is enough), and with it the replica's share of the
// members, which would all move to other replicas and back.
//
// A term's controllers are built anew by setup, on a manager that hands
// its runnables to the term instead of starting them with the manager, and
// whose cache is the manager's: the event handlers a term adds to the
// shared informers are removed when it ends, and a field index that an
// earlier term added is kept, not added again.
type singletons struct {
	mgr  manager.Manager
	lock resourcelock.Interface
	// identity is this replica's name in the Lease.
	identity            string
	lease, renew, retry time.Duration
	setup               func(manager.Manager) error
	// onLead are told when a term starts.
	onLead  []func()
	log     logr.Logger
	leading atomic.Bool
	// terms counts the terms won.
	terms   atomic.Int64
	indexMu sync.Mutex
	indexed map[indexKey]bool
}

type indexKey struct {
	gvk   schema.GroupVersionKind
	field string
}

// Leading reports whether a term is under way: this replica holds the
// leader Lease and the singleton controllers run here.
func (s *singletons) Leading() bool { return s.leading.Load() }

// NeedLeaderElection: the terms hold their own election.
func (s *singletons) NeedLeaderElection() bool { return false }

// Start stands for the Lease until ctx ends, running a term each time it
// is won. An error of a term's controllers ends it with that error.
func (s *singletons) Start(ctx context.Context) error {
	for {
		if err := s.stand(ctx); err != nil || ctx.Err() != nil {
			return err
		}
		s.log.Info("lost the leader Lease: the singleton controllers stopped; this replica keeps serving its members and stands again",
			"lease", s.lock.Describe(), "identity", s.identity)
	}
}

// stand waits to win the Lease and runs one term; it returns once the
// term's controllers have stopped, or when ctx ends before a win.
func (s *singletons) stand(ctx context.Context) error {
	// The election stops early when the term fails.
	electCtx, stopElection := context.WithCancel(ctx)
	defer stopElection()
	lock := &acquiredLock{Interface: s.lock, identity: s.identity}
	var termErr error
	done := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: s.lease,
		RenewDeadline: s.renew,
		RetryPeriod:   s.retry,
		// Given up on a clean stop, for a standby to take over at once.
		ReleaseOnCancel: true,
		Name:            LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(term context.Context) {
				defer close(done)
				if termErr = s.term(term); termErr != nil {
					stopElection()
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(electCtx)
	if !lock.acquired.Load() {
		return nil
	}
	// client-go returns without waiting for OnStartedLeading: the next
	// term must not start before this one's controllers have stopped.
	<-done
	return termErr
}

// term builds the singleton controllers and runs them until the term ends
// or one of them fails.
func (s *singletons) term(term context.Context) error {
	ctx, cancel := context.WithCancel(term)
	defer cancel()
	s.leading.Store(true)
	// Writes stop as soon as the Lease is lost, not once all has stopped.
	stopLeading := context.AfterFunc(ctx, func() { s.leading.Store(false) })
	defer func() {
		stopLeading()
		s.leading.Store(false)
	}()
	m := &termManager{Manager: s.mgr, s: s}
	defer m.removeHandlers()
	if err := s.setup(m); err != nil {
		return fmt.Errorf("set up the singleton controllers: %w", err)
	}
	n := s.terms.Add(1)
	s.log.Info("won the leader Lease: the singleton controllers start", "lease", s.lock.Describe(), "identity", s.identity, "term", n)
	for _, f := range s.onLead {
		f()
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, r := range m.runnables {
		wg.Go(func() {
			if err := r.Start(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		// A term lasts as long as the Lease, whatever its controllers do:
		// with none to run (every singleton's feature gate off), returning
		// now would leave the Lease held, and renewed, by a replica that no
		// longer says it leads, and the writes only the leader makes (the
		// KubeFedClusters' and FederatedTypeConfigs' status) would stop.
		<-ctx.Done()
	}
	return errors.Join(errs...)
}

// termManager is the replica's manager as one term's controllers see it:
// what they add runs with the term, and what they watch on the manager's
// cache is unwatched when the term ends.
type termManager struct {
	manager.Manager
	s         *singletons
	runnables []manager.Runnable

	mu       sync.Mutex
	handlers []handlerOf
}

type handlerOf struct {
	informer     cache.Informer
	registration toolscache.ResourceEventHandlerRegistration
}

// Add keeps r for the term to start.
func (m *termManager) Add(r manager.Runnable) error {
	m.runnables = append(m.runnables, r)
	return nil
}

// GetControllerOptions allows a term's controllers the names of an earlier
// term's, which controller-runtime otherwise refuses.
func (m *termManager) GetControllerOptions() config.Controller {
	o := m.Manager.GetControllerOptions()
	o.SkipNameValidation = ptr.To(true)
	return o
}

// GetCache is the manager's cache, its event handlers tracked.
func (m *termManager) GetCache() cache.Cache { return termCache{Cache: m.Manager.GetCache(), m: m} }

// GetFieldIndexer is the manager's cache, which indexes each field once.
func (m *termManager) GetFieldIndexer() client.FieldIndexer { return m.GetCache() }

func (m *termManager) track(i cache.Informer, r toolscache.ResourceEventHandlerRegistration) {
	m.mu.Lock()
	m.handlers = append(m.handlers, handlerOf{i, r})
	m.mu.Unlock()
}

// removeHandlers removes the event handlers the term added.
func (m *termManager) removeHandlers() {
	m.mu.Lock()
	handlers := m.handlers
	m.handlers = nil
	m.mu.Unlock()
	for _, h := range handlers {
		if err := h.informer.RemoveEventHandler(h.registration); err != nil {
			m.s.log.Error(err, "Removing an event handler of an ended term")
		}
	}
}

type termCache struct {
	cache.Cache
	m *termManager
}

func (c termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return termInformer{Informer: i, m: c.m}, nil
}

func (c termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return termInformer{Informer: i, m: c.m}, nil
}

// IndexField adds an index to the manager's cache unless a term did.
func (c termCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	gvk, err := apiutil.GVKForObject(obj, c.m.GetScheme())
	if err != nil {
		return err
	}
	s := c.m.s
	s.indexMu.Lock()
	defer s.indexMu.Unlock()
	key := indexKey{gvk, field}
	if s.indexed[key] {
		return nil
	}
	if err := c.Cache.IndexField(ctx, obj, field, extract); err != nil {
		return err
	}
	if s.indexed == nil {
		s.indexed = map[indexKey]bool{}
	}
	s.indexed[key] = true
	return nil
}

type termInformer struct {
	cache.Informer
	m *termManager
}

func (i termInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	r, err := i.Informer.AddEventHandler(h)
	if err == nil {
		i.m.track(i.Informer, r)
	}
	return r, err
}

func (i termInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	r, err := i.Informer.AddEventHandlerWithResyncPeriod(h, resync)
	if err == nil {
		i.m.track(i.Informer, r)
	}
	return r, err
}

func (i termInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	r, err := i.Informer.AddEventHandlerWithOptions(h, o)
	if err == nil {
		i.m.track(i.Informer, r)
	}
	return r, err
}

// leaseEvents records the election's events on the Lease through the
// events.k8s.io recorder the controllers use.
type leaseEvents struct{ recorder events.EventRecorder }

func (e leaseEvents) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	e.recorder.Eventf(obj, nil, eventType, reason, "LeaderElection", message, args...)
}
