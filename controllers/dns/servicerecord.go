package dns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// ServiceRecordControllerName names the ServiceDNSRecord status controller.
const ServiceRecordControllerName = "servicednsrecord-controller"

// DefaultSyncRetry is how soon a record is looked at again while a ready
// member's cache has not listed its objects yet.
const DefaultSyncRetry = 2 * time.Second

// domainRefIndex indexes ServiceDNSRecords by the Domain they name.
const domainRefIndex = "spec.domainRef"

// ServiceDNSRecordReconciler fills the status of ServiceDNSRecords: the
// Domain's zone, and one entry per ready member cluster with that member's
// zones, region and the load-balancer status of its copy of the Service of
// the record's namespace and name. Entries of members that stop being ready
// stay, without targets, so that their zone and region names keep pointing
// up to the healthy members; members never seen ready are left out.
type ServiceDNSRecordReconciler struct {
	// Client reads ServiceDNSRecords, Domains and KubeFedClusters, from the
	// manager's cache, and writes record status. SetupWithManager sets the
	// manager's client when nil.
	Client client.Client
	// Namespace is the KubeFed namespace, which holds the Domains and
	// KubeFedClusters.
	Namespace string
	// Members reads the member clusters' Services and EndpointSlices from
	// the shared member caches (an *informermanager.Manager).
	Members MemberCaches
	// Readiness says which members are ready (a *cluster.ReadinessTracker);
	// only ready members contribute targets.
	Readiness Readiness
	// SyncRetry is how soon a record is looked at again while a ready
	// member's cache is not synced; DefaultSyncRetry when zero.
	SyncRetry time.Duration
	// Pulled, on the control plane, tells the Pull-mode members. Their
	// agents write their entries (Agent); the control plane keeps what they
	// wrote while they are ready, and writes their entries without targets
	// when they are not, as it does for push members.
	Pulled func(cluster string) bool
	// Agent, in a Pull-mode member's agent, is the agent's cluster: the
	// reconciler then writes that cluster's entry alone, from its own copy
	// of the Service, and leaves the other entries, the domain and the
	// condition to the control plane.
	Agent string
}

// SetupWithManager registers the controller with mgr. It watches
// ServiceDNSRecords, the Domains and KubeFedClusters of Namespace, member
// readiness, and the members' managed Services and EndpointSlices.
func (r *ServiceDNSRecordReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Members == nil || r.Readiness == nil {
		return errors.New("ServiceDNSRecordReconciler needs Members and Readiness")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	b := builder.ControllerManagedBy(mgr).Named(ServiceRecordControllerName).For(&dnsv1a1.ServiceDNSRecord{})
	if r.Agent == "" {
		// Domains are the control plane's: an agent may not read them.
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &dnsv1a1.ServiceDNSRecord{}, domainRefIndex,
			func(o client.Object) []string { return []string{o.(*dnsv1a1.ServiceDNSRecord).Spec.DomainRef} }); err != nil {
			return fmt.Errorf("index ServiceDNSRecords by domainRef: %w", err)
		}
		b = b.Watches(&dnsv1a1.Domain{}, handler.EnqueueRequestsFromMapFunc(r.recordsOfDomain), builder.WithPredicates(inNamespace))
	}
	clusterChanges := topologyChanged()
	if r.Agent != "" {
		clusterChanges = agentClusterChanged()
	}
	return b.
		Watches(&fedv1b1.KubeFedCluster{}, handler.EnqueueRequestsFromMapFunc(r.allRecords),
			builder.WithPredicates(inNamespace, clusterChanges)).
		WatchesRawSource(readinessSource(r.Readiness, func(ctx context.Context) []reconcile.Request { return r.allRecords(ctx, nil) })).
		WatchesRawSource(memberSource(r.Members, servicesGVR, sameName)).
		WatchesRawSource(memberSource(r.Members, endpointSlicesGVR, serviceOfSlice)).
		Complete(r)
}

