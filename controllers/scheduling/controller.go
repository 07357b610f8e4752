package scheduling

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

// ControllerName names the controller in logs and metrics, and is the
// reporting controller of its events.
const ControllerName = "replicaschedulingpreference-controller"

// Defaults of the Reconciler's knobs.
const (
	// DefaultFailoverToleration is KubeFed's unavailableDelay: how long
	// KubeFed waited before it reacted to a cluster becoming unavailable.
	DefaultFailoverToleration = time.Minute
	// DefaultUnschedulableThreshold is how long KubeFed let a pod be
	// unschedulable before it reduced the cluster's capacity.
	DefaultUnschedulableThreshold = time.Minute
	// DefaultCapacityHold keeps a capacity estimate for five minutes, so
	// that a full cluster is tried again that often, not every threshold.
	DefaultCapacityHold = 5 * time.Minute
)

// conflictRetry is how soon a preference whose federated object changed
// while it was scheduled is scheduled again: once the cache shows the
// change, which a status write, filtered from the watch, would not tell.
const conflictRetry = 200 * time.Millisecond

// maxTolerationSeconds is the longest failover toleration a Duration holds.
const maxTolerationSeconds = math.MaxInt64 / int64(time.Second)

// typeRetry is how soon a preference whose federated type is missing is
// looked at again; no event says when a CRD appears.
const typeRetry = 15 * time.Second

// Reconciler is the ReplicaSchedulingPreference controller. Set Namespace
// and Readiness, and Registry for capacity estimation; SetupWithManager
// fills in the rest.
type Reconciler struct {
	// Client reads preferences, FederatedTypeConfigs and KubeFedClusters
	// from the manager's cache and writes preference status and federated
	// objects; the manager's client by default.
	Client client.Client
	// Reader reads federated objects (unstructured); the manager's cache
	// by default, which the controller also watches them through.
	Reader client.Reader
	// APIReader reads the CustomResourceDefinitions of custom target types
	// live; the manager's API reader by default.
	APIReader client.Reader
	// Mapper tells whether the host serves a federated type.
	Mapper meta.RESTMapper
	// Recorder records failovers, restores and capacity limits on
	// preferences.
	Recorder events.EventRecorder

	// Namespace is the KubeFed namespace, where KubeFedClusters and
	// FederatedTypeConfigs count.
	Namespace string
	// ObjectNamespace, when set, limits the controller to preferences
	// and member pods of that namespace, for a Namespaced control plane.
	ObjectNamespace string

	// Readiness says which members are ready; required. The
	// controller-manager's *cluster.ReadinessTracker.
	Readiness Readiness
	// Capacity estimates members' capacity. When nil and Registry is set,
	// SetupWithManager runs a PendingPods estimator on Registry; when both
	// are nil, capacity is not estimated.
	Capacity CapacityEstimator
	// Registry holds the members' clients, for the default Capacity.
	Registry *clusterclient.Registry
	// AgentPods, when set with Registry, estimates the capacity of the
	// Pull-mode members (those Registry holds no clients for) from their
	// agents' reports, beside the default Capacity of the push members.
	AgentPods *AgentPods

	// FailoverToleration is how long a member may be not ready before its
	// replicas are planned elsewhere, unless a preference sets
	// failoverTolerationSeconds; DefaultFailoverToleration when zero.
	FailoverToleration time.Duration
	// UnschedulableThreshold is how long a pod must stay unschedulable, and
	// the replicas asked of its cluster unchanged, before it reduces the
	// cluster's capacity; DefaultUnschedulableThreshold when zero.
	UnschedulableThreshold time.Duration
	// CapacityHold is how long a capacity estimate is kept after it was
	// last confirmed; DefaultCapacityHold when zero.
	CapacityHold time.Duration
	// Clock is the time source; the real clock when nil.
	Clock clock.PassiveClock

	controller controller.Controller
	cache      cache.Cache
	types      *targetTypes

	mu sync.Mutex
	// notReadySince is when each member was first seen not ready by this
	// process; a restart starts the toleration anew, which delays a
	// failover rather than risk one for a member that recovered meanwhile.
	notReadySince map[string]time.Time
	// workloads holds what the controller remembers per preference.
	workloads map[types.NamespacedName]*workloadState
	// watched are the federated types whose objects are watched.
	watched map[schema.GroupVersionKind]bool
	// watchedNamespaces are the FederatedNamespace types watched.
	watchedNamespaces map[schema.GroupVersionKind]bool
}

