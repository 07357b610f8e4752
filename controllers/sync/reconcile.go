package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
	"github.com/kubefed-io/kubefed/pkg/overrides"
	"github.com/kubefed-io/kubefed/pkg/placement"
	"github.com/kubefed-io/kubefed/pkg/retention"
)

// Event reasons, as KubeFed recorded them.
const (
	EventCreateInCluster                 = "CreateInCluster"
	EventUpdateInCluster                 = "UpdateInCluster"
	EventDeleteInCluster                 = "DeleteInCluster"
	EventRemoveManagedLabelFromInCluster = "RemoveManagedLabelFromInCluster"
	EventEnsureFinalizerError            = "EnsureFinalizerError"
	EventInvalidName                     = "InvalidName"
	EventAnnotationsNotSupported         = "AnnotationsNotSupported"
	EventFinalizersNotSupported          = "FinalizersNotSupported"
	failedSuffix                         = "Failed"
	eventDeletionLeftInNotReadyClusters  = "DeletionLeftInNotReadyClusters"
	defaultCacheSyncGrace                = 30 * time.Second
	waitForRemovalRequeue                = 2 * time.Second
	pendingCacheRequeue                  = 500 * time.Millisecond
	// unsyncedRequeue is how soon a member's work looks again at a cache
	// that cannot sync: past the grace, or of a member not Ready.
	unsyncedRequeue                 = 5 * time.Second
	orphanAnnotationTrue            = "true"
	namespaceNotFederatedMessageFmt = "the namespace %q has no FederatedNamespace %s/%s, so nothing is placed"
	// reasonPending is no reason to report: placement cannot be known yet.
	reasonPending                = "pending"
	deletionLeftBehindMessageFmt = "gave up waiting %s for not-ready cluster(s) %s; their copies are left in place and lose the managed label when the cluster returns"
	failedMessageFmt             = "Failed to %s %s %q in cluster %q: %v"
	adoptedNote                  = " (adopting the existing object)"
)

// outcome is what happened to a federated object in one member.
type outcome struct {
	cluster string
	status  typesv1beta1.PropagationStatusValue
	message string
	remote  any
	// remoteDigest stands for remote where only its digest is known: an
	// entry another writer wrote, as the host cache holds it.
	remoteDigest string
	// counts are the copy's counts that status aggregation sums; nil
	// when the type's status is not aggregated or nothing was read.
	counts map[string]int64
	// listed is whether the cluster appears in status.clusters.
	listed bool
	// pending means the member's cache is not synced yet: the object's
	// status is not written until it is, so a restart reports nothing
	// transient.
	pending bool
	requeue time.Duration
	// checked is the fingerprint of a copy found or written up to date.
	checked string
	// unobserved: the copy's status does not show yet that the member's
	// controllers saw its latest spec (see typeWorker.observed). The status write
	// waits for that, up to reportHold, rather than write the copy's
	// status twice within a moment.
	unobserved bool
	// heldFrom is when the member answered the write of a copy (a create,
	// an update, a removal): the hold of its unobserved outcome runs from
	// then rather than from the plan, which may have waited in the
	// member's queue. Later outcomes of the same plan keep it.
	heldFrom time.Time
}

// heldSince is when the hold of the outcome of plan for the member's report
// started: the member's answer, or the plan when nothing was written.
func (o *outcome) heldSince(plan *clusterPlan) time.Time {
	return laterOf(plan.created, o.heldFrom)
}

// reconcile plans the object at key; priority is the work's (prompt or
// bulk), which its dispatch and status writes keep.
func (w *typeWorker) reconcile(ctx context.Context, key string, priority int) (time.Duration, error) {
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		w.forgetGone(key)
		w.planRelease(key, priority)
		return 0, nil
	}
	fed, ok := decoded(obj)
	if !ok {
		return 0, nil
	}
	if w.isNamespaces() {
		if placement.IgnoredNamespace(fed.GetNamespace(), w.e.opts.Namespace) {
			return 0, nil
		}
		if err := placement.ValidateFederatedNamespace(fed.GetName(), fed.GetNamespace()); err != nil {
			w.recorder.Eventf(fed, corev1.EventTypeWarning, EventInvalidName, "%v", err)
			return 0, nil
		}
	}
	if fed.GetDeletionTimestamp() != nil {
		return w.planDeletion(key, fed, priority), nil
	}
	if !slices.Contains(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer) {
		if !w.hashedHere(key) {
			// One replica, by hashing, adds the finalizer; the others plan
			// once it is there (its event brings the object back), or
			// look again in a moment should that replica be going away.
			return finalizerWait, nil
		}
		fed = fed.DeepCopy()
		fed.SetFinalizers(append(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer))
		updated, err := w.hostResource(fed.GetNamespace()).Update(ctx, fed, metav1.UpdateOptions{})
		if err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				w.recorder.Eventf(fed, corev1.EventTypeWarning, EventEnsureFinalizerError, "Failed to add finalizer %s: %v", corev1beta1.SyncControllerFinalizer, err)
			}
			return 0, err
		}
		if w.e.opts.Shard != nil || w.e.anyPulled() {
			// A status write guarded by the resourceVersion waits for the
			// cache to show this write, or it would conflict with it.
			status, _ := updated.Object["status"].(map[string]any)
			w.noteStatusWrite(key, fed, updated, status)
		}
		fed = updated
	}
	return w.plan(key, fed, priority), nil
}

// forgetGone drops what the worker remembers of an object the cache no longer
// shows: that it changed, the status it last wrote, its release, what its
// peers and its Pull-mode members reported.
func (w *typeWorker) forgetGone(key string) {
	w.changedMu.Lock()
	delete(w.changed, key)
	w.changedMu.Unlock()
	w.statusMu.Lock()
	delete(w.statusWritten, key)
	delete(w.released, key)
	w.statusMu.Unlock()
	w.forgetPeer(key)
	w.forgetPullEntries(key)
}

