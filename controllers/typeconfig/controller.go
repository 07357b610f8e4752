package typeconfig

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

// TypeRunner starts and stops the machinery that propagates one federated
// type (and collects its status). The propagation engine implements it.
type TypeRunner interface {
	// StartType starts propagating the type; it must not block on member clusters.
	StartType(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) error
	// StopType stops the type's machinery; stopping a type that is not running is a no-op.
	StopType(name string)
}

// Condition type and reasons on FederatedTypeConfig status.
const (
	ConditionReady = "Ready"

	ReasonRunning                = "Running"
	ReasonPropagationDisabled    = "PropagationDisabled"
	ReasonPushReconcilerDisabled = "PushReconcilerDisabled"
	ReasonNamespacesNotEnabled   = "NamespaceTypeNotEnabled"
	ReasonTargetTypeNotFound     = "TargetTypeNotFound"
	ReasonFederatedTypeNotFound  = "FederatedTypeNotFound"
	ReasonStartFailed            = "StartFailed"
	// ReasonClusterScopedType: a Namespaced control plane propagates only
	// namespaced types, within its namespace.
	ReasonClusterScopedType = "ClusterScopedTypeInNamespacedScope"
)

// missingTypeRetry is how soon a type whose CRD is missing is checked again.
const missingTypeRetry = 15 * time.Second

// DefaultRecheckInterval is how often every type is evaluated again while
// members are tracked, so that a target type installed in or removed from a
// member is noticed without any event on the host.
const DefaultRecheckInterval = time.Minute

// Reconciler is the FederatedTypeConfig controller.
type Reconciler struct {
	Client    client.Client
	Mapper    meta.RESTMapper
	Recorder  events.EventRecorder
	Runner    TypeRunner
	Namespace string
	// Scope is the control plane's, the KubeFedConfig's spec.scope; empty
	// means Cluster. A Namespaced control plane runs no cluster-scoped type.
	Scope corev1beta1.Scope
	// PushReconciler is the feature gate that switches all propagation on.
	PushReconciler bool
	// StatusCollection is the RawResourceStatusCollection feature gate.
	StatusCollection bool

	// Readiness and Registry, when both are set, are the member clusters:
	// each type's status then says which ready members serve its target
	// type. Without them the status leaves that out.
	Readiness *cluster.ReadinessTracker
	Registry  *clusterclient.Registry
	// RecheckInterval is how often each type is evaluated again while
	// members are tracked; zero means DefaultRecheckInterval.
	RecheckInterval time.Duration
	// MemberDiscoveryTTL is how long a member's discovery is reused; zero
	// means 30 seconds.
	MemberDiscoveryTTL time.Duration
	// Leader, when set, makes the controller run on every replica, each
	// starting and stopping its own propagation of the types, while only
	// the one it reports as the leader writes finalizers, status and
	// events. Nil: only the leader runs.
	Leader func() bool

	mu      sync.Mutex
	running map[string]corev1beta1.FederatedTypeConfigSpec

	// members caches what each member serves; nil when members are not tracked.
	members *memberDiscovery
	// everyType carries requests to re-evaluate every type (Lead, a
	// changed member discovery); nil when neither can happen.
	everyType chan event.GenericEvent

	// APIReader reads the ConfigMap of propagating types past the cache,
	// which does not hold ConfigMaps; the manager's when nil.
	APIReader client.Reader
	// publishMu guards published, publishForbidden, admission and
	// configSeen.
	publishMu sync.Mutex
	// published is the ConfigMap's data as this leader last wrote or
	// found it, at publishedAt; nil until then, and again once leading
	// starts.
	published        map[string]string
	publishedAt      time.Time
	publishForbidden bool
	// admission is what this leader knows of each federated
	// group-version's admission, by group-version (publishPropagating);
	// learned again once leading starts.
	admission map[string]*gvAdmission
	// configSeen is whether this process found the control plane's
	// KubeFedConfig to own the ConfigMap: once it is gone (helm uninstall
	// deletes it before the controller-manager), the ConfigMap is not made
	// again without an owner to take it away.
	configSeen bool
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("federatedtypeconfig-controller")
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.running = map[string]corev1beta1.FederatedTypeConfigSpec{}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	// Every namespaced type waits for the namespaces type: a change of it
	// re-evaluates them all.
	onNamespacesType := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetName() != corev1beta1.NamespacesTypeConfigName {
			return nil
		}
		return r.allTypeConfigs(ctx)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("federatedtypeconfig").
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(r.Leader == nil)}).
		For(&corev1beta1.FederatedTypeConfig{}, builder.WithPredicates(inNamespace, predicate.GenerationChangedPredicate{})).
		Watches(&corev1beta1.FederatedTypeConfig{}, onNamespacesType, builder.WithPredicates(inNamespace))
	if r.Leader != nil || r.tracksMembers() {
		// A changed member discovery, or a replica that starts leading,
		// re-evaluates every type. One pending event enqueues them all
		// when delivered, so a full buffer loses nothing and no sender
		// ever blocks.
		r.everyType = make(chan event.GenericEvent, 1)
		b = b.WatchesRawSource(source.Channel(r.everyType, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			return r.allTypeConfigs(ctx)
		})))
	}
	if r.tracksMembers() {
		r.members = newMemberDiscovery(r.MemberDiscoveryTTL, func(string) { r.reevaluateAll() })
		// A member that comes or goes changes every type's presence. Its
		// cached discovery is dropped before the types are enqueued, so
		// that their reconciles ask it again: a member coming back may
		// serve other APIs than before it left.
		onReadiness := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			r.members.forget(o.GetName())
			return r.allTypeConfigs(ctx)
		})
		b = b.WatchesRawSource(cluster.ReadinessSource(r.Readiness, onReadiness))
	}
	return b.Complete(r)
}