// topologyChanged passes KubeFedCluster events that can change records:
// clusters coming and going, and changes of their zones or region.
func topologyChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*fedv1b1.KubeFedCluster)
			n, ok2 := e.ObjectNew.(*fedv1b1.KubeFedCluster)
			if !ok1 || !ok2 {
				return true
			}
			return topologyDiffers(o, n)
		},
	}
}

// topologyDiffers says whether two versions of a KubeFedCluster differ in
// the zones or region that records name.
func topologyDiffers(o, n *fedv1b1.KubeFedCluster) bool {
	return !slices.Equal(o.Status.Zones, n.Status.Zones) || regionOf(o) != regionOf(n)
}

func regionOf(c *fedv1b1.KubeFedCluster) string {
	if c.Status.Region == nil {
		return ""
	}
	return *c.Status.Region
}

func (r *ServiceDNSRecordReconciler) recordsOfDomain(ctx context.Context, o client.Object) []reconcile.Request {
	list := &dnsv1a1.ServiceDNSRecordList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{domainRefIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the ServiceDNSRecords of a Domain", "domain", o.GetName())
		return nil
	}
	return requestsOf(list.Items)
}

func (r *ServiceDNSRecordReconciler) allRecords(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &dnsv1a1.ServiceDNSRecordList{}
	if err := r.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing ServiceDNSRecords")
		return nil
	}
	return requestsOf(list.Items)
}

func requestsOf[T any, PT interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for i := range items {
		o := PT(&items[i])
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	return out
}

// Reconcile rebuilds one record's status from the Domain, the ready members
// and their copies of the Service, and writes it when it changed.
func (r *ServiceDNSRecordReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rec := &dnsv1a1.ServiceDNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.Agent != "" {
		return r.reconcileAgent(ctx, rec)
	}

	domain := &dnsv1a1.Domain{}
	domainErr := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: rec.Spec.DomainRef}, domain)
	if domainErr != nil && !apierrors.IsNotFound(domainErr) {
		return reconcile.Result{}, fmt.Errorf("get Domain %s/%s: %w", r.Namespace, rec.Spec.DomainRef, domainErr)
	}

	clusters := &fedv1b1.KubeFedClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list KubeFedClusters: %w", err)
	}
	slices.SortFunc(clusters.Items, func(a, b fedv1b1.KubeFedCluster) int { return strings.Compare(a.Name, b.Name) })

	previous := map[string]dnsv1a1.ClusterDNS{}
	for _, c := range rec.Status.DNS {
		previous[c.Cluster] = c
	}
	var (
		entries  []dnsv1a1.ClusterDNS
		unsynced []string
		ready    int
		found    int
	)
	for i := range clusters.Items {
		kfc := &clusters.Items[i]
		entry := dnsv1a1.ClusterDNS{Cluster: kfc.Name, Zones: slices.Clone(kfc.Status.Zones), Region: regionOf(kfc)}
		prev, known := previous[kfc.Name]
		if !r.Readiness.IsReady(kfc.Name) {
			if known {
				entries = append(entries, entry)
			}
			continue
		}
		ready++
		if r.Pulled != nil && r.Pulled(kfc.Name) {
			// Its agent's entry; the Service counts as found where it
			// has targets (the agent reports no more).
			if known {
				entries = append(entries, prev)
				if !dnsrecord.LoadBalancerTargets(prev.LoadBalancer).Empty() {
					found++
				}
			}
			continue
		}
		lb, exists, err := r.memberLoadBalancer(kfc.Name, req.NamespacedName, rec.Spec.AllowServiceWithoutEndpoints)
		if errors.Is(err, errNotSynced) {
			// Keep what was known until the cache can tell.
			unsynced = append(unsynced, kfc.Name)
			if known {
				entries = append(entries, prev)
			}
			continue
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("read Service %s in cluster %s: %w", req.NamespacedName, kfc.Name, err)
		}
		if exists {
			found++
		}
		entry.LoadBalancer = lb
		entries = append(entries, entry)
	}

	status := rec.Status.DeepCopy()
	status.DNS = entries
	status.Domain = ""
	if domainErr == nil {
		status.Domain = domain.Domain
	}
	cond, ok := serviceCondition(rec, domainErr == nil, ready, found, len(unsynced) > 0, entries)
	if domainErr == nil {
		named := rec.DeepCopy()
		named.Status.Domain = status.Domain
		if invalid := dnsrecord.InvalidServiceNames(named); len(invalid) > 0 {
			cond = invalidNamesCondition(invalid, "from the record's name and namespace, spec.externalName or spec.dnsPrefix", cond)
			ok = true
		}
	}
	if ok {
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
		return reconcile.Result{}, fmt.Errorf("update ServiceDNSRecord status: %w", err)
	}
	return result, nil
}