// hashedHere reports whether this replica is the one that hashing the
// object at key over the live replicas names to add and remove its
// finalizer: always without scale-out.
func (w *typeWorker) hashedHere(key string) bool {
	shard := w.e.opts.Shard
	return shard == nil || shard.Assigned(w.hashName(key))
}

// hashName is the name the object at key is hashed by over the live
// replicas: the one that adds and releases its finalizer (hashedHere) is
// the one that writes its status for every replica (owns).
func (w *typeWorker) hashName(key string) string { return w.fedGVR.Resource + "/" + key }

// finalizerWait is how soon a replica that leaves adding the finalizer, or
// releasing it, to another looks at the object again.
const finalizerWait = 2 * time.Second

func (w *typeWorker) hostResource(namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return w.e.host.Resource(w.fedGVR)
	}
	return w.e.host.Resource(w.fedGVR).Namespace(namespace)
}

// memberName is the namespace and name of a federated object's copies.
func (w *typeWorker) memberName(fed *unstructured.Unstructured) (string, string) {
	if !w.target.namespaced {
		return "", fed.GetName()
	}
	return fed.GetNamespace(), fed.GetName()
}

// place computes where fed goes. A non-empty reason means it cannot be
// placed: the Propagation condition says why and members are left alone.
func (w *typeWorker) place(fed *unstructured.Unstructured, set placement.ClusterSet) (placement.Result, string, string) {
	p, err := placement.FromUnstructured(fed.Object)
	if err != nil {
		return placement.Result{}, typesv1beta1.ReasonComputePlacementFailed, err.Error()
	}
	if !w.target.namespaced || w.isNamespaces() {
		return set.Select(p), "", ""
	}
	fedNamespaces := w.e.federatedNamespaces()
	if fedNamespaces == nil {
		// Deciding before the FederatedNamespaces are all read would
		// report every object NamespaceNotFederated (or, in a Namespaced
		// control plane, place it where its namespace's does not allow).
		return placement.Result{}, reasonPending, ""
	}
	ns := fed.GetNamespace()
	obj, exists, err := fedNamespaces.GetByKey(ns + "/" + ns)
	if err != nil || !exists {
		if w.e.opts.Scope == corev1beta1.NamespaceScoped {
			// As in KubeFed, a Namespaced control plane's namespace is
			// federated implicitly: without a FederatedNamespace the
			// object's placement stands; with one, it limits it.
			return set.Select(p), "", ""
		}
		return placement.Result{}, typesv1beta1.ReasonNamespaceNotFederated, fmt.Sprintf(namespaceNotFederatedMessageFmt, ns, ns, ns)
	}
	fns, ok := decoded(obj)
	if !ok {
		return placement.Result{}, typesv1beta1.ReasonComputePlacementFailed, fmt.Sprintf("FederatedNamespace %s cannot be read", ns)
	}
	np, err := placement.FromUnstructured(fns.Object)
	if err != nil {
		return placement.Result{}, typesv1beta1.ReasonComputePlacementFailed, fmt.Sprintf("FederatedNamespace %s: %v", ns, err)
	}
	return set.SelectNamespaced(p, np), "", ""
}

// plan decides what every member must do for fed and hands each member
// whose plan changed to its dispatcher. Nothing here waits for a member.
func (w *typeWorker) plan(key string, fed *unstructured.Unstructured, priority int) time.Duration {
	w.reportTemplateProblems(fed)
	set := w.e.clusterSet()
	res, reason, message := w.place(fed, set)
	if reason == reasonPending {
		return time.Second
	}
	st := &objectState{uid: fed.GetUID(), generation: fed.GetGeneration(), clusters: map[string]*clusterEntry{}}
	if reason != "" {
		st.reason, st.message = reason, message
		w.publish(key, st, priority)
		return 0
	}
	st.held = w.e.held(set)
	now := time.Now()
	local := func(o outcome) { st.clusters[o.cluster] = &clusterEntry{result: &o} }
	planned := func(cluster string, p *clusterPlan) {
		p.created = now
		p.identity = planIdentity(p.action, fed)
		st.clusters[cluster] = &clusterEntry{plan: p}
	}
	byCluster, invalid, opsErr := overrides.PerCluster(fed.Object)
	placed := make(map[string]bool, len(res.Clusters))
	for _, name := range res.Unknown {
		if !w.e.reports(name, false) {
			continue
		}
		local(outcome{cluster: name, listed: true, status: typesv1beta1.ClusterNotFound,
			message: "spec.placement.clusters names a cluster that is not joined"})
	}
	for _, name := range res.Clusters {
		placed[name] = true
		if !st.covers(name) {
			if w.e.standsIn(name, set) {
				if st.standIn == nil {
					st.standIn = map[string]bool{}
				}
				st.standIn[name] = true
				local(outcome{cluster: name, listed: true, status: typesv1beta1.ClusterNotReady})
				w.e.plannedUnready(name, w.name, key)
			}
			continue
		}
		if c, _ := set.Get(name); !c.Ready {
			local(outcome{cluster: name, listed: true, status: typesv1beta1.ClusterNotReady})
			w.e.plannedUnready(name, w.name, key)
			continue
		}
		err := opsErr
		if ce := invalid[name]; err == nil && ce != nil {
			err = ce
		}
		if err != nil {
			local(outcome{cluster: name, listed: true, status: typesv1beta1.ApplyOverridesFailed, message: err.Error()})
			continue
		}
		planned(name, &clusterPlan{action: actionSync, ops: byCluster[name]})
	}
	// Copies in members the object is no longer placed on are removed.
	namespace, name := w.memberName(fed)
	for _, c := range set.Names() {
		if placed[c] || !st.covers(c) {
			continue
		}
		if w.cached(c, namespace, name) == nil {
			continue
		}
		if cl, _ := set.Get(c); !cl.Ready {
			w.e.plannedUnready(c, w.name, key)
			continue
		}
		planned(c, &clusterPlan{action: actionRemove})
	}
	w.publish(key, st, priority)
	return 0
}