// Lead re-evaluates every type once this replica leads: a replica that
// did not lead skipped the finalizers, status and events, and nothing else
// brings an unchanged FederatedTypeConfig back. One pending request covers
// every call before it is delivered.
func (r *Reconciler) Lead() {
	// Another leader may have written the ConfigMap meanwhile, and a
	// type's CustomResourceDefinition may have been made anew.
	r.publishMu.Lock()
	r.published, r.admission = nil, nil
	r.publishMu.Unlock()
	r.reevaluateAll()
}

// reevaluateAll enqueues every type, without blocking.
func (r *Reconciler) reevaluateAll() {
	if r.everyType == nil {
		return
	}
	select {
	case r.everyType <- event.GenericEvent{Object: &corev1beta1.FederatedTypeConfig{}}:
	default:
	}
}

// tracksMembers reports whether the type's presence in members is reported.
func (r *Reconciler) tracksMembers() bool { return r.Readiness != nil && r.Registry != nil }

// allTypeConfigs is a request for every FederatedTypeConfig of the namespace.
func (r *Reconciler) allTypeConfigs(ctx context.Context) []reconcile.Request {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, ftc := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ftc)})
	}
	return reqs
}

// Running lists the types whose machinery runs.
func (r *Reconciler) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.running))
	for n := range r.running {
		names = append(names, n)
	}
	return names
}

