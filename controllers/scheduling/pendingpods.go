package scheduling

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

// pendingFieldSelector restricts the member pod informers to pods that wait
// for a node: the only ones that can be unschedulable, and a small fraction
// of a healthy cluster's pods.
const pendingFieldSelector = "status.phase=Pending"

// PendingPods is the CapacityEstimator of the controller-manager: one
// informer per member cluster on its Pending pods, trimmed to what
// scheduling reads. A cluster's informer starts the first time the cluster
// is asked about, with the clients the Registry holds for it, restarts when
// they are rebuilt and stops when they are removed; a member that is down
// only leaves its own informer unsynced. The shared informer manager does
// not fit here: its caches select by label, and Pending is a field.
//
// It is a manager.Runnable; it answers "unknown" until started.
type PendingPods struct {
	registry *clusterclient.Registry
	// namespace limits the informers to one namespace, for a Namespaced
	// control plane whose members grant access to that namespace only;
	// empty means every namespace.
	namespace string
	logger    logr.Logger

	mu          sync.Mutex
	ctx         context.Context
	informers   map[string]*podInformer
	subscribers subscribers
}

// podInformer is the Pending pod informer of one member cluster.
type podInformer struct {
	generation uint64
	informer   cache.SharedIndexInformer
	cancel     context.CancelFunc
}

// NewPendingPods returns an estimator that reaches members through registry
// and watches pods in namespace, or in all namespaces when it is empty.
func NewPendingPods(registry *clusterclient.Registry, namespace string, logger logr.Logger) *PendingPods {
	return &PendingPods{
		registry:  registry,
		namespace: namespace,
		logger:    logger,
		informers: map[string]*podInformer{},
	}
}

// Start lets informers start, and stops them all when ctx ends.
func (p *PendingPods) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, pi := range p.informers {
		pi.cancel()
		delete(p.informers, name)
	}
	p.ctx = nil
	return nil
}

// NeedLeaderElection makes only the leader watch members' pods.
func (p *PendingPods) NeedLeaderElection() bool { return true }

// UnschedulableSince implements CapacityEstimator.
func (p *PendingPods) UnschedulableSince(clusterName, namespace string, selector labels.Selector) ([]time.Time, bool) {
	informer := p.informerFor(clusterName)
	if informer == nil || !informer.HasSynced() {
		return nil, false
	}
	objs, err := informer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, false
	}
	var out []time.Time
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if since, ok := unschedulableSince(pod); ok {
			out = append(out, since)
		}
	}
	return out, true
}

// Subscribe implements CapacityEstimator.
func (p *PendingPods) Subscribe(notify func(cluster, namespace string)) func() {
	return p.subscribers.add(notify)
}

// informerFor returns the cluster's informer, starting or restarting it as
// the Registry's clients say; nil before Start or for an unknown cluster.
func (p *PendingPods) informerFor(clusterName string) cache.SharedIndexInformer {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Clusters that left (unjoined, or Pull-mode now) are asked about no
	// more: their informers stop here, rather than retry their lists
	// against a member the control plane lets go, until leadership ends.
	for name, pi := range p.informers {
		if _, ok := p.registry.Get(name); !ok && name != clusterName {
			pi.cancel()
			delete(p.informers, name)
		}
	}
	current := p.informers[clusterName]
	clients, ok := p.registry.Get(clusterName)
	if !ok || p.ctx == nil {
		if current != nil {
			current.cancel()
			delete(p.informers, clusterName)
		}
		return nil
	}
	if current != nil && current.generation == clients.Generation() {
		return current.informer
	}
	if current != nil {
		current.cancel()
		delete(p.informers, clusterName)
	}
	// The clients' request timeout would also end every watch.
	cfg := clients.Config()
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		p.logger.Error(err, "Cannot build a client for the member's pending pods", "cluster", clusterName)
		return nil
	}
	lw := cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", p.namespace, func(o *metav1.ListOptions) {
		o.FieldSelector = pendingFieldSelector
	})
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	logger := p.logger.WithValues("cluster", clusterName)
	// Neither setter fails on an informer that has not started.
	_ = informer.SetTransform(trimPod)
	_ = informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if !errors.Is(err, context.Canceled) {
			logger.V(1).Info("List or watch of pending pods failed; retrying with backoff", "err", err.Error())
		}
	})
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { p.notifyIfUnschedulable(clusterName, obj, nil) },
		UpdateFunc: func(oldObj, newObj any) {
			p.notifyIfUnschedulable(clusterName, newObj, oldObj)
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			p.notifyIfUnschedulable(clusterName, obj, nil)
		},
	})
	ctx, cancel := context.WithCancel(klog.NewContext(p.ctx, logger))
	go informer.RunWithContext(ctx)
	p.informers[clusterName] = &podInformer{generation: clients.Generation(), informer: informer, cancel: cancel}
	return informer
}

// notifyIfUnschedulable tells subscribers about a pod that is or was
// unschedulable.
func (p *PendingPods) notifyIfUnschedulable(clusterName string, obj, old any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	_, now := unschedulableSince(pod)
	was := false
	if oldPod, ok := old.(*corev1.Pod); ok {
		_, was = unschedulableSince(oldPod)
	}
	if !now && !was {
		return
	}
	p.subscribers.notify(clusterName, pod.Namespace)
}

// subscribers are the CapacityEstimator subscribers of an estimator.
type subscribers struct {
	mu     sync.Mutex
	byID   map[int]func(cluster, namespace string)
	nextID int
}

// add subscribes notify and returns how to unsubscribe it.
func (s *subscribers) add(notify func(cluster, namespace string)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[int]func(string, string){}
	}
	id := s.nextID
	s.nextID++
	s.byID[id] = notify
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.byID, id)
	}
}

// notify tells every subscriber, outside the lock.
func (s *subscribers) notify(cluster, namespace string) {
	s.mu.Lock()
	all := make([]func(string, string), 0, len(s.byID))
	for _, f := range s.byID {
		all = append(all, f)
	}
	s.mu.Unlock()
	for _, f := range all {
		f(cluster, namespace)
	}
}

// unschedulableSince says whether the scheduler reports pod unschedulable,
// and since when: the condition's last transition, or the pod's creation
// when the condition has no time.
func unschedulableSince(pod *corev1.Pod) (time.Time, bool) {
	if pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
		return time.Time{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			return time.Time{}, false
		}
		if c.LastTransitionTime.IsZero() {
			return pod.CreationTimestamp.Time, true
		}
		return c.LastTransitionTime.Time, true
	}
	return time.Time{}, false
}

// trimPod keeps what scheduling reads of a pod, so that the cache of a
// cluster with many pending pods stays small. It is idempotent, as
// client-go requires of a transform.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			Labels:            pod.Labels,
			CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			trimmed.Status.Conditions = []corev1.PodCondition{{
				Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime,
			}}
		}
	}
	return trimmed, nil
}