// reconcileAgent writes the agent's own cluster's entry of the record:
// its zones and region, and what its copy of the Service contributes. A
// cluster that is not ready is left to the control plane.
func (r *ServiceDNSRecordReconciler) reconcileAgent(ctx context.Context, rec *dnsv1a1.ServiceDNSRecord) (reconcile.Result, error) {
	kfc, speaks, err := agentSpeaks(ctx, r.Client, r.Namespace, r.Agent, r.Readiness)
	if err != nil || !speaks {
		return reconcile.Result{}, err
	}
	key := client.ObjectKeyFromObject(rec)
	lb, _, err := r.memberLoadBalancer(r.Agent, key, rec.Spec.AllowServiceWithoutEndpoints)
	if errors.Is(err, errNotSynced) {
		return reconcile.Result{RequeueAfter: r.syncRetry()}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("read Service %s: %w", key, err)
	}
	entry := dnsv1a1.ClusterDNS{Cluster: r.Agent, Zones: slices.Clone(kfc.Status.Zones), Region: regionOf(kfc), LoadBalancer: lb}
	next, changed := withEntry(rec.Status.DNS, r.Agent, &entry, func(e dnsv1a1.ClusterDNS) string { return e.Cluster })
	if !changed {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFromWithOptions(rec.DeepCopy(), client.MergeFromWithOptimisticLock{})
	rec.Status.DNS = next
	if err := r.Client.Status().Patch(ctx, rec, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("write cluster %s's entry of ServiceDNSRecord %s: %w", r.Agent, key, err)
	}
	return reconcile.Result{}, nil
}

// agentSpeaks says whether an agent writes its cluster's entries of the
// records now: while its KubeFedCluster is in Pull mode and Ready, as the
// control plane sees it (the Ready condition, the source of the control
// plane's readiness), and its own probe says so too. Otherwise the control
// plane writes the entry, or another mode owns it, and an agent writing
// too would undo the control plane's write and be undone in turn. The
// record's status write is a merge patch of status.dns alone, guarded by
// the resourceVersion: a conflict with the control plane's write is retried
// on the record as it then is, and fields of status this agent does not
// know are left as they are.
func agentSpeaks(ctx context.Context, c client.Client, namespace, cluster string, readiness Readiness) (*fedv1b1.KubeFedCluster, bool, error) {
	kfc := &fedv1b1.KubeFedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, kfc); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return kfc, kfc.PullMode() && kfc.IsReady() && readiness.IsReady(cluster), nil
}

// agentClusterChanged passes the changes of an agent's KubeFedCluster that
// decide whether and what it writes: mode, readiness, zones and region.
func agentClusterChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*fedv1b1.KubeFedCluster)
			n, ok2 := e.ObjectNew.(*fedv1b1.KubeFedCluster)
			if !ok1 || !ok2 {
				return true
			}
			return o.Spec.Mode != n.Spec.Mode || o.IsReady() != n.IsReady() || topologyDiffers(o, n)
		},
	}
}