// Reconcile brings one type's machinery in line with its FederatedTypeConfig.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	writes := r.Leader == nil || r.Leader()
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, ftc); err != nil {
		if apierrors.IsNotFound(err) {
			r.stop(req.Name)
			forgetPresence(req.Name)
			if writes {
				// A type gone waits for no probe.
				_, err := r.publishPropagating(ctx, req.Name, nil)
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !ftc.DeletionTimestamp.IsZero() {
		r.stop(ftc.Name)
		forgetPresence(ftc.Name)
		if writes {
			// The type stops: objects created from now on get no
			// finalizer from the policy either.
			if _, err := r.publishPropagating(ctx, ftc.Name, ftc); err != nil {
				return ctrl.Result{}, err
			}
		}
		if writes && controllerutil.RemoveFinalizer(ftc, corev1beta1.FederatedTypeConfigFinalizer) {
			if err := r.Client.Update(ctx, ftc); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("remove finalizer from FederatedTypeConfig %s: %w", ftc.Name, err)
			}
		}
		return ctrl.Result{}, nil
	}
	if writes && controllerutil.AddFinalizer(ftc, corev1beta1.FederatedTypeConfigFinalizer) {
		if err := r.Client.Update(ctx, ftc); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to FederatedTypeConfig %s: %w", ftc.Name, err)
		}
	}

	verdict := r.decide(ctx, ftc)
	var startErr error
	if verdict.run {
		startErr = r.ensureRunning(ctx, ftc)
		if startErr != nil {
			verdict = decision{reason: ReasonStartFailed, message: startErr.Error()}
		}
	} else {
		r.stop(ftc.Name)
	}
	if !writes {
		// The leader reports; this replica only runs its share.
		if startErr != nil {
			return ctrl.Result{}, startErr
		}
		if verdict.retry {
			return ctrl.Result{RequeueAfter: missingTypeRetry}, nil
		}
		return ctrl.Result{}, nil
	}
	if verdict.warn {
		r.Recorder.Eventf(ftc, nil, corev1.EventTypeWarning, verdict.reason, "Reconcile", "%s", verdict.message)
	}
	// Presence in members is reported, not acted on: a type missing in some
	// members still runs, and propagation reports those members.
	var presence *targetPresence
	if r.tracksMembers() {
		presence = r.reportPresence(ctx, ftc)
	}
	if err := r.writeStatus(ctx, ftc, verdict, presence); err != nil {
		return ctrl.Result{}, err
	}
	wait, err := r.publishPropagating(ctx, ftc.Name, ftc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if startErr != nil {
		return ctrl.Result{}, startErr
	}
	var result ctrl.Result
	switch {
	case verdict.retry:
		result.RequeueAfter = missingTypeRetry
	case r.tracksMembers():
		result.RequeueAfter = r.recheckInterval()
	}
	return comeBack(result, wait), nil
}

// comeBack is result, coming back within wait when wait > 0: the type is
// not listed for the sync-finalizer policy yet (publishPropagating).
func comeBack(result ctrl.Result, wait time.Duration) ctrl.Result {
	if wait > 0 && (result.RequeueAfter == 0 || result.RequeueAfter > wait) {
		result.RequeueAfter = wait
	}
	return result
}

func (r *Reconciler) recheckInterval() time.Duration {
	if r.RecheckInterval > 0 {
		return r.RecheckInterval
	}
	return DefaultRecheckInterval
}

// reportPresence finds out which ready members serve the type's target
// type, warns when the members missing it changed, and exports the metric.
func (r *Reconciler) reportPresence(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) *targetPresence {
	found := r.checkPresence(ctx, ftc.Spec.TargetType)
	p := summarizePresence(found)
	if p.newlyMissing(ftc.Status.TargetTypeClusterStatus) {
		r.Recorder.Eventf(ftc, nil, corev1.EventTypeWarning, ReasonTargetTypeNotPresent, "CheckMembers", "%s",
			missingMessage(ftc.Spec.TargetType, found))
	}
	publishPresence(ftc.Name, p.clusters)
	return &p
}

// checkPresence asks every ready member, concurrently, whether it serves
// the target type. It returns within discoveryWait whatever the members do.
func (r *Reconciler) checkPresence(ctx context.Context, target corev1beta1.APIResource) []clusterPresence {
	names := r.Readiness.ReadyClusters()
	found := make([]clusterPresence, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { found[i] = r.presenceIn(ctx, name, target) })
	}
	wg.Wait()
	return found
}

func (r *Reconciler) presenceIn(ctx context.Context, name string, target corev1beta1.APIResource) clusterPresence {
	clients, ok := r.Registry.Get(name)
	if !ok {
		// The cluster controller builds the clients before it reports a
		// member ready; this is a member removed a moment ago.
		return clusterPresence{cluster: name, problem: "no client for the cluster"}
	}
	apis, err := r.members.apis(ctx, clients)
	if err != nil {
		return clusterPresence{cluster: name, problem: err.Error()}
	}
	present, err := apis.serves(target)
	if err != nil {
		return clusterPresence{cluster: name, problem: err.Error()}
	}
	return clusterPresence{cluster: name, present: present}
}

// decision is whether a type should run, and if not, why.
type decision struct {
	run     bool
	reason  string
	message string
	warn    bool // a problem for the user, reported as a warning event
	retry   bool // may resolve by itself (a CRD being installed)
}

