package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
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
	orphanAnnotationTrue                 = "true"
	namespaceNotFederatedMessageFmt      = "the namespace %q has no FederatedNamespace %s/%s, so nothing is placed"
	// reasonPending is no reason to report: placement cannot be known yet.
	reasonPending                = "pending"
	deletionLeftBehindMessageFmt = "gave up waiting %s for not-ready cluster(s) %s; their copies are left in place and lose the managed label when the cluster returns"
	createMessageFmt             = "Creating %s %q in cluster %q"
	updateMessageFmt             = "Updating %s %q in cluster %q"
	deleteMessageFmt             = "Deleting %s %q in cluster %q"
	removeLabelMessageFmt        = "Removing managed label from %s %q in cluster %q"
	failedMessageFmt             = "Failed to %s %s %q in cluster %q: %v"
	adoptedNote                  = " (adopting the existing object)"
)

// outcome is what happened to a federated object in one member.
type outcome struct {
	cluster string
	status  typesv1beta1.PropagationStatusValue
	message string
	remote  any
	// listed is whether the cluster appears in status.clusters.
	listed bool
	// pending means the member's cache is not synced yet: the object's
	// status is not written until it is, so a restart reports nothing
	// transient.
	pending bool
	requeue time.Duration
}

func (w *typeWorker) reconcile(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		w.changedMu.Lock()
		delete(w.changed, key)
		w.changedMu.Unlock()
		return w.releaseOrphans(ctx, key)
	}
	fed, ok := obj.(*unstructured.Unstructured)
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
		return w.delete(ctx, fed)
	}
	if !slices.Contains(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer) {
		fed = fed.DeepCopy()
		fed.SetFinalizers(append(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer))
		updated, err := w.hostResource(fed.GetNamespace()).Update(ctx, fed, metav1.UpdateOptions{})
		if err != nil {
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				w.recorder.Eventf(fed, corev1.EventTypeWarning, EventEnsureFinalizerError, "Failed to add finalizer %s: %v", corev1beta1.SyncControllerFinalizer, err)
			}
			return 0, err
		}
		fed = updated
	}
	return w.propagate(ctx, fed)
}

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
	if !w.target.namespaced || w.isNamespaces() || w.e.opts.Scope == corev1beta1.NamespaceScoped {
		return set.Select(p), "", ""
	}
	nsWorker := w.e.worker(corev1beta1.NamespacesTypeConfigName)
	if nsWorker == nil || nsWorker.informer == nil || !nsWorker.informer.HasSynced() {
		// The namespaces type starts in a moment (the FTC controller runs
		// namespaced types only while it is enabled); deciding before its
		// cache is complete would report every object NamespaceNotFederated.
		return placement.Result{}, reasonPending, ""
	}
	ns := fed.GetNamespace()
	obj, exists, err := nsWorker.informer.GetIndexer().GetByKey(ns + "/" + ns)
	if err != nil || !exists {
		return placement.Result{}, typesv1beta1.ReasonNamespaceNotFederated, fmt.Sprintf(namespaceNotFederatedMessageFmt, ns, ns, ns)
	}
	fns, _ := obj.(*unstructured.Unstructured)
	np, err := placement.FromUnstructured(fns.Object)
	if err != nil {
		return placement.Result{}, typesv1beta1.ReasonComputePlacementFailed, fmt.Sprintf("FederatedNamespace %s: %v", ns, err)
	}
	return set.SelectNamespaced(p, np), "", ""
}

// propagate makes every member's copy what fed asks for and writes fed's status.
func (w *typeWorker) propagate(ctx context.Context, fed *unstructured.Unstructured) (time.Duration, error) {
	w.reportTemplateProblems(fed)
	set := w.e.clusterSet()
	res, reason, message := w.place(fed, set)
	if reason == reasonPending {
		return time.Second, nil
	}
	if reason != "" {
		return 0, w.writeStatus(ctx, fed, nil, reason, message)
	}
	byCluster, invalid, opsErr := overrides.PerCluster(fed.Object)
	placed := make(map[string]bool, len(res.Clusters))
	var outcomes []outcome
	var jobs []func() outcome
	for _, name := range res.Unknown {
		outcomes = append(outcomes, outcome{cluster: name, listed: true, status: typesv1beta1.ClusterNotFound,
			message: "spec.placement.clusters names a cluster that is not joined"})
	}
	for _, name := range res.Clusters {
		placed[name] = true
		c, _ := set.Get(name)
		if !c.Ready {
			outcomes = append(outcomes, outcome{cluster: name, listed: true, status: typesv1beta1.ClusterNotReady})
			continue
		}
		var err error
		switch {
		case opsErr != nil:
			err = opsErr
		case invalid[name] != nil:
			err = invalid[name]
		}
		ops := byCluster[name]
		jobs = append(jobs, func() outcome { return w.syncPlaced(ctx, fed, name, ops, err) })
	}
	// Copies in members the object is no longer placed on are removed.
	namespace, name := w.memberName(fed)
	for _, c := range set.Names() {
		if placed[c] {
			continue
		}
		if cl, _ := set.Get(c); !cl.Ready {
			continue
		}
		if current := w.cached(c, namespace, name); current != nil {
			jobs = append(jobs, func() outcome { return w.removeUnplaced(ctx, fed, c, current) })
		}
	}
	outcomes = append(outcomes, runAll(jobs)...)
	return w.finish(ctx, fed, outcomes)
}