// workloadState is what the controller remembers about one preference's
// workload between reconciles, per member cluster.
type workloadState struct {
	// changedAt is when the replicas asked of the cluster last changed.
	changedAt map[string]time.Time
	holds     map[string]*capacityHold
}

// SetupWithManager registers the controller, and the default capacity
// estimator, with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Readiness == nil {
		return errors.New("replica scheduling needs the member readiness tracker")
	}
	if r.Namespace == "" {
		return errors.New("replica scheduling needs the KubeFed namespace")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Reader == nil {
		r.Reader = mgr.GetCache()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.FailoverToleration <= 0 {
		r.FailoverToleration = DefaultFailoverToleration
	}
	if r.UnschedulableThreshold <= 0 {
		r.UnschedulableThreshold = DefaultUnschedulableThreshold
	}
	if r.CapacityHold <= 0 {
		r.CapacityHold = DefaultCapacityHold
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.cache = mgr.GetCache()
	r.types = &targetTypes{reader: r.APIReader, now: r.Clock.Now}
	r.notReadySince = map[string]time.Time{}
	r.workloads = map[types.NamespacedName]*workloadState{}
	r.watched = map[schema.GroupVersionKind]bool{}
	r.watchedNamespaces = map[schema.GroupVersionKind]bool{}
	if r.Capacity == nil && r.Registry != nil {
		pods := NewPendingPods(r.Registry, r.ObjectNamespace, mgr.GetLogger().WithName("pending-pods"))
		if err := mgr.Add(pods); err != nil {
			return fmt.Errorf("add the pending pod informers: %w", err)
		}
		r.Capacity = pods
		if r.AgentPods != nil {
			r.Capacity = memberPods{registry: r.Registry, push: pods, pull: r.AgentPods}
		}
	}

	inKubeFedNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	inObjectNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.ObjectNamespace == "" || o.GetNamespace() == r.ObjectNamespace
	})
	everyPreference := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.preferencesIn(ctx, r.ObjectNamespace)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("replicaschedulingpreference").
		For(&schedulingv1alpha1.ReplicaSchedulingPreference{}, builder.WithPredicates(inObjectNamespace, predicate.GenerationChangedPredicate{})).
		// A type config that appears or changes may make preferences
		// of its kind schedulable, or stop them.
		Watches(&corev1beta1.FederatedTypeConfig{}, everyPreference, builder.WithPredicates(inKubeFedNamespace, predicate.GenerationChangedPredicate{})).
		// Clusters that come and go change every preference's candidates,
		// and so do label changes when a preference intersects with a
		// clusterSelector. Health is heard from Readiness instead of the
		// status, which changes with every probe.
		Watches(&corev1beta1.KubeFedCluster{}, everyPreference, builder.WithPredicates(inKubeFedNamespace, predicate.LabelChangedPredicate{})).
		WatchesRawSource(source.Func(r.readinessEvents))
	if r.Capacity != nil {
		b = b.WatchesRawSource(source.Func(r.capacityEvents))
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	r.controller = c
	return nil
}

// readinessEvents records when members stop being ready and reconciles
// every preference when one changes.
func (r *Reconciler) readinessEvents(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	remove := r.Readiness.AddListener(cluster.ReadinessListenerFunc(func(name string, ready bool) {
		r.mu.Lock()
		if ready {
			delete(r.notReadySince, name)
		} else if _, ok := r.notReadySince[name]; !ok {
			r.notReadySince[name] = r.Clock.Now()
		}
		r.mu.Unlock()
		for _, req := range r.preferencesIn(ctx, r.ObjectNamespace) {
			q.Add(req)
		}
	}))
	go func() {
		<-ctx.Done()
		remove()
	}()
	return nil
}

// capacityEvents reconciles the preferences of a namespace whose pods in a
// member became or stopped being unschedulable.
func (r *Reconciler) capacityEvents(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	unsubscribe := r.Capacity.Subscribe(func(_, namespace string) {
		for _, req := range r.preferencesIn(ctx, namespace) {
			q.Add(req)
		}
	})
	go func() {
		<-ctx.Done()
		unsubscribe()
	}()
	return nil
}

// preferencesIn lists the preferences of namespace, or of every namespace.
func (r *Reconciler) preferencesIn(ctx context.Context, namespace string) []reconcile.Request {
	if r.ObjectNamespace != "" {
		if namespace != "" && namespace != r.ObjectNamespace {
			return nil
		}
		namespace = r.ObjectNamespace
	}
	list := &schedulingv1alpha1.ReplicaSchedulingPreferenceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Cannot list ReplicaSchedulingPreferences")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// Reconcile schedules the workload of one preference: it writes the
// preference's status and then, if they changed, the federated object's
// placement and replica overrides. The status goes first because it holds
// which clusters are failed over, which the next reconcile must know to
// read the object's overrides right.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	if err := r.Client.Get(ctx, req.NamespacedName, rsp); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !rsp.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	res, err := r.schedule(ctx, rsp, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A cluster back from a failover stays failed over in the status
	// until the object gives it its replicas back: the status is the only
	// memory of what it ran, and a write of the object that failed would
	// leave the next reconcile without it.
	first := res.outcome
	restoring := restoredClusters(rsp.Status.Clusters, res.outcome)
	if res.updated == nil {
		restoring = nil
	}
	if len(restoring) > 0 {
		first = res.outcome.failedOverStill(restoring)
	}
	if err := r.writeStatus(ctx, rsp, first); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of ReplicaSchedulingPreference %s: %w", req.NamespacedName, err)
	}
	recordEvents := func() {
		for _, e := range res.events {
			r.Recorder.Eventf(rsp, nil, corev1.EventTypeNormal, e.reason, "Schedule", "%s", e.message)
		}
	}
	if len(restoring) == 0 {
		recordEvents()
	}
	if res.updated != nil {
		if err := r.Client.Patch(ctx, res.updated, client.MergeFromWithOptions(res.original, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				// Changed since the cache showed it (the sync
				// controller's finalizer or status, a user's edit):
				// scheduled again from the object as it is now, without
				// an error's log and backoff.
				log.FromContext(ctx).V(1).Info("Federated object changed while scheduled; scheduling again", "federatedObject", req.NamespacedName)
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, fmt.Errorf("write schedule into %s %s: %w", res.updated.GetKind(), req.NamespacedName, err)
		}
		log.FromContext(ctx).V(1).Info("Wrote schedule", "federatedObject", req.NamespacedName, "kind", res.updated.GetKind())
		if len(restoring) > 0 {
			if err := r.writeStatus(ctx, rsp, res.outcome); err != nil {
				return ctrl.Result{}, fmt.Errorf("write status of ReplicaSchedulingPreference %s: %w", req.NamespacedName, err)
			}
			recordEvents()
		}
	}
	if res.recheckAt.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: res.recheckAt.Sub(now)}, nil
}