func (r *Reconciler) decide(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) decision {
	if !ftc.PropagationEnabled() {
		return decision{reason: ReasonPropagationDisabled, message: "spec.propagation is Disabled"}
	}
	if !r.PushReconciler {
		return decision{reason: ReasonPushReconcilerDisabled, message: "the PushReconciler feature gate is disabled in the KubeFedConfig"}
	}
	if d, ok := r.inScope(ftc); !ok {
		return d
	}
	if ftc.Spec.TargetType.Namespaced() && !ftc.IsNamespace() {
		if d, ok := r.namespacesRun(ctx, ftc); !ok {
			return d
		}
	}
	if err := r.served(ftc.Spec.TargetType); err != nil {
		if errors.Is(err, errScopeMismatch) {
			return decision{reason: ReasonTargetTypeNotFound, warn: true, message: fmt.Sprintf("spec.targetType: %v", err)}
		}
		return decision{reason: ReasonTargetTypeNotFound, warn: true, retry: true,
			message: fmt.Sprintf("the host cluster does not serve the target type: %v", err)}
	}
	if err := r.served(ftc.Spec.FederatedType); err != nil {
		if errors.Is(err, errScopeMismatch) {
			return decision{reason: ReasonFederatedTypeNotFound, warn: true, message: fmt.Sprintf("spec.federatedType: %v", err)}
		}
		return decision{reason: ReasonFederatedTypeNotFound, warn: true, retry: true,
			message: fmt.Sprintf("the host cluster does not serve the federated type (install its CRD, e.g. with kubefedctl enable): %v", err)}
	}
	return decision{run: true, reason: ReasonRunning, message: "propagation controller running"}
}

// inScope reports whether ftc's types are within the control plane's
// scope, and if not, why. A Namespaced control plane lists federated objects
// in its namespace only and is granted nothing cluster-scoped in members, so
// a cluster-scoped type would fail every list and write; KubeFed left such a
// type NotRunning too. The namespaces type is the exception: its target,
// Namespace, is cluster-scoped, but the engine ignores the FederatedNamespace
// of the KubeFed namespace, the only one it lists, and writes nothing.
func (r *Reconciler) inScope(ftc *corev1beta1.FederatedTypeConfig) (decision, bool) {
	if r.Scope != corev1beta1.NamespaceScoped {
		return decision{}, true
	}
	var clusterScoped []string
	name := func(what string, a corev1beta1.APIResource) string {
		return fmt.Sprintf("%s %s", what, schema.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: a.Kind})
	}
	if !ftc.Spec.TargetType.Namespaced() && !ftc.IsNamespace() {
		clusterScoped = append(clusterScoped, name("target type", ftc.Spec.TargetType))
	}
	if !ftc.Spec.FederatedType.Namespaced() {
		clusterScoped = append(clusterScoped, name("federated type", ftc.Spec.FederatedType))
	}
	if len(clusterScoped) == 0 {
		return decision{}, true
	}
	verb := "is"
	if len(clusterScoped) > 1 {
		verb = "are"
	}
	return decision{reason: ReasonClusterScopedType,
		message: fmt.Sprintf("the %s %s cluster-scoped, and a Namespaced control plane (KubeFedConfig spec.scope) propagates only namespaced types, within namespace %q",
			strings.Join(clusterScoped, " and the "), verb, r.Namespace)}, false
}

// namespacesRun reports whether the namespaced type ftc may run as far as
// the namespaces type is concerned, and if not, why. As in KubeFed, the
// namespaces FederatedTypeConfig must exist. In a Cluster-scoped control
// plane the engine places a namespaced type's objects by their
// FederatedNamespace: with the namespaces type Enabled, from that type's
// own cache, so it must run, not only be enabled (its status, which this
// controller writes, says so for its current generation, and a change of
// it re-evaluates every type); with it Disabled (KubeFed's choice for
// members whose namespaces are made otherwise), from a cache of the
// engine's own, so its federated type must be served. A Namespaced control
// plane reads the FederatedNamespace of its namespace (which limits
// placement when there is one) from either cache, so there too the
// federated type must be served.
func (r *Reconciler) namespacesRun(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) (decision, bool) {
	ns := &corev1beta1.FederatedTypeConfig{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.NamespacesTypeConfigName}, ns)
	if err != nil || !ns.DeletionTimestamp.IsZero() {
		return decision{reason: ReasonNamespacesNotEnabled, warn: true,
			message: fmt.Sprintf("namespaced type %s waits for the FederatedTypeConfig %q",
				ftc.Name, corev1beta1.NamespacesTypeConfigName)}, false
	}
	if r.Scope == corev1beta1.NamespaceScoped || !ns.PropagationEnabled() {
		if err := r.served(ns.Spec.FederatedType); err != nil {
			return decision{reason: ReasonNamespacesNotEnabled, warn: true, retry: !errors.Is(err, errScopeMismatch),
				message: fmt.Sprintf("namespaced type %s places its objects by FederatedNamespace, the federated type of the FederatedTypeConfig %q, which the host does not serve: %v",
					ftc.Name, corev1beta1.NamespacesTypeConfigName, err)}, false
		}
		return decision{}, true
	}
	if ns.Status.ObservedGeneration != ns.Generation {
		// Not reconciled since it changed: a type that runs keeps running
		// until the new status says otherwise, rather than restart on
		// every edit of the namespaces type.
		if r.isRunning(ftc.Name) {
			return decision{}, true
		}
		return decision{reason: ReasonNamespacesNotEnabled,
			message: fmt.Sprintf("namespaced type %s waits for the FederatedTypeConfig %q to run; its generation %d is not reconciled yet",
				ftc.Name, corev1beta1.NamespacesTypeConfigName, ns.Generation)}, false
	}
	if ns.Status.PropagationController == corev1beta1.ControllerStatusRunning {
		return decision{}, true
	}
	cause := string(corev1beta1.ControllerStatusNotRunning)
	if cond := meta.FindStatusCondition(ns.Status.Conditions, ConditionReady); cond != nil {
		cause = cond.Reason + ": " + cond.Message
	}
	return decision{reason: ReasonNamespacesNotEnabled, warn: true,
		message: fmt.Sprintf("namespaced type %s waits for the FederatedTypeConfig %q to run; it does not: %s",
			ftc.Name, corev1beta1.NamespacesTypeConfigName, cause)}, false
}