// publish makes st the object's state, dispatches the plans that changed
// and has the object's status looked at.
func (w *typeWorker) publish(key string, st *objectState, priority int) {
	for _, cluster := range w.setState(key, st) {
		if d := w.e.dispatcher(cluster); d != nil {
			d.add(w.name, key, priority, 0)
		}
	}
	enqueue(w.statusQueue, key, priority, 0)
}

// cached returns a member's managed copy from the shared cache, or nil.
func (w *typeWorker) cached(cluster, namespace, name string) *unstructured.Unstructured {
	lister, _ := w.e.opts.Members.Lister(cluster, w.gvr)
	if lister == nil {
		return nil
	}
	var obj *unstructured.Unstructured
	var err error
	if namespace == "" {
		obj, err = lister.Get(name)
	} else {
		obj, err = lister.Namespace(namespace).Get(name)
	}
	if err != nil {
		return nil
	}
	return obj
}

// memberCache returns whether the member's cache of the target type can be
// trusted; otherwise the outcome to report (pending while it may still
// sync, ClusterNotReady while the member is not Ready, CachedRetrievalFailed
// after the grace period).
func (w *typeWorker) memberCache(cluster string) (bool, outcome) {
	if !w.e.opts.Members.Ensure(cluster) {
		return false, outcome{cluster: cluster, listed: true, status: typesv1beta1.ClientRetrievalFailed,
			message: "no client for the cluster", requeue: 5 * time.Second}
	}
	lister, synced := w.e.opts.Members.Lister(cluster, w.gvr)
	w.unsyncedMu.Lock()
	defer w.unsyncedMu.Unlock()
	if lister != nil && synced {
		delete(w.unsynced, cluster)
		return true, outcome{}
	}
	if c, _ := w.e.clusterSet().Get(cluster); !c.Ready {
		// Unreachable, most likely, which is why the cache waits: said
		// at once rather than holding the object's status, as the
		// object is not planned again for the member until the
		// unavailable delay has passed. Looked at again as a cache
		// that failed to sync is: every object of the member waits so.
		return false, outcome{cluster: cluster, listed: true, status: typesv1beta1.ClusterNotReady, requeue: unsyncedRequeue}
	}
	since, ok := w.unsynced[cluster]
	if !ok {
		since = time.Now()
		w.unsynced[cluster] = since
	}
	if time.Since(since) < defaultCacheSyncGrace {
		return false, outcome{cluster: cluster, pending: true, requeue: pendingCacheRequeue}
	}
	return false, outcome{cluster: cluster, listed: true, status: typesv1beta1.CachedRetrievalFailed,
		message: fmt.Sprintf("the cache of %s in the cluster has not synced for %s; does the cluster serve the type?", w.gvr.Resource, defaultCacheSyncGrace),
		requeue: unsyncedRequeue}
}

func (w *typeWorker) memberResource(cluster, namespace string) (dynamic.ResourceInterface, error) {
	clients, ok := w.e.opts.Registry.Get(cluster)
	if !ok {
		return nil, fmt.Errorf("no clients for cluster %q", cluster)
	}
	dyn, err := clients.Dynamic()
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		return dyn.Resource(w.gvr), nil
	}
	return dyn.Resource(w.gvr).Namespace(namespace), nil
}