// forget drops what the controller remembers of a deleted preference.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.workloads, key)
}

// result is what schedule decided.
type result struct {
	outcome outcome
	// original and updated are the federated object before and after
	// the schedule; updated is nil when nothing changes.
	original, updated *unstructured.Unstructured
	events            []event
	// recheckAt is when to look again without an event; zero for never.
	recheckAt time.Time
}

type event struct{ reason, message string }

// stopped is a result that schedules nothing, for a preference that cannot
// be applied; retry is when to look again, or zero.
func stopped(reason, message string, now time.Time, retry time.Duration) result {
	res := result{outcome: outcome{reason: reason, message: message, stopped: true}}
	if retry > 0 {
		res.recheckAt = now.Add(retry)
	}
	return res
}

// schedule decides the schedule of one preference's workload.
func (r *Reconciler) schedule(ctx context.Context, rsp *schedulingv1alpha1.ReplicaSchedulingPreference, now time.Time) (result, error) {
	key := client.ObjectKeyFromObject(rsp)
	ftc, res, err := r.federatedType(ctx, rsp.Spec.TargetKind, now)
	if ftc == nil || err != nil {
		return res, err
	}
	if !ftc.PropagationEnabled() || !ftc.DeletionTimestamp.IsZero() {
		// As in KubeFed, whose scheduler of a kind stops with its type.
		why := "its spec.propagation is Disabled"
		if !ftc.DeletionTimestamp.IsZero() {
			why = "it is being deleted"
		}
		return stopped(ReasonTypeNotPropagated, fmt.Sprintf("FederatedTypeConfig %s does not propagate %s: %s; the federated object is left as it is", ftc.Name, rsp.Spec.TargetKind, why), now, 0), nil
	}
	fedType := ftc.Spec.FederatedType
	gvk := schema.GroupVersionKind{Group: fedType.Group, Version: fedType.Version, Kind: fedType.Kind}
	if _, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return stopped(ReasonFederatedTypeNotFound, fmt.Sprintf("the host does not serve %s, the federated type of FederatedTypeConfig %s", gvk, ftc.Name), now, typeRetry), nil
		}
		return result{}, fmt.Errorf("map %s: %w", gvk, err)
	}
	if !fedType.Namespaced() {
		return stopped(ReasonTargetTypeWithoutReplicas, fmt.Sprintf("%s is cluster-scoped; a ReplicaSchedulingPreference schedules a namespaced workload", gvk.Kind), now, 0), nil
	}
	why, err := r.types.hasReplicas(ctx, ftc.Spec.TargetType)
	if err != nil {
		return result{}, err
	}
	if why != "" {
		return stopped(ReasonTargetTypeWithoutReplicas, why, now, targetTypeTTL), nil
	}
	if err := r.watchFederatedType(gvk); err != nil {
		return result{}, err
	}

	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := r.Reader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return stopped(ReasonFederatedObjectNotFound, fmt.Sprintf("%s %s does not exist", gvk.Kind, key), now, 0), nil
		}
		return result{}, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return stopped(ReasonFederatedObjectNotFound, fmt.Sprintf("%s %s is being deleted", gvk.Kind, key), now, 0), nil
	}
	intersect := rsp.Spec.IntersectWithClusterSelector
	fo, err := readFederatedObject(obj.Object, intersect)
	if err != nil {
		return stopped(ReasonInvalidFederatedObject, fmt.Sprintf("%s %s: %v", gvk.Kind, key, err), now, 0), nil
	}
	var namespace *placement.Placement
	if intersect {
		if fo.clusterSelector == nil {
			return stopped(ReasonNoClusterSelector, fmt.Sprintf("intersectWithClusterSelector is set, but %s %s has no spec.placement.clusterSelector, which selects no cluster; its placement and overrides are left as they are", gvk.Kind, key), now, 0), nil
		}
		var stop *result
		namespace, stop, err = r.namespacePlacement(ctx, key.Namespace, now)
		if err != nil {
			return result{}, err
		}
		if stop != nil {
			return *stop, nil
		}
	}

	clusters := &corev1beta1.KubeFedClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(r.Namespace)); err != nil {
		return result{}, fmt.Errorf("list KubeFedClusters: %w", err)
	}
	members := r.members(rsp, fo, namespace, clusters.Items, now)
	if len(members) == 0 {
		// KubeFed leaves the object alone when no cluster is a
		// candidate: an empty placement would remove the workload from
		// every member, say while clusters are joined again and relabeled.
		which := "no KubeFedCluster is joined"
		if intersect {
			which = "no KubeFedCluster matches the object's spec.placement.clusterSelector"
			if namespace != nil {
				which += " and is in its namespace's placement"
			}
		}
		return stopped(ReasonNoClusters, fmt.Sprintf("%s; the placement and overrides of %s %s are left as they are", which, gvk.Kind, key), now, 0), nil
	}
	res = result{original: obj}
	res.recheckAt = r.estimateCapacities(key, fo, members, now)

	toleration := r.FailoverToleration
	if s := rsp.Spec.FailoverTolerationSeconds; s != nil {
		// Beyond what a Duration holds (292 years) it would wrap to a
		// negative toleration and fail clusters over at once.
		toleration = time.Duration(min(*s, maxTolerationSeconds)) * time.Second
	}
	d := decide(&rsp.Spec, key.String(), members, fo.current, now, toleration)
	if !d.recheckAt.IsZero() && (res.recheckAt.IsZero() || d.recheckAt.Before(res.recheckAt)) {
		res.recheckAt = d.recheckAt
	}
	r.recordChanges(key, fo.current, d.replicas, now)

	s := scheduleOf(members, d, fo.current)
	updated := obj.DeepCopy()
	changed, err := applySchedule(updated.Object, s)
	if err != nil {
		return stopped(ReasonInvalidFederatedObject, fmt.Sprintf("%s %s: %v", gvk.Kind, key, err), now, 0), nil
	}
	if changed {
		res.updated = updated
	}

	reason, message := scheduledMessage(&rsp.Spec, d)
	res.outcome = outcome{reason: reason, message: message, clusters: clusterStatus(members, d)}
	res.events = transitions(rsp.Status.Clusters, members, d)
	return res, nil
}

