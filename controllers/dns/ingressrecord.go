package dns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	"github.com/kubefed-io/kubefed/pkg/dnsrecord"
)

// IngressRecordControllerName names the IngressDNSRecord status controller.
const IngressRecordControllerName = "ingressdnsrecord-controller"

// IngressDNSRecordReconciler fills the status of IngressDNSRecords with one
// entry per ready member cluster that has the Ingress of the record's
// namespace and name, holding that Ingress's load-balancer status.
type IngressDNSRecordReconciler struct {
	// Client reads IngressDNSRecords and KubeFedClusters, from the manager's
	// cache, and writes record status. SetupWithManager sets the manager's
	// client when nil.
	Client client.Client
	// Namespace is the KubeFed namespace, which holds the KubeFedClusters.
	Namespace string
	// Members reads the member clusters' Ingresses from the shared member
	// caches (an *informermanager.Manager).
	Members MemberCaches
	// Readiness says which members are ready (a *cluster.ReadinessTracker);
	// only ready members contribute targets.
	Readiness Readiness
	// SyncRetry is how soon a record is looked at again while a ready
	// member's cache is not synced; DefaultSyncRetry when zero.
	SyncRetry time.Duration
	// Pulled, on the control plane, tells the Pull-mode members, whose
	// entries their agents write (Agent) and the control plane keeps while
	// they are ready.
	Pulled func(cluster string) bool
	// Agent, in a Pull-mode member's agent, is the agent's cluster: the
	// reconciler then writes that cluster's entry alone, from its own copy
	// of the Ingress, and leaves the rest to the control plane.
	Agent string
}

// SetupWithManager registers the controller with mgr. It watches
// IngressDNSRecords, the KubeFedClusters of Namespace, member readiness and
// the members' managed Ingresses.
func (r *IngressDNSRecordReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Members == nil || r.Readiness == nil {
		return errors.New("IngressDNSRecordReconciler needs Members and Readiness")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	// Readiness changes come from the tracker; only clusters coming and
	// going matter here.
	var membership predicate.Predicate = predicate.Funcs{UpdateFunc: func(_ event.UpdateEvent) bool { return false }}
	if r.Agent != "" {
		membership = agentClusterChanged()
	}
	return builder.ControllerManagedBy(mgr).
		Named(IngressRecordControllerName).
		For(&dnsv1a1.IngressDNSRecord{}).
		Watches(&fedv1b1.KubeFedCluster{}, handler.EnqueueRequestsFromMapFunc(r.allRecords),
			builder.WithPredicates(inNamespace, membership)).
		WatchesRawSource(readinessSource(r.Readiness, func(ctx context.Context) []reconcile.Request { return r.allRecords(ctx, nil) })).
		WatchesRawSource(memberSource(r.Members, ingressesGVR, sameName)).
		Complete(r)
}

func (r *IngressDNSRecordReconciler) allRecords(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &dnsv1a1.IngressDNSRecordList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing IngressDNSRecords")
		return nil
	}
	return requestsOf(list.Items)
}