// execute carries out a member's plan for the federated object key and
// returns the outcome in that member. The object is read from the host
// cache, not kept in the plan: a plan whose object changed since (a newer
// generation, other removal annotations, another UID) is superseded, as
// the planner has the change queued, and nothing is done. Nor is it while
// this replica's fence of the member awaits its renewal; the outcome's
// requeue then says when to try again.
func (w *typeWorker) execute(ctx context.Context, cluster, key string, p *clusterPlan) (outcome, bool) {
	if w.e.opts.Shard != nil {
		// Writes end before this replica's fence of the member could
		// expire in the eyes of the others.
		deadline, ok := w.e.opts.Shard.WriteDeadline(cluster)
		if !ok {
			if w.e.opts.Shard.Serving(cluster) {
				// The fence's renewal is overdue, not lost: the work is
				// still ours once it lands (or the fence is lost and the
				// dispatcher stopped).
				return outcome{cluster: cluster, requeue: fenceRenewalWait}, false
			}
			return outcome{}, false
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if p.action == actionRelease {
		return w.releaseIn(ctx, cluster, p), true
	}
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return outcome{}, false
	}
	fed, ok := decoded(obj)
	if !ok || planIdentity(p.action, fed) != p.identity {
		return outcome{}, false
	}
	switch p.action {
	case actionSync:
		return w.syncPlaced(ctx, fed, cluster, p), true
	case actionRemove:
		if ok, o := w.memberCache(cluster); !ok {
			return o, true
		}
		namespace, name := w.memberName(fed)
		current := w.cached(cluster, namespace, name)
		if current == nil {
			return outcome{cluster: cluster}, true
		}
		return w.removeCopy(ctx, fed, cluster, current), true
	default:
		return w.deleteIn(ctx, fed, cluster), true
	}
}

// fenceRenewalWait is how soon work waits again for a member whose fence
// renewal is overdue.
const fenceRenewalWait = 500 * time.Millisecond

// syncPlaced creates or updates the copy of a federated object in a member
// it is placed on. The desired object is rendered once per plan: a change
// of the member's copy alone is checked against the same rendering.
func (w *typeWorker) syncPlaced(ctx context.Context, fed *unstructured.Unstructured, cluster string, p *clusterPlan) outcome {
	if ok, o := w.memberCache(cluster); !ok {
		return o
	}
	p.takeSeed()
	namespace, name := w.memberName(fed)
	current := w.cached(cluster, namespace, name)
	if current == nil && w.wrote(cluster, fed, p.hash) {
		// A copy this engine wrote that the cache does not show yet (a
		// second look at the plan came before the watch event): read it
		// rather than create it twice.
		current = w.liveCopy(ctx, cluster, namespace, name)
	}
	if current != nil && p.checked != "" && p.checked == fingerprint(current) {
		// Only the copy's status changed since it was found up to date.
		copyChecks.WithLabelValues(cluster, "unchanged").Inc()
		return outcome{cluster: cluster, listed: true, remote: w.remoteStatus(current), counts: w.countsOf(current), checked: p.checked, unobserved: !w.observed(current)}
	}
	if !p.rendered {
		desired, hash, err := desiredObject(fed.Object, name, namespace, w.target, p.ops)
		p.rendered, p.desired, p.hash = true, desired, hash
		if err != nil {
			o := outcome{cluster: cluster, listed: true, status: typesv1beta1.ComputeResourceFailed, message: err.Error()}
			var oe *overridesError
			if errors.As(err, &oe) {
				o.status = typesv1beta1.ApplyOverridesFailed
			}
			p.renderErr = &o
		}
	}
	if p.renderErr != nil {
		return *p.renderErr
	}
	copyChecks.WithLabelValues(cluster, "compared").Inc()
	var o outcome
	switch {
	case current == nil:
		o = w.create(ctx, fed, cluster, jsonvalue.Copy(p.desired).(map[string]any), p.hash, p.ops)
	case current.GetDeletionTimestamp() != nil:
		// Someone deletes the copy; it is created again once it is gone.
		return outcome{cluster: cluster, listed: true, status: typesv1beta1.WaitingForRemoval, requeue: waitForRemovalRequeue}
	default:
		o = w.update(ctx, fed, cluster, p.desired, p.hash, p.ops, current, false)
	}
	if o.status == "" && o.checked != "" {
		// The copy is what the plan asks for. Until the copy changes in
		// more than its status, the rendering is not needed again; it is
		// dropped to keep memory to one copy of each object per member.
		p.checked = o.checked
		p.rendered, p.desired = false, nil
	}
	return o
}

// fingerprint identifies what of a member copy a plan's check depends on:
// all but its status. A kind without metadata.generation (a ConfigMap, a
// Secret) has no way to tell a status change from another, so any change
// counts: its fingerprint is the copy's resourceVersion, which the member
// changes with every write.
func fingerprint(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	var parts []any
	if obj.GetGeneration() == 0 {
		if obj.GetResourceVersion() == "" {
			return ""
		}
		parts = []any{obj.GetUID(), obj.GetResourceVersion()}
	} else {
		parts = []any{obj.GetUID(), obj.GetGeneration(), obj.GetLabels(), obj.GetAnnotations(), obj.GetDeletionTimestamp() != nil}
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return ""
	}
	return string(b)
}

func (w *typeWorker) retainReplicas(fed *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedBool(fed.Object, "spec", "retainReplicas")
	return v
}

func (w *typeWorker) create(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string, ops []overrides.Operation) outcome {
	out := outcome{cluster: cluster, listed: true}
	namespace, name := w.memberName(fed)
	ri, err := w.memberResource(cluster, namespace)
	if err != nil {
		out.status, out.message = typesv1beta1.ClientRetrievalFailed, err.Error()
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	start := time.Now()
	dispatchInFlight.WithLabelValues(cluster).Inc()
	defer dispatchInFlight.WithLabelValues(cluster).Dec()
	created, err := ri.Create(cctx, &unstructured.Unstructured{Object: desired}, metav1.CreateOptions{})
	observeDispatch(cluster, "create", start, err)
	if err == nil {
		w.observeWrite(fed)
		w.remember(cluster, fed, hash, created.GetResourceVersion(), created.GetGeneration())
		w.recordEvent(fed, EventCreateInCluster, "Creating", w.target.kind, name, cluster, "")
		out.remote, out.counts = w.remoteStatus(created), w.countsOf(created)
		out.checked, out.unobserved = fingerprint(created), !w.observed(created)
		out.heldFrom = time.Now()
		return out
	}
	if apierrors.IsAlreadyExists(err) {
		return w.adopt(ctx, fed, cluster, desired, hash, ops)
	}
	if apierrors.IsNotFound(err) && namespace != "" {
		// The namespace is being propagated to the member at the same
		// time; try again shortly.
		out.requeue = time.Second
	}
	out.status, out.message = failure(err, typesv1beta1.CreationFailed, typesv1beta1.CreationTimedOut)
	if out.status == typesv1beta1.CreationTimedOut || mayHaveCommitted(err) {
		// The member may have made the copy without our hearing of it
		// (a timeout, or a server error after the write, such as etcd
		// timing out): the next try reads the copy before creating it
		// again.
		w.remember(cluster, fed, hash, "", 0)
	}
	w.recorder.Eventf(fed, corev1.EventTypeWarning, EventCreateInCluster+failedSuffix, failedMessageFmt, "create", w.target.kind, name, cluster, err)
	return out
}

// adopt handles an object of the same name that a create found existing
// in the member: one without the managed label is adopted (or refused, as
// adoptResources says); a managed one is a copy the cache does not show yet.
func (w *typeWorker) adopt(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string, ops []overrides.Operation) outcome {
	out := outcome{cluster: cluster, listed: true}
	namespace, name := w.memberName(fed)
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	live, err := w.e.opts.Members.Get(cctx, cluster, w.gvr, namespace, name)
	if err != nil {
		out.status, out.message = failure(err, typesv1beta1.RetrievalFailed, typesv1beta1.RetrievalFailed)
		return out
	}
	if retention.ManagementForbidden(live.Object) {
		out.status, out.message = typesv1beta1.ManagedLabelFalse, "the object in the cluster is labelled "+corev1beta1.ManagedByKubeFedLabelKey+"=false"
		return out
	}
	if retention.IsManaged(live.Object) {
		// A managed copy the cache did not show yet: one another replica
		// made before this one took the member over, or a create of ours
		// that the member made though it answered with an error. It is
		// checked as any managed copy is (written only if it differs, and
		// whatever adoptResources says), not adopted.
		return w.update(ctx, fed, cluster, desired, hash, ops, live, false)
	}
	if !w.e.opts.AdoptResources {
		host := false
		if w.isNamespaces() {
			host, err = w.e.isHostCluster(cctx, cluster)
			if err != nil {
				out.status, out.message = typesv1beta1.RetrievalFailed, err.Error()
				return out
			}
		}
		if !host {
			out.status, out.message = typesv1beta1.AlreadyExists, "an object of the same name exists in the cluster and adoptResources is Disabled"
			return out
		}
	}
	return w.update(ctx, fed, cluster, desired, hash, ops, live, true)
}

func (w *typeWorker) update(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string, ops []overrides.Operation, current *unstructured.Unstructured, adopting bool) outcome {
	out := outcome{cluster: cluster, listed: true, remote: w.remoteStatus(current), counts: w.countsOf(current)}
	last := w.lastWrite(cluster, fed)
	if !adopting && (last.at(hash, current.GetResourceVersion()) ||
		(upToDate(desired, current.Object, hash) && !last.editedSince(hash, current))) {
		out.checked, out.unobserved = fingerprint(current), !w.observed(current)
		return out
	}
	namespace, name := w.memberName(fed)
	// The plan's rendering stays as it is, for later checks; what is
	// written retains the member's fields before the overrides apply.
	desired, err := retainedObject(fed.Object, name, namespace, w.target, ops, current.Object, w.retainReplicas(fed), hash)
	if err != nil {
		out.status, out.message = typesv1beta1.FieldRetentionFailed, err.Error()
		var oe *overridesError
		if errors.As(err, &oe) {
			out.status = typesv1beta1.ApplyOverridesFailed
		}
		return out
	}
	ri, err := w.memberResource(cluster, namespace)
	if err != nil {
		out.status, out.message = typesv1beta1.ClientRetrievalFailed, err.Error()
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	start := time.Now()
	dispatchInFlight.WithLabelValues(cluster).Inc()
	defer dispatchInFlight.WithLabelValues(cluster).Dec()
	updated, err := ri.Update(cctx, &unstructured.Unstructured{Object: desired}, metav1.UpdateOptions{})
	observeDispatch(cluster, "update", start, err)
	if err != nil {
		if apierrors.IsConflict(err) {
			// The cache is behind the member; the newer version is on its way.
			out.requeue = 200 * time.Millisecond
		}
		out.status, out.message = failure(err, typesv1beta1.UpdateFailed, typesv1beta1.UpdateTimedOut)
		w.recorder.Eventf(fed, corev1.EventTypeWarning, EventUpdateInCluster+failedSuffix, failedMessageFmt, "update", w.target.kind, name, cluster, err)
		return out
	}
	w.observeWrite(fed)
	w.remember(cluster, fed, hash, updated.GetResourceVersion(), updated.GetGeneration())
	note := ""
	if adopting {
		note = adoptedNote
	}
	w.recordEvent(fed, EventUpdateInCluster, "Updating", w.target.kind, name, cluster, note)
	out.remote, out.counts = w.remoteStatus(updated), w.countsOf(updated)
	out.checked, out.unobserved = fingerprint(updated), !w.observed(updated)
	out.heldFrom = time.Now()
	return out
}

// removeCopy removes a member copy of fed, which is no longer placed there
// or is being deleted: it is deleted, or only unlabelled when fed is marked
// to orphan or the copy is the host's own namespace.
func (w *typeWorker) removeCopy(ctx context.Context, fed *unstructured.Unstructured, cluster string, current *unstructured.Unstructured) outcome {
	keep, err := w.keepCopy(ctx, fed, cluster)
	if err != nil {
		return outcome{cluster: cluster, listed: true, status: typesv1beta1.RetrievalFailed, message: err.Error()}
	}
	if keep {
		return w.removeLabel(ctx, fed, cluster, current)
	}
	opts, err := deleteOptions(fed)
	if err != nil {
		return outcome{cluster: cluster, listed: true, status: typesv1beta1.DeletionFailed, message: err.Error()}
	}
	return w.deleteCopy(ctx, fed, cluster, current, opts)
}

// keepCopy reports whether a member copy must survive its federated
// object's removal from the member.
func (w *typeWorker) keepCopy(ctx context.Context, fed *unstructured.Unstructured, cluster string) (bool, error) {
	if fed.GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation] == orphanAnnotationTrue {
		return true, nil
	}
	if !w.isNamespaces() {
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	host, err := w.e.isHostCluster(cctx, cluster)
	return isHostNamespace(w.name, host), err
}

func (w *typeWorker) deleteCopy(ctx context.Context, fed *unstructured.Unstructured, cluster string, current *unstructured.Unstructured, opts metav1.DeleteOptions) outcome {
	out := outcome{cluster: cluster, listed: true, status: typesv1beta1.WaitingForRemoval, requeue: waitForRemovalRequeue}
	if current.GetDeletionTimestamp() != nil {
		return out
	}
	ri, err := w.memberResource(cluster, current.GetNamespace())
	if err != nil {
		out.status, out.message = typesv1beta1.ClientRetrievalFailed, err.Error()
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	start := time.Now()
	dispatchInFlight.WithLabelValues(cluster).Inc()
	defer dispatchInFlight.WithLabelValues(cluster).Dec()
	err = ri.Delete(cctx, current.GetName(), opts)
	observeDispatch(cluster, "delete", start, err)
	if err != nil && !apierrors.IsNotFound(err) {
		out.status, out.message = failure(err, typesv1beta1.DeletionFailed, typesv1beta1.DeletionTimedOut)
		w.recorder.Eventf(fed, corev1.EventTypeWarning, EventDeleteInCluster+failedSuffix, failedMessageFmt, "delete", w.target.kind, current.GetName(), cluster, err)
		return out
	}
	w.forget(cluster, fed)
	w.recordEvent(fed, EventDeleteInCluster, "Deleting", w.target.kind, current.GetName(), cluster, "")
	// The member's watch is about to show the copy gone: the status write
	// waits for it (within reportHold of the answer), rather than saying
	// WaitingForRemoval and then writing again.
	out.unobserved = true
	if err == nil {
		out.heldFrom = time.Now()
	}
	return out
}

// removeLabel leaves a member copy in place but no longer managed. It is
// not listed in status once done.
func (w *typeWorker) removeLabel(ctx context.Context, fed *unstructured.Unstructured, cluster string, current *unstructured.Unstructured) outcome {
	out := outcome{cluster: cluster}
	obj := current.DeepCopy()
	if !retention.RemoveManagedLabel(obj.Object) {
		return out
	}
	ri, err := w.memberResource(cluster, obj.GetNamespace())
	if err != nil {
		out.listed, out.status, out.message = true, typesv1beta1.ClientRetrievalFailed, err.Error()
		return out
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	if _, err := ri.Update(cctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		out.listed = true
		out.status, out.message = failure(err, typesv1beta1.LabelRemovalFailed, typesv1beta1.LabelRemovalTimedOut)
		if apierrors.IsConflict(err) {
			out.requeue = 200 * time.Millisecond
		}
		if fed != nil {
			w.recorder.Eventf(fed, corev1.EventTypeWarning, EventRemoveManagedLabelFromInCluster+failedSuffix, failedMessageFmt, "remove the managed label from", w.target.kind, obj.GetName(), cluster, err)
		}
		return out
	}
	w.forgetKey(cluster, w.memberKey(obj))
	if fed != nil {
		w.recordEvent(fed, EventRemoveManagedLabelFromInCluster, "Removing managed label from", w.target.kind, obj.GetName(), cluster, "")
	}
	return out
}

// planDeletion plans the removal of fed's copies from every member, or
// their unlabelling; the status worker releases fed once they are gone.
// Members that are not Ready are waited for up to the configured timeout
// from the deletion request; past it fed is released and what is left there
// is reported in an event. It returns when to plan again.
func (w *typeWorker) planDeletion(key string, fed *unstructured.Unstructured, priority int) time.Duration {
	if !slices.Contains(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer) {
		w.dropState(key)
		return 0
	}
	set := w.e.clusterSet()
	deadline := fed.GetDeletionTimestamp().Add(w.e.opts.NotReadyClusterDeletionTimeout)
	orphaning := fed.GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation] == orphanAnnotationTrue
	namespace, name := w.memberName(fed)
	st := &objectState{uid: fed.GetUID(), generation: fed.GetGeneration(), deleting: true, clusters: map[string]*clusterEntry{},
		held: w.e.held(set)}
	now := time.Now()
	var requeue time.Duration
	for _, c := range set.Names() {
		if !st.covers(c) {
			continue
		}
		cl, _ := set.Get(c)
		if !cl.Ready {
			if w.cached(c, namespace, name) == nil && !listsCluster(fed.Object, c) {
				// Never placed there, as far as anyone knows.
				continue
			}
			w.e.plannedUnready(c, w.name, key)
			if orphaning {
				// As in KubeFed, orphaning waits for no member out of
				// reach: the copy stays there, and loses its managed
				// label once the member is back, as the copy of an object
				// that is gone (planRelease).
				continue
			}
			if now.Before(deadline) {
				st.clusters[c] = &clusterEntry{result: &outcome{cluster: c, listed: true, status: typesv1beta1.ClusterNotReady,
					message: "waiting for the cluster to delete the copy"}}
				requeue = time.Until(deadline) + time.Second
			} else {
				st.leftBehind = append(st.leftBehind, c)
			}
			continue
		}
		st.clusters[c] = &clusterEntry{plan: &clusterPlan{action: actionDelete, created: now, identity: planIdentity(actionDelete, fed)}}
	}
	w.publish(key, st, priority)
	return requeue
}

// deleteIn removes fed's copy from one member, or unlabels it.
func (w *typeWorker) deleteIn(ctx context.Context, fed *unstructured.Unstructured, c string) outcome {
	if ok, o := w.memberCache(c); !ok {
		if o.pending {
			o.pending, o.listed, o.status = false, true, typesv1beta1.WaitingForRemoval
		}
		return o
	}
	namespace, name := w.memberName(fed)
	current := w.cached(c, namespace, name)
	if current == nil && w.wroteAny(c, fed) {
		// A copy this engine wrote that the cache does not show yet (a
		// deletion right after the create): read it rather than miss it
		// and leave it to be unlabelled as an orphan later.
		current = w.liveCopy(ctx, c, namespace, name)
	}
	if current == nil {
		return outcome{cluster: c}
	}
	o := w.removeCopy(ctx, fed, c, current)
	if o.status == typesv1beta1.RetrievalFailed {
		// Telling the host's own namespace failed; a deletion looks again
		// in 5 s rather than backing off.
		o.requeue = 5 * time.Second
	}
	return o
}

// releaseFinalizer lets the apiserver delete fed once no member holds a
// copy of it.
func (w *typeWorker) releaseFinalizer(ctx context.Context, key string, fed *unstructured.Unstructured, leftBehind []string) error {
	w.statusMu.Lock()
	done := w.released[key] == fed.GetUID()
	w.statusMu.Unlock()
	if done {
		// Released a moment ago; the cache is behind.
		return nil
	}
	// The object is read from the cache again, after that check: the
	// reconcile that finds it gone forgets its release (forgetGone), and the
	// status flush calling us read it before, and read members live since
	// (othersHold). Released and forgotten meanwhile, it is gone here now;
	// patching it again would only find it gone.
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	cur, ok := decoded(obj)
	if !ok || cur.GetUID() != fed.GetUID() {
		return nil
	}
	fed = cur
	if len(leftBehind) > 0 {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, eventDeletionLeftInNotReadyClusters, deletionLeftBehindMessageFmt,
			w.e.opts.NotReadyClusterDeletionTimeout, strings.Join(leftBehind, ", "))
	}
	i := slices.Index(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer)
	if i < 0 {
		w.settled(fed)
		return nil
	}
	// A JSON patch that removes our finalizer where the cache shows it, on
	// the object the cache shows: not guarded by the resourceVersion, which
	// every status write changes (another replica's status write would make
	// an update conflict, and be sent again).
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": string(fed.GetUID())},
		{"op": "test", "path": path, "value": corev1beta1.SyncControllerFinalizer},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return err
	}
	if _, err := w.hostResource(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// The finalizers or the object are not what the cache shows:
			// the object's next event plans again.
			w.queue.Add(objectKey(fed))
			return nil
		}
		return fmt.Errorf("remove finalizer: %w", err)
	}
	w.statusMu.Lock()
	w.released[key] = fed.GetUID()
	w.statusMu.Unlock()
	w.settled(fed)
	return nil
}

// planRelease plans the unlabelling of the member copies of a federated
// object that no longer exists: they are kept, but no longer managed.
func (w *typeWorker) planRelease(key string, priority int) {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	if w.isNamespaces() {
		namespace = ""
	}
	if w.e.opts.Scope == corev1beta1.NamespaceScoped && namespace != w.e.opts.Namespace {
		return
	}
	st := &objectState{gone: true, clusters: map[string]*clusterEntry{}}
	now := time.Now()
	// Readiness is read from the cluster set, as every plan and the
	// members' fan-outs read it: the readiness tracker turns a moment
	// after the KubeFedCluster's condition does, and a release planned in
	// that moment from the tracker would skip a member the fan-out of its
	// return considers done, stranding the copy with its managed label.
	set := w.e.clusterSet()
	for _, c := range set.Names() {
		if !w.e.serves(c) || w.cached(c, namespace, name) == nil {
			continue
		}
		if cl, _ := set.Get(c); !cl.Ready {
			// A copy in a member not ready is released once it is back.
			w.e.plannedUnready(c, w.name, key)
			continue
		}
		st.clusters[c] = &clusterEntry{plan: &clusterPlan{action: actionRelease, created: now, identity: planIdentity(actionRelease, nil),
			namespace: namespace, name: name}}
	}
	if len(st.clusters) == 0 {
		w.dropState(key)
		return
	}
	w.publish(key, st, priority)
}

// releaseIn unlabels the copy of a federated object that no longer exists.
func (w *typeWorker) releaseIn(ctx context.Context, cluster string, p *clusterPlan) outcome {
	current := w.cached(cluster, p.namespace, p.name)
	if current == nil {
		return outcome{cluster: cluster}
	}
	return w.removeLabel(ctx, nil, cluster, current)
}

// listsCluster reports whether a federated object's status lists a cluster.
func listsCluster(obj map[string]any, cluster string) bool {
	clusters, _, _ := unstructured.NestedSlice(obj, "status", "clusters")
	for _, c := range clusters {
		if m, ok := c.(map[string]any); ok && m["name"] == cluster {
			return true
		}
	}
	return false
}

// deleteOptions reads the kubefed.io/deleteoption annotation.
func deleteOptions(fed *unstructured.Unstructured) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	raw := fed.GetAnnotations()[corev1beta1.DeleteOptionAnnotation]
	if raw == "" {
		return opts, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opts); err != nil {
		return opts, fmt.Errorf("annotation %s is not valid DeleteOptions JSON: %v", corev1beta1.DeleteOptionAnnotation, err)
	}
	return opts, nil
}