// withEntry returns entries, sorted by cluster, with the entry of cluster
// set to entry, or removed when entry is nil, and whether that changed
// them.
func withEntry[T any](entries []T, cluster string, entry *T, clusterOf func(T) string) ([]T, bool) {
	out := make([]T, 0, len(entries)+1)
	for _, e := range entries {
		if clusterOf(e) != cluster {
			out = append(out, e)
		}
	}
	if entry != nil {
		i, _ := slices.BinarySearchFunc(out, cluster, func(e T, c string) int { return strings.Compare(clusterOf(e), c) })
		out = slices.Insert(out, i, *entry)
	}
	return out, !equality.Semantic.DeepEqual(entries, out)
}

func (r *ServiceDNSRecordReconciler) syncRetry() time.Duration {
	if r.SyncRetry > 0 {
		return r.SyncRetry
	}
	return DefaultSyncRetry
}

// memberLoadBalancer returns what one member's copy of the Service
// contributes, and whether that copy exists.
func (r *ServiceDNSRecordReconciler) memberLoadBalancer(cluster string, key types.NamespacedName, allowWithoutEndpoints bool) (corev1.LoadBalancerStatus, bool, error) {
	svc := &corev1.Service{}
	found, err := memberObject(r.Members, cluster, servicesGVR, key, svc)
	if err != nil || !found {
		return corev1.LoadBalancerStatus{}, false, err
	}
	var endpointSlices []*discoveryv1.EndpointSlice
	if !allowWithoutEndpoints {
		if endpointSlices, err = memberEndpointSlices(r.Members, cluster, key); err != nil {
			return corev1.LoadBalancerStatus{}, true, err
		}
	}
	return dnsrecord.ServiceLoadBalancer(svc, endpointSlices, allowWithoutEndpoints), true, nil
}

// invalidNamesCondition is the Ready condition of a record that asks for
// names DNS does not allow; what the targets' condition would have said
// follows, when it was known.
func invalidNamesCondition(invalid []string, from string, targets metav1.Condition) metav1.Condition {
	verb, it := "is not a valid DNS name", "it"
	if len(invalid) > 1 {
		verb, it = "are not valid DNS names", "them"
	}
	msg := fmt.Sprintf("%s %s (%s; at most 63 characters per label, lower-case letters, digits and '-') and no record is published for %s",
		strings.Join(invalid, ", "), verb, from, it)
	if targets.Message != "" {
		msg += "; " + targets.Message
	}
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalidDNSName, Message: msg}
}

// serviceCondition says what the Ready condition should be. It returns
// false while a member's cache is incomplete and no target is known, when
// "not found" could be wrong.
func serviceCondition(rec *dnsv1a1.ServiceDNSRecord, domainFound bool, ready, found int, unsynced bool, entries []dnsv1a1.ClusterDNS) (metav1.Condition, bool) {
	withTargets := 0
	for _, e := range entries {
		if !dnsrecord.LoadBalancerTargets(e.LoadBalancer).Empty() {
			withTargets++
		}
	}
	switch {
	case !domainFound:
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDomainNotFound,
			Message: fmt.Sprintf("Domain %q does not exist in the KubeFed namespace; no DNS records are published", rec.Spec.DomainRef)}, true
	case withTargets > 0:
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonTargetsFound,
			Message: fmt.Sprintf("%d of %d ready member clusters have load-balancer targets", withTargets, ready)}, true
	case unsynced:
		return metav1.Condition{}, false
	case found == 0:
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonServiceNotFound,
			Message: fmt.Sprintf("none of the %d ready member clusters has a Service %s/%s managed by KubeFed", ready, rec.Namespace, rec.Name)}, true
	default:
		msg := fmt.Sprintf("the Service exists in %d of %d ready member clusters but none has a load-balancer address", found, ready)
		if !rec.Spec.AllowServiceWithoutEndpoints {
			msg += " and a ready endpoint (see allowServiceWithoutEndpoints)"
		}
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNoTargets, Message: msg}, true
	}
}