// runAll runs one job per member concurrently: a slow member never delays
// the others beyond its own timeout.
func runAll(jobs []func() outcome) []outcome {
	out := make([]outcome, len(jobs))
	if len(jobs) == 1 {
		out[0] = jobs[0]()
		return out
	}
	done := make(chan struct{}, len(jobs))
	for i, job := range jobs {
		go func() {
			out[i] = job()
			done <- struct{}{}
		}()
	}
	for range jobs {
		<-done
	}
	return out
}

// finish writes the status the outcomes add up to and says when to look again.
func (w *typeWorker) finish(ctx context.Context, fed *unstructured.Unstructured, outcomes []outcome) (time.Duration, error) {
	var requeue time.Duration
	pending := false
	for _, o := range outcomes {
		if o.pending {
			pending = true
		}
		if o.requeue > 0 && (requeue == 0 || o.requeue < requeue) {
			requeue = o.requeue
		}
	}
	if pending {
		return requeue, nil
	}
	failed, retry := false, false
	for _, o := range outcomes {
		failed = failed || o.status != ""
		retry = retry || retriable(o.status)
	}
	if !failed {
		w.settled(fed)
	}
	if err := w.writeStatus(ctx, fed, outcomes, "", ""); err != nil {
		return 0, err
	}
	if retry && requeue == 0 {
		// A write a member refused or did not answer is tried again with
		// the queue's backoff, as a member's trouble may pass.
		return 0, errRetry
	}
	return requeue, nil
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
// sync, CachedRetrievalFailed after the grace period).
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
		requeue: 5 * time.Second}
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

// syncPlaced creates or updates the copy of fed in a member it is placed on.
func (w *typeWorker) syncPlaced(ctx context.Context, fed *unstructured.Unstructured, cluster string, ops []overrides.Operation, opsErr error) outcome {
	out := outcome{cluster: cluster, listed: true}
	if ok, o := w.memberCache(cluster); !ok {
		return o
	}
	if opsErr != nil {
		out.status, out.message = typesv1beta1.ApplyOverridesFailed, opsErr.Error()
		return out
	}
	namespace, name := w.memberName(fed)
	desired, hash, err := desiredObject(fed.Object, name, namespace, w.target, ops)
	if err != nil {
		out.status, out.message = typesv1beta1.ComputeResourceFailed, err.Error()
		var oe *overridesError
		if errors.As(err, &oe) {
			out.status = typesv1beta1.ApplyOverridesFailed
		}
		return out
	}
	current := w.cached(cluster, namespace, name)
	if current == nil {
		return w.create(ctx, fed, cluster, desired, hash)
	}
	if current.GetDeletionTimestamp() != nil {
		// Someone deletes the copy; it is created again once it is gone.
		out.status, out.requeue = typesv1beta1.WaitingForRemoval, waitForRemovalRequeue
		return out
	}
	return w.update(ctx, fed, cluster, desired, hash, current, false)
}

func (w *typeWorker) retainReplicas(fed *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedBool(fed.Object, "spec", "retainReplicas")
	return v
}

func (w *typeWorker) create(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string) outcome {
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
	dispatchDuration.WithLabelValues("create").Observe(time.Since(start).Seconds())
	if err == nil {
		w.observeWrite(fed)
		w.remember(cluster, fed, hash, created.GetResourceVersion())
		w.recorder.Eventf(fed, corev1.EventTypeNormal, EventCreateInCluster, createMessageFmt, w.target.kind, name, cluster)
		out.remote = w.remoteStatus(created)
		return out
	}
	if apierrors.IsAlreadyExists(err) {
		return w.adopt(ctx, fed, cluster, desired, hash)
	}
	if apierrors.IsNotFound(err) && namespace != "" {
		// The namespace is being propagated to the member at the same
		// time; try again shortly.
		out.requeue = time.Second
	}
	out.status, out.message = failure(err, typesv1beta1.CreationFailed, typesv1beta1.CreationTimedOut)
	w.recorder.Eventf(fed, corev1.EventTypeWarning, EventCreateInCluster+failedSuffix, failedMessageFmt, "create", w.target.kind, name, cluster, err)
	return out
}