// retriable reports whether a status value may clear by itself: member
// trouble rather than bad input, which only a change of the object fixes,
// or readiness, whose change re-enqueues the object.
func retriable(s typesv1beta1.PropagationStatusValue) bool {
	switch s {
	case "", typesv1beta1.ApplyOverridesFailed, typesv1beta1.ComputeResourceFailed, typesv1beta1.ClusterNotFound,
		typesv1beta1.ClusterNotReady, typesv1beta1.WaitingForRemoval:
		return false
	}
	return true
}

// failure maps a write error to its status value.
func failure(err error, failed, timedOut typesv1beta1.PropagationStatusValue) (typesv1beta1.PropagationStatusValue, string) {
	if errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return timedOut, err.Error()
	}
	return failed, err.Error()
}

// mayHaveCommitted reports whether a write answered with err may have
// been made all the same: the API server answered with a server error
// (5xx) rather than refusing the request.
func mayHaveCommitted(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return status.Status().Code >= 500
}

func (w *typeWorker) remoteStatus(obj *unstructured.Unstructured) any {
	if !w.collectStatus || obj == nil {
		return nil
	}
	s, ok := obj.Object["status"]
	if !ok || s == nil {
		return nil
	}
	if m, ok := s.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return s
}

// observed reports whether a member copy's status shows that the member's
// controllers saw its latest spec, when its status is reported at all
// (collected or aggregated): status.observedGeneration at the copy's
// generation, or, for a kind without it, any status; and not a step its
// controller reports again at once (halfReported). A copy without
// metadata.generation, or whose status is not reported, counts as seen.
func (w *typeWorker) observed(obj *unstructured.Unstructured) bool {
	if (!w.collectStatus && w.aggregation == nil) || obj == nil || obj.GetGeneration() == 0 {
		return true
	}
	status, _ := obj.Object["status"].(map[string]any)
	if halfReported(obj, status) {
		return false
	}
	if seen, found, err := unstructured.NestedInt64(status, "observedGeneration"); found && err == nil {
		return seen >= obj.GetGeneration()
	}
	return len(status) > 0
}