// errScopeMismatch marks a type the host serves in another scope than its
// FederatedTypeConfig declares: no retry corrects that, only an edit.
var errScopeMismatch = errors.New("declared in the wrong scope")

func (r *Reconciler) served(a corev1beta1.APIResource) error {
	gvk := schema.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: a.Kind}
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk, err)
	}
	if mapping.Resource.Resource != a.PluralName {
		return fmt.Errorf("%s is served as %q, not %q", gvk, mapping.Resource.Resource, a.PluralName)
	}
	scope := corev1beta1.ClusterScope
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		scope = corev1beta1.NamespaceScope
	}
	if a.Scope != scope {
		return fmt.Errorf("%w: scope is %s, but the host serves %s as %s", errScopeMismatch, a.Scope, gvk, scope)
	}
	return nil
}

// isRunning reports whether the type's machinery runs.
func (r *Reconciler) isRunning(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, running := r.running[name]
	return running
}

func (r *Reconciler) ensureRunning(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) error {
	r.mu.Lock()
	current, running := r.running[ftc.Name]
	r.mu.Unlock()
	if running && reflect.DeepEqual(current, ftc.Spec) {
		return nil
	}
	if running {
		// A changed target version, scope or status setting means a new
		// informer set: restart rather than mutate a running controller.
		r.stop(ftc.Name)
	}
	if err := r.Runner.StartType(ctx, ftc.DeepCopy()); err != nil {
		return fmt.Errorf("start propagation of %s: %w", ftc.Name, err)
	}
	r.mu.Lock()
	r.running[ftc.Name] = *ftc.Spec.DeepCopy()
	r.mu.Unlock()
	return nil
}

func (r *Reconciler) stop(name string) {
	r.mu.Lock()
	_, running := r.running[name]
	delete(r.running, name)
	r.mu.Unlock()
	if running {
		r.Runner.StopType(name)
	}
}

// writeStatus writes the decision and, when members are tracked, the
// target type's presence in them.
func (r *Reconciler) writeStatus(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig, d decision, presence *targetPresence) error {
	status := ftc.Status.DeepCopy()
	if presence != nil {
		status.TargetTypeClusterStatus = presence.clusters
		status.TargetTypeOverallStatus = presence.overall
	}
	status.ObservedGeneration = ftc.Generation
	status.PropagationController = corev1beta1.ControllerStatusNotRunning
	statusController := corev1beta1.ControllerStatusNotRunning
	if d.run {
		status.PropagationController = corev1beta1.ControllerStatusRunning
		if ftc.StatusCollectionEnabled() && r.StatusCollection {
			statusController = corev1beta1.ControllerStatusRunning
		}
	}
	status.StatusController = &statusController
	cond := metav1.Condition{
		Type: ConditionReady, Status: metav1.ConditionFalse, Reason: d.reason, Message: d.message,
		ObservedGeneration: ftc.Generation,
	}
	if d.run {
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if reflect.DeepEqual(*status, ftc.Status) {
		return nil
	}
	patch := client.MergeFrom(ftc.DeepCopy())
	ftc.Status = *status
	if err := r.Client.Status().Patch(ctx, ftc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write status of FederatedTypeConfig %s: %w", ftc.Name, err)
	}
	return nil
}