// scheduleOf is what the scheduler writes for decision d over members:
// every member placed, the replicas planned, and a failed-over cluster's
// override left as it is, but for a cluster that has none, which gets 0:
// without one, the template's replicas would be created there when it
// comes back, before the next schedule.
func scheduleOf(members []member, d decision, current map[string]int64) schedule {
	s := schedule{replicas: maps.Clone(d.replicas)}
	if s.replicas == nil {
		s.replicas = map[string]int64{}
	}
	for name := range d.failedOver {
		if _, ok := current[name]; !ok {
			s.replicas[name] = 0
		}
	}
	for _, m := range members {
		s.placement = append(s.placement, m.name)
	}
	return s
}

// federatedType finds the FederatedTypeConfig whose federated kind is kind;
// when there is none, or more than one, it returns nil and the result that
// says so.
func (r *Reconciler) federatedType(ctx context.Context, kind string, now time.Time) (*corev1beta1.FederatedTypeConfig, result, error) {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return nil, result{}, fmt.Errorf("list FederatedTypeConfigs: %w", err)
	}
	var found []*corev1beta1.FederatedTypeConfig
	for i := range list.Items {
		if list.Items[i].Spec.FederatedType.Kind == kind {
			found = append(found, &list.Items[i])
		}
	}
	switch len(found) {
	case 0:
		// The type config's creation triggers a reconcile.
		return nil, stopped(ReasonFederatedTypeConfigNotFound, fmt.Sprintf("no FederatedTypeConfig in %s federates kind %s", r.Namespace, kind), now, 0), nil
	case 1:
		return found[0], result{}, nil
	default:
		names := make([]string, 0, len(found))
		for _, ftc := range found {
			names = append(names, ftc.Name)
		}
		sort.Strings(names)
		return nil, stopped(ReasonAmbiguousTargetKind, fmt.Sprintf("FederatedTypeConfigs %s all federate kind %s", strings.Join(names, ", "), kind), now, 0), nil
	}
}