// halfReported reports whether a copy's status is a step that the member's
// controller follows with another report within a moment: a Deployment
// whose Progressing condition says NewReplicaSetCreated. The Deployment
// controller reports the ReplicaSet it created (without an
// observedGeneration on a new Deployment), then reports the rollout under
// way (ReplicaSetUpdated) or done (NewReplicaSetAvailable), in the same
// sync or, when that write conflicts with the first, in the next. Writing
// the first step would write the copy's status twice within a moment; on a
// member whose controllers are busy, the second report can come seconds
// later. The wait for it is bounded (reportHold): a rollout that stalls at
// that step (its pods refused by a quota) is written as it stands.
func halfReported(obj *unstructured.Unstructured, status map[string]any) bool {
	if obj.GetKind() != "Deployment" || !strings.HasPrefix(obj.GetAPIVersion(), "apps/") {
		return false
	}
	progressing := jsonvalue.Condition(status, "Progressing")
	return progressing != nil && progressing["reason"] == "NewReplicaSetCreated"
}

// countsOf reads the counts that the type's status aggregation sums from a
// member copy.
func (w *typeWorker) countsOf(obj *unstructured.Unstructured) map[string]int64 {
	if w.aggregation == nil || obj == nil {
		return nil
	}
	return w.aggregation.Counts(obj.Object)
}