// Reconcile rebuilds one record's status from the ready members' copies of
// the Ingress and writes it when it changed.
func (r *IngressDNSRecordReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rec := &dnsv1a1.IngressDNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.Agent != "" {
		return r.reconcileAgent(ctx, rec)
	}
	clusters := &fedv1b1.KubeFedClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list KubeFedClusters: %w", err)
	}
	slices.SortFunc(clusters.Items, func(a, b fedv1b1.KubeFedCluster) int { return strings.Compare(a.Name, b.Name) })

	previous := map[string]dnsv1a1.ClusterIngressDNS{}
	for _, c := range rec.Status.DNS {
		previous[c.Cluster] = c
	}
	var (
		entries     []dnsv1a1.ClusterIngressDNS
		unsynced    []string
		ready       int
		withTargets int
		// withIngress counts the members known to have the Ingress.
		withIngress int
	)
	for i := range clusters.Items {
		name := clusters.Items[i].Name
		if !r.Readiness.IsReady(name) {
			continue
		}
		ready++
		if r.Pulled != nil && r.Pulled(name) {
			// Its agent's entry, there while its copy of the Ingress is.
			if prev, ok := previous[name]; ok {
				entries = append(entries, prev)
				withIngress++
				if !dnsrecord.LoadBalancerTargets(prev.LoadBalancer).Empty() {
					withTargets++
				}
			}
			continue
		}
		ing := &networkingv1.Ingress{}
		found, err := memberObject(r.Members, name, ingressesGVR, req.NamespacedName, ing)
		if errors.Is(err, errNotSynced) {
			unsynced = append(unsynced, name)
			if prev, ok := previous[name]; ok {
				entries = append(entries, prev)
			}
			continue
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("read Ingress %s in cluster %s: %w", req.NamespacedName, name, err)
		}
		if !found {
			// As in KubeFed, every ready member has an entry, empty where
			// it has no Ingress.
			entries = append(entries, dnsv1a1.ClusterIngressDNS{Cluster: name})
			continue
		}
		withIngress++
		entry := dnsv1a1.ClusterIngressDNS{Cluster: name, LoadBalancer: dnsrecord.IngressLoadBalancer(ing.Status.LoadBalancer)}
		if !dnsrecord.LoadBalancerTargets(entry.LoadBalancer).Empty() {
			withTargets++
		}
		entries = append(entries, entry)
	}

	status := rec.Status.DeepCopy()
	status.DNS = entries
	var cond metav1.Condition
	switch {
	case withTargets > 0:
		cond = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonTargetsFound,
			Message: fmt.Sprintf("%d of %d ready member clusters have load-balancer targets", withTargets, ready)}
	case len(unsynced) > 0:
	case withIngress == 0:
		cond = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonIngressNotFound,
			Message: fmt.Sprintf("none of the %d ready member clusters has an Ingress %s/%s managed by KubeFed", ready, rec.Namespace, rec.Name)}
	default:
		cond = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNoTargets,
			Message: fmt.Sprintf("the Ingress exists in %d of %d ready member clusters but none has a load-balancer address", withIngress, ready)}
	}
	if invalid := dnsrecord.InvalidIngressHosts(rec); len(invalid) > 0 {
		cond = invalidNamesCondition(invalid, "spec.hosts", cond)
	}
	if cond.Type != "" {
		cond.ObservedGeneration = rec.Generation
		meta.SetStatusCondition(&status.Conditions, cond)
	}

	result := reconcile.Result{}
	if len(unsynced) > 0 {
		log.FromContext(ctx).V(1).Info("Member caches not synced; looking again soon", "clusters", unsynced)
		result.RequeueAfter = r.syncRetry()
	}
	if equality.Semantic.DeepEqual(&rec.Status, status) {
		return result, nil
	}
	rec.Status = *status
	if err := r.Client.Status().Update(ctx, rec); err != nil {
		return reconcile.Result{}, fmt.Errorf("update IngressDNSRecord status: %w", err)
	}
	return result, nil
}

// reconcileAgent writes the agent's own cluster's entry of the record, or
// removes it when the cluster has no copy of the Ingress. A cluster that is
// not ready is left to the control plane.
func (r *IngressDNSRecordReconciler) reconcileAgent(ctx context.Context, rec *dnsv1a1.IngressDNSRecord) (reconcile.Result, error) {
	if _, speaks, err := agentSpeaks(ctx, r.Client, r.Namespace, r.Agent, r.Readiness); err != nil || !speaks {
		return reconcile.Result{}, err
	}
	key := client.ObjectKeyFromObject(rec)
	ing := &networkingv1.Ingress{}
	found, err := memberObject(r.Members, r.Agent, ingressesGVR, key, ing)
	if errors.Is(err, errNotSynced) {
		return reconcile.Result{RequeueAfter: r.syncRetry()}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read Ingress %s: %w", key, err)
	}
	var entry *dnsv1a1.ClusterIngressDNS
	if found {
		entry = &dnsv1a1.ClusterIngressDNS{Cluster: r.Agent, LoadBalancer: dnsrecord.IngressLoadBalancer(ing.Status.LoadBalancer)}
	}
	next, changed := withEntry(rec.Status.DNS, r.Agent, entry, func(e dnsv1a1.ClusterIngressDNS) string { return e.Cluster })
	if !changed {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFromWithOptions(rec.DeepCopy(), client.MergeFromWithOptimisticLock{})
	rec.Status.DNS = next
	if err := r.Client.Status().Patch(ctx, rec, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("write cluster %s's entry of IngressDNSRecord %s: %w", r.Agent, key, err)
	}
	return reconcile.Result{}, nil
}

func (r *IngressDNSRecordReconciler) syncRetry() time.Duration {
	if r.SyncRetry > 0 {
		return r.SyncRetry
	}
	return DefaultSyncRetry
}