// adopt handles an object of the same name that exists in the member
// without the managed label.
func (w *typeWorker) adopt(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string) outcome {
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
	return w.update(ctx, fed, cluster, desired, hash, live, true)
}

func (w *typeWorker) update(ctx context.Context, fed *unstructured.Unstructured, cluster string, desired map[string]any, hash string, current *unstructured.Unstructured, adopting bool) outcome {
	out := outcome{cluster: cluster, listed: true, remote: w.remoteStatus(current)}
	if !adopting && (w.recorded(cluster, fed, hash, current.GetResourceVersion()) || upToDate(desired, current.Object, hash)) {
		return out
	}
	namespace, name := w.memberName(fed)
	if err := retention.Retain(w.target.gk, desired, current.Object, w.retainReplicas(fed)); err != nil {
		out.status, out.message = typesv1beta1.FieldRetentionFailed, err.Error()
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
	dispatchDuration.WithLabelValues("update").Observe(time.Since(start).Seconds())
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
	w.remember(cluster, fed, hash, updated.GetResourceVersion())
	note := ""
	if adopting {
		note = adoptedNote
	}
	w.recorder.Eventf(fed, corev1.EventTypeNormal, EventUpdateInCluster, updateMessageFmt+note, w.target.kind, name, cluster)
	out.remote = w.remoteStatus(updated)
	return out
}

// removeUnplaced removes the copy in a member fed is no longer placed on:
// it is deleted, or only unlabelled when fed is marked to orphan or the copy
// is the host's own namespace.
func (w *typeWorker) removeUnplaced(ctx context.Context, fed *unstructured.Unstructured, cluster string, current *unstructured.Unstructured) outcome {
	if ok, o := w.memberCache(cluster); !ok {
		return o
	}
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
	dispatchDuration.WithLabelValues("delete").Observe(time.Since(start).Seconds())
	if err != nil && !apierrors.IsNotFound(err) {
		out.status, out.message = failure(err, typesv1beta1.DeletionFailed, typesv1beta1.DeletionTimedOut)
		w.recorder.Eventf(fed, corev1.EventTypeWarning, EventDeleteInCluster+failedSuffix, failedMessageFmt, "delete", w.target.kind, current.GetName(), cluster, err)
		return out
	}
	w.forget(cluster, fed)
	w.recorder.Eventf(fed, corev1.EventTypeNormal, EventDeleteInCluster, deleteMessageFmt, w.target.kind, current.GetName(), cluster)
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
		w.recorder.Eventf(fed, corev1.EventTypeNormal, EventRemoveManagedLabelFromInCluster, removeLabelMessageFmt, w.target.kind, obj.GetName(), cluster)
	}
	return out
}