func (w *typeWorker) reportTemplateProblems(fed *unstructured.Unstructured) {
	status, _ := fed.Object["status"].(map[string]any)
	if observedGeneration(status) == fed.GetGeneration() {
		return
	}
	p := checkTemplate(fed.Object)
	if p.annotations {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, EventAnnotationsNotSupported, "spec.template.metadata.annotations are not propagated; set them with an override of /metadata/annotations")
	}
	if p.finalizers {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, EventFinalizersNotSupported, "spec.template.metadata.finalizers are not propagated")
	}
}

func objectKey(fed metav1.Object) string {
	if fed.GetNamespace() == "" {
		return fed.GetName()
	}
	return fed.GetNamespace() + "/" + fed.GetName()
}

func (w *typeWorker) remember(cluster string, fed *unstructured.Unstructured, hash, rv string, generation int64) {
	w.writtenMu.Lock()
	w.written[writeKey{cluster, objectKey(fed)}] = writeRecord{hash: hash, resourceVersion: rv, generation: generation}
	w.writtenMu.Unlock()
}

// lastWrite is the record of this engine's last write of fed's copy to the
// cluster; the zero record, which matches no hash, when there is none.
func (w *typeWorker) lastWrite(cluster string, fed *unstructured.Unstructured) writeRecord {
	w.writtenMu.RLock()
	defer w.writtenMu.RUnlock()
	return w.written[writeKey{cluster, objectKey(fed)}]
}