// watchFederatedType makes changes of the federated objects of gvk
// reconcile the preference of the same namespace and name.
func (r *Reconciler) watchFederatedType(gvk schema.GroupVersionKind) error {
	return r.watchOnce(r.watched, gvk, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{},
		predicate.NewTypedPredicateFuncs(func(o *unstructured.Unstructured) bool {
			return r.ObjectNamespace == "" || o.GetNamespace() == r.ObjectNamespace
		}))
}

// watchOnce starts watching the objects of gvk through h, unless watched
// says it was started; generation changes only pass, besides preds.
func (r *Reconciler) watchOnce(watched map[schema.GroupVersionKind]bool, gvk schema.GroupVersionKind,
	h handler.TypedEventHandler[*unstructured.Unstructured, reconcile.Request], preds ...predicate.TypedPredicate[*unstructured.Unstructured]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if watched[gvk] {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	preds = append(preds, predicate.TypedGenerationChangedPredicate[*unstructured.Unstructured]{})
	if err := r.controller.Watch(source.Kind(r.cache, obj, h, preds...)); err != nil {
		return fmt.Errorf("watch %s: %w", gvk, err)
	}
	watched[gvk] = true
	return nil
}

// namespacePlacement returns the placement of the FederatedNamespace of
// namespace, which a preference that intersects with its object's
// clusterSelector intersects with too, as KubeFed did: the propagation
// engine places a namespaced object only where its namespace is. It is nil
// (no restriction) in a Namespaced control plane, whose engine does not
// intersect either. stop, when set, is the result of a preference that
// cannot be scheduled (no FederatedNamespace, or no type for it).
func (r *Reconciler) namespacePlacement(ctx context.Context, namespace string, now time.Time) (*placement.Placement, *result, error) {
	if r.ObjectNamespace != "" {
		return nil, nil, nil
	}
	notFederated := func(why string) (*placement.Placement, *result, error) {
		res := stopped(ReasonNamespaceNotFederated, fmt.Sprintf("intersectWithClusterSelector is set and %s, so the namespace %q places nothing", why, namespace), now, 0)
		return nil, &res, nil
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.NamespacesTypeConfigName}, ftc); err != nil {
		if apierrors.IsNotFound(err) {
			return notFederated(fmt.Sprintf("there is no FederatedTypeConfig %s/%s", r.Namespace, corev1beta1.NamespacesTypeConfigName))
		}
		return nil, nil, fmt.Errorf("read FederatedTypeConfig %s: %w", corev1beta1.NamespacesTypeConfigName, err)
	}
	ft := ftc.Spec.FederatedType
	gvk := schema.GroupVersionKind{Group: ft.Group, Version: ft.Version, Kind: ft.Kind}
	if _, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			res := stopped(ReasonFederatedTypeNotFound, fmt.Sprintf("the host does not serve %s, the federated type of FederatedTypeConfig %s", gvk, ftc.Name), now, typeRetry)
			return nil, &res, nil
		}
		return nil, nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	if err := r.watchNamespaces(gvk); err != nil {
		return nil, nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: namespace}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return notFederated(fmt.Sprintf("there is no %s %s/%s", gvk.Kind, namespace, namespace))
		}
		return nil, nil, fmt.Errorf("read %s %s/%s: %w", gvk.Kind, namespace, namespace, err)
	}
	p, err := placement.FromUnstructured(obj.Object)
	if err != nil {
		res := stopped(ReasonInvalidFederatedObject, fmt.Sprintf("%s %s/%s: %v", gvk.Kind, namespace, namespace, err), now, 0)
		return nil, &res, nil
	}
	return &p, nil, nil
}