// delete removes fed's copies from every member, or unlabels them, and then
// releases fed. Members that are not Ready are waited for up to the
// configured timeout from the deletion request; past it fed is released
// and what is left there is reported in an event.
func (w *typeWorker) delete(ctx context.Context, fed *unstructured.Unstructured) (time.Duration, error) {
	if !slices.Contains(fed.GetFinalizers(), corev1beta1.SyncControllerFinalizer) {
		return 0, nil
	}
	set := w.e.clusterSet()
	deadline := fed.GetDeletionTimestamp().Add(w.e.opts.NotReadyClusterDeletionTimeout)
	opts, optsErr := deleteOptions(fed)
	namespace, name := w.memberName(fed)
	var outcomes []outcome
	var leftBehind []string
	var jobs []func() outcome
	for _, c := range set.Names() {
		cl, _ := set.Get(c)
		if !cl.Ready {
			if w.cached(c, namespace, name) == nil && !listsCluster(fed.Object, c) {
				// Never placed there, as far as anyone knows.
				continue
			}
			if time.Now().Before(deadline) {
				outcomes = append(outcomes, outcome{cluster: c, listed: true, status: typesv1beta1.ClusterNotReady,
					message: "waiting for the cluster to delete the copy", requeue: time.Until(deadline) + time.Second})
			} else {
				leftBehind = append(leftBehind, c)
			}
			continue
		}
		jobs = append(jobs, func() outcome {
			if ok, o := w.memberCache(c); !ok {
				if o.pending {
					o.pending, o.listed, o.status = false, true, typesv1beta1.WaitingForRemoval
				}
				return o
			}
			current := w.cached(c, namespace, name)
			if current == nil {
				return outcome{cluster: c}
			}
			keep, err := w.keepCopy(ctx, fed, c)
			if err != nil {
				return outcome{cluster: c, listed: true, status: typesv1beta1.RetrievalFailed, message: err.Error(), requeue: 5 * time.Second}
			}
			if keep {
				return w.removeLabel(ctx, fed, c, current)
			}
			if optsErr != nil {
				return outcome{cluster: c, listed: true, status: typesv1beta1.DeletionFailed, message: optsErr.Error()}
			}
			return w.deleteCopy(ctx, fed, c, current, opts)
		})
	}
	outcomes = append(outcomes, runAll(jobs)...)
	remaining := false
	var requeue time.Duration
	for _, o := range outcomes {
		if o.listed {
			remaining = true
		}
		if o.requeue > 0 && (requeue == 0 || o.requeue < requeue) {
			requeue = o.requeue
		}
	}
	if remaining {
		if requeue == 0 {
			requeue = 10 * time.Second
		}
		return requeue, w.writeStatus(ctx, fed, outcomes, "", "")
	}
	if len(leftBehind) > 0 {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, eventDeletionLeftInNotReadyClusters, deletionLeftBehindMessageFmt,
			w.e.opts.NotReadyClusterDeletionTimeout, strings.Join(leftBehind, ", "))
	}
	obj := fed.DeepCopy()
	obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == corev1beta1.SyncControllerFinalizer }))
	if _, err := w.hostResource(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("remove finalizer: %w", err)
	}
	w.settled(fed)
	return 0, nil
}

// releaseOrphans unlabels the member copies of a federated object that no
// longer exists: they are kept, but no longer managed.
func (w *typeWorker) releaseOrphans(ctx context.Context, key string) (time.Duration, error) {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	if w.isNamespaces() {
		namespace = ""
	}
	if w.e.opts.Scope == corev1beta1.NamespaceScoped && namespace != w.e.opts.Namespace {
		return 0, nil
	}
	var jobs []func() outcome
	for _, c := range w.e.opts.Readiness.ReadyClusters() {
		current := w.cached(c, namespace, name)
		if current == nil {
			continue
		}
		jobs = append(jobs, func() outcome { return w.removeLabel(ctx, nil, c, current) })
	}
	for _, o := range runAll(jobs) {
		if o.listed {
			return time.Second, fmt.Errorf("release orphaned %s %s in cluster %s: %s", w.target.kind, key, o.cluster, o.message)
		}
	}
	return 0, nil
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

// errRetry asks for the object to be reconciled again with backoff,
// without logging an error: its status already says what failed.
var errRetry = errors.New("retry member writes")

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

func (w *typeWorker) reportTemplateProblems(fed *unstructured.Unstructured) {
	observed, _, _ := unstructured.NestedInt64(fed.Object, "status", "observedGeneration")
	if observed == fed.GetGeneration() {
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

func objectKey(fed *unstructured.Unstructured) string {
	if fed.GetNamespace() == "" {
		return fed.GetName()
	}
	return fed.GetNamespace() + "/" + fed.GetName()
}

func (w *typeWorker) remember(cluster string, fed *unstructured.Unstructured, hash, rv string) {
	w.writtenMu.Lock()
	w.written[writeKey{cluster, objectKey(fed)}] = writeRecord{hash: hash, resourceVersion: rv}
	w.writtenMu.Unlock()
}

func (w *typeWorker) recorded(cluster string, fed *unstructured.Unstructured, hash, rv string) bool {
	w.writtenMu.Lock()
	defer w.writtenMu.Unlock()
	r, ok := w.written[writeKey{cluster, objectKey(fed)}]
	return ok && r.hash == hash && r.resourceVersion == rv
}

func (w *typeWorker) forget(cluster string, fed *unstructured.Unstructured) {
	w.forgetKey(cluster, objectKey(fed))
}

func (w *typeWorker) forgetKey(cluster, key string) {
	w.writtenMu.Lock()
	delete(w.written, writeKey{cluster, key})
	w.writtenMu.Unlock()
}

// sortOutcomes orders outcomes by cluster name, as status lists them.
func sortOutcomes(outcomes []outcome) {
	sort.Slice(outcomes, func(i, j int) bool { return outcomes[i].cluster < outcomes[j].cluster })
}