// at says whether the write was of hash and the copy is still at the
// resourceVersion it produced.
func (r writeRecord) at(hash, rv string) bool {
	return r.hash == hash && r.resourceVersion == rv
}

// editedSince reports whether someone else changed the copy written with
// hash: its generation moved since (a change of its spec: someone edited
// it), or, for a kind without a generation, its resourceVersion did. As in
// KubeFed, such a copy is written again even if it still holds every
// desired value, so that what was added by hand goes too; a copy this
// engine has no record of (after a restart) is judged by its values alone.
func (r writeRecord) editedSince(hash string, current *unstructured.Unstructured) bool {
	if r.hash != hash || r.resourceVersion == "" {
		return false
	}
	if r.generation > 0 && current.GetGeneration() > 0 {
		return current.GetGeneration() != r.generation
	}
	return current.GetResourceVersion() != r.resourceVersion
}

// wrote reports whether this engine last wrote a copy of fed with hash to
// the cluster, or may have: a create that timed out is recorded without a
// resourceVersion.
func (w *typeWorker) wrote(cluster string, fed *unstructured.Unstructured, hash string) bool {
	w.writtenMu.RLock()
	defer w.writtenMu.RUnlock()
	r, ok := w.written[writeKey{cluster, objectKey(fed)}]
	return ok && r.hash == hash
}

// wroteAny reports whether this engine wrote a copy of fed to the cluster.
func (w *typeWorker) wroteAny(cluster string, fed *unstructured.Unstructured) bool {
	w.writtenMu.RLock()
	defer w.writtenMu.RUnlock()
	_, ok := w.written[writeKey{cluster, objectKey(fed)}]
	return ok
}

// liveCopy reads a member's copy from the member itself; nil when it does
// not exist or cannot be read, in which case a create finds out.
func (w *typeWorker) liveCopy(ctx context.Context, cluster, namespace, name string) *unstructured.Unstructured {
	ri, err := w.memberResource(cluster, namespace)
	if err != nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, w.e.opts.ClusterTimeout)
	defer cancel()
	obj, err := ri.Get(cctx, name, metav1.GetOptions{})
	if err != nil || obj.GetLabels()[corev1beta1.ManagedByKubeFedLabelKey] != corev1beta1.ManagedByKubeFedLabelValue {
		return nil
	}
	return obj
}

func (w *typeWorker) forget(cluster string, fed *unstructured.Unstructured) {
	w.forgetKey(cluster, objectKey(fed))
}

func (w *typeWorker) forgetKey(cluster, key string) {
	w.writtenMu.Lock()
	delete(w.written, writeKey{cluster, key})
	w.writtenMu.Unlock()
}

// forgetWrites drops the records of every type's writes to a member that
// left, or that another replica serves now.
func (e *Engine) forgetWrites(cluster string) {
	for _, w := range e.allWorkers() {
		w.writtenMu.Lock()
		for k := range w.written {
			if k.cluster == cluster {
				delete(w.written, k)
			}
		}
		w.writtenMu.Unlock()
	}
}

// sortOutcomes orders outcomes by cluster name, as status lists them.
func sortOutcomes(outcomes []outcome) {
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].cluster < outcomes[j].cluster })
}