// watchNamespaces starts watching the FederatedNamespaces of kind gvk, once:
// a change of one reschedules every preference in its namespace.
func (r *Reconciler) watchNamespaces(gvk schema.GroupVersionKind) error {
	return r.watchOnce(r.watchedNamespaces, gvk, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *unstructured.Unstructured) []reconcile.Request {
		return r.preferencesIn(ctx, o.GetNamespace())
	}))
}

// members lists the candidate clusters of a preference, sorted by name,
// with their readiness: every KubeFedCluster, or with
// intersectWithClusterSelector those the object's clusterSelector matches
// and, when namespace is set, its namespace's placement places.
func (r *Reconciler) members(rsp *schedulingv1alpha1.ReplicaSchedulingPreference, fo federatedObject, namespace *placement.Placement, clusters []corev1beta1.KubeFedCluster, now time.Time) []member {
	failedOver := map[string]bool{}
	for _, c := range rsp.Status.Clusters {
		failedOver[c.Name] = c.FailedOver
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	r.mu.Lock()
	defer r.mu.Unlock()
	members := make([]member, 0, len(clusters))
	for _, c := range clusters {
		// KubeFed intersects with the selector alone: the clusters list
		// is the scheduler's own output.
		if rsp.Spec.IntersectWithClusterSelector && (fo.clusterSelector == nil || !fo.clusterSelector.Matches(labels.Set(c.Labels))) {
			continue
		}
		if namespace != nil && !namespace.Places(placement.Cluster{Name: c.Name, Labels: c.Labels}) {
			continue
		}
		m := member{name: c.Name, ready: r.Readiness.IsReady(c.Name), failedOver: failedOver[c.Name]}
		if !m.ready {
			since, ok := r.notReadySince[c.Name]
			// A cluster of that name that was removed (unjoin says it
			// is not ready) and joined again since is not ready since it
			// was created, at most: the old cluster's time would fail
			// the new one over before its first probe.
			if created := c.CreationTimestamp.Time; !ok || since.Before(created) {
				since = now
				if ok && created.Before(now) {
					since = created
				}
				r.notReadySince[c.Name] = since
			}
			m.notReadySince = since
		}
		members = append(members, m)
	}
	return members
}

// estimateCapacities sets the capacity of the ready members from their
// unschedulable pods and returns when to look again.
func (r *Reconciler) estimateCapacities(key types.NamespacedName, fo federatedObject, members []member, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := r.workload(key)
	var recheck time.Time
	known := map[string]bool{}
	for i := range members {
		m := &members[i]
		known[m.name] = true
		if !m.ready || r.Capacity == nil || fo.podSelector == nil {
			delete(state.holds, m.name)
			continue
		}
		since, _ := r.Capacity.UnschedulableSince(m.name, key.Namespace, fo.podSelector)
		changedAt, ok := state.changedAt[m.name]
		if !ok {
			// Nothing is known about the member's past: give it time
			// to settle, as after a change.
			changedAt = now
			state.changedAt[m.name] = now
		}
		hold, next := estimateCapacity(capacityInput{
			current:            fo.current[m.name],
			unschedulableSince: since,
			changedAt:          changedAt,
			hold:               state.holds[m.name],
		}, now, r.UnschedulableThreshold, r.CapacityHold)
		if hold == nil {
			delete(state.holds, m.name)
		} else {
			state.holds[m.name] = hold
			limit := hold.limit
			m.capacity = &limit
		}
		if !next.IsZero() && (recheck.IsZero() || next.Before(recheck)) {
			recheck = next
		}
	}
	for name := range state.changedAt {
		if !known[name] {
			delete(state.changedAt, name)
			delete(state.holds, name)
		}
	}
	return recheck
}

// recordChanges notes the clusters whose replicas the schedule changes.
func (r *Reconciler) recordChanges(key types.NamespacedName, current, planned map[string]int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := r.workload(key)
	for name, n := range planned {
		if was, ok := current[name]; !ok || was != n {
			state.changedAt[name] = now
		}
	}
}

// workload returns the state of a preference; r.mu must be held.
func (r *Reconciler) workload(key types.NamespacedName) *workloadState {
	state, ok := r.workloads[key]
	if !ok {
		state = &workloadState{changedAt: map[string]time.Time{}, holds: map[string]*capacityHold{}}
		r.workloads[key] = state
	}
	return state
}

// clusterStatus reports the decision per candidate cluster.
func clusterStatus(members []member, d decision) []schedulingv1alpha1.ClusterReplicas {
	out := make([]schedulingv1alpha1.ClusterReplicas, 0, len(members))
	for _, m := range members {
		c := schedulingv1alpha1.ClusterReplicas{Name: m.name, Replicas: d.replicas[m.name], FailedOver: d.failedOver[m.name]}
		if m.capacity != nil {
			limit := *m.capacity
			c.EstimatedCapacity = &limit
		}
		if !m.ready {
			// Status holds seconds; a finer time would differ from the
			// cached copy on every reconcile.
			since := metav1.NewTime(m.notReadySince).Rfc3339Copy()
			c.NotReadySince = &since
		}
		out = append(out, c)
	}
	return out
}

// transitions are the events of clusters failing over, coming back or
// getting capacity-limited in this decision.
func transitions(before []schedulingv1alpha1.ClusterReplicas, members []member, d decision) []event {
	was := map[string]schedulingv1alpha1.ClusterReplicas{}
	for _, c := range before {
		was[c.Name] = c
	}
	var events []event
	for _, m := range members {
		prev := was[m.name]
		switch {
		case d.failedOver[m.name] && !prev.FailedOver:
			events = append(events, event{EventFailedOver, fmt.Sprintf("cluster %s has not been ready since %s; its replicas are planned on other clusters", m.name, m.notReadySince.UTC().Format(time.RFC3339))})
		case m.ready && prev.FailedOver:
			events = append(events, event{EventRestored, fmt.Sprintf("cluster %s is ready again and gets replicas back", m.name)})
		}
		if m.capacity != nil && (prev.EstimatedCapacity == nil || *prev.EstimatedCapacity != *m.capacity) {
			events = append(events, event{EventCapacityLimited, fmt.Sprintf("pods that stay unschedulable in cluster %s limit it to %d replicas", m.name, *m.capacity)})
		}
	}
	return events
}

// writeStatus writes the outcome into the preference's status, if it changed.
func (r *Reconciler) writeStatus(ctx context.Context, rsp *schedulingv1alpha1.ReplicaSchedulingPreference, o outcome) error {
	status := rsp.Status.DeepCopy()
	status.ObservedGeneration = rsp.Generation
	status.Clusters = o.clusters
	if o.stopped {
		// Nothing was scheduled; the clusters failed over stay so, for
		// the schedule after this one to give them their replicas back.
		status.Clusters = nil
		for _, c := range rsp.Status.Clusters {
			if c.FailedOver {
				status.Clusters = append(status.Clusters, c)
			}
		}
	}
	meta.SetStatusCondition(&status.Conditions, o.condition(rsp.Generation))
	if equality.Semantic.DeepEqual(&rsp.Status, status) {
		return nil
	}
	rsp.Status = *status
	return r.Client.Status().Update(ctx, rsp)
}
