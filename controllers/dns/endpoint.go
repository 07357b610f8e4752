package dns

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	"github.com/kubefed-io/kubefed/pkg/dnsrecord"
)

// Names of the DNSEndpoint controllers, one per record kind.
const (
	ServiceEndpointControllerName = "servicedns-endpoint-controller"
	IngressEndpointControllerName = "ingressdns-endpoint-controller"
)

// DNSEndpointReconciler writes, for every ServiceDNSRecord and
// IngressDNSRecord, the DNSEndpoint of the same namespace named
// service-<name> or ingress-<name> with the records pkg/dnsrecord builds
// from the record's spec and status. The record controls its DNSEndpoint,
// so deleting the record deletes the DNSEndpoint through garbage
// collection, and ExternalDNS then withdraws the records. A DNSEndpoint is
// written only when its endpoints or owner differ from what they should be,
// so ExternalDNS sees a new generation only for a real change.
type DNSEndpointReconciler struct {
	// Client reads records and DNSEndpoints, from the manager's cache, and
	// writes DNSEndpoints. SetupWithManager sets the manager's client when nil.
	Client client.Client
	// Scheme knows the record types, for owner references. SetupWithManager
	// sets the manager's scheme when nil.
	Scheme *runtime.Scheme
	// Resolve looks up load-balancer hostnames that one CNAME cannot stand
	// for (see dnsrecord.ServiceEndpointsResolving); the system resolver,
	// within resolveTimeout, when nil.
	Resolve dnsrecord.Resolver
	// Recorder records, on a record, that its DNSEndpoint cannot be
	// written (another object controls it, the API server refuses it): the
	// record's own status says nothing of it. SetupWithManager sets the
	// manager's when nil; nil records nothing.
	Recorder events.EventRecorder
	// ServiceRecords and IngressRecords say which of the two controllers
	// SetupWithManager registers, as the CrossClusterServiceDiscovery and
	// FederatedIngress feature gates say (KubeFed ran each under its own);
	// both when neither is set.
	ServiceRecords, IngressRecords bool

	// answers are the last addresses each hostname resolved to, used for
	// up to staleAnswers while its lookups fail: a resolver timing out
	// would otherwise take a member's addresses out of the records, or
	// turn them into a CNAME to one member.
	answersMu sync.Mutex
	answers   map[string]answer
	pruned    time.Time
}

type answer struct {
	addrs []string
	at    time.Time
}

const (
	// resolveTimeout bounds one hostname's lookup.
	resolveTimeout = 5 * time.Second
	// staleAnswers is how long a hostname's last addresses stand in for
	// lookups that fail.
	staleAnswers = time.Hour
)

func (r *DNSEndpointReconciler) resolver(ctx context.Context) dnsrecord.Resolver {
	lookup := r.Resolve
	if lookup == nil {
		lookup = func(host string) ([]string, error) {
			ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
			defer cancel()
			return net.DefaultResolver.LookupHost(ctx, host)
		}
	}
	return func(host string) ([]string, error) {
		addrs, err := lookup(host)
		now := time.Now()
		r.answersMu.Lock()
		defer r.answersMu.Unlock()
		if r.answers == nil {
			r.answers = map[string]answer{}
		}
		if now.Sub(r.pruned) > time.Minute {
			// Hostnames no record names any more go too.
			r.pruned = now
			for h, a := range r.answers {
				if now.Sub(a.at) > staleAnswers {
					delete(r.answers, h)
				}
			}
		}
		if err == nil && len(addrs) > 0 {
			r.answers[host] = answer{addrs: slices.Clone(addrs), at: now}
			return addrs, nil
		}
		if last, ok := r.answers[host]; ok {
			log.FromContext(ctx).V(1).Info("Cannot resolve a load-balancer hostname; its last addresses stand in", "hostname", host, "resolvedAt", last.at, "err", fmt.Sprint(err))
			return slices.Clone(last.addrs), nil
		}
		if err != nil {
			log.FromContext(ctx).V(1).Info("Cannot resolve a load-balancer hostname; it is left out beside addresses", "hostname", host, "err", err.Error())
		}
		return addrs, err
	}
}

// again is the result of a reconcile whose records depend on hostnames
// looked up: their addresses change without the record changing, and a
// lookup that failed may succeed, so they are looked up again every TTL.
func again(resolved bool, ttl dnsv1a1.TTL) reconcile.Result {
	if !resolved {
		return reconcile.Result{}
	}
	return reconcile.Result{RequeueAfter: time.Duration(dnsrecord.TTL(ttl)) * time.Second}
}

// SetupWithManager registers two controllers with mgr, one per record kind,
// each watching its records and the DNSEndpoints they control.
func (r *DNSEndpointReconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("dnsendpoint-controller")
	}
	both := !r.ServiceRecords && !r.IngressRecords
	// A DNSEndpoint is written again when its spec changed or it was
	// deleted, not when ExternalDNS writes its status: that would look
	// every hostname up again, and a load balancer answering other
	// addresses each time would change the records in a loop.
	owns := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	if r.ServiceRecords || both {
		if err := builder.ControllerManagedBy(mgr).
			Named(ServiceEndpointControllerName).
			For(&dnsv1a1.ServiceDNSRecord{}).
			Owns(&dnsv1a1.DNSEndpoint{}, owns).
			Complete(reconcile.Func(r.ReconcileService)); err != nil {
			return err
		}
	}
	if r.IngressRecords || both {
		return builder.ControllerManagedBy(mgr).
			Named(IngressEndpointControllerName).
			For(&dnsv1a1.IngressDNSRecord{}).
			Owns(&dnsv1a1.DNSEndpoint{}, owns).
			Complete(reconcile.Func(r.ReconcileIngress))
	}
	return nil
}

// ReconcileService writes the DNSEndpoint of one ServiceDNSRecord.
func (r *DNSEndpointReconciler) ReconcileService(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rec := &dnsv1a1.ServiceDNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		// A deleted record's DNSEndpoint goes with it through its owner reference.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	eps, resolved := dnsrecord.ServiceEndpointsResolving(rec, r.resolver(ctx))
	return again(resolved, rec.Spec.RecordTTL), r.told(rec, r.ensure(ctx, rec, dnsrecord.ServiceEndpointName(rec.Name), eps))
}

// EventDNSEndpointNotWritten is the reason of the warning recorded on a
// record whose DNSEndpoint cannot be written.
const EventDNSEndpointNotWritten = "DNSEndpointNotWritten"

// told records err, a failure to write rec's DNSEndpoint, on rec, and
// returns it.
func (r *DNSEndpointReconciler) told(rec client.Object, err error) error {
	if err != nil && r.Recorder != nil {
		r.Recorder.Eventf(rec, nil, corev1.EventTypeWarning, EventDNSEndpointNotWritten, "WriteDNSEndpoint", "%v", err)
	}
	return err
}

// ReconcileIngress writes the DNSEndpoint of one IngressDNSRecord.
func (r *DNSEndpointReconciler) ReconcileIngress(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rec := &dnsv1a1.IngressDNSRecord{}
	if err := r.Client.Get(ctx, req.NamespacedName, rec); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	eps, resolved := dnsrecord.IngressEndpointsResolving(rec, r.resolver(ctx))
	return again(resolved, rec.Spec.RecordTTL), r.told(rec, r.ensure(ctx, rec, dnsrecord.IngressEndpointName(rec.Name), eps))
}

// ensure makes the DNSEndpoint name, controlled by owner, hold endpoints.
// An owner being deleted gets none: its DNSEndpoint goes with it, and with
// foreground deletion the garbage collector deletes the DNSEndpoint first,
// which a new one would undo until the owner was gone.
func (r *DNSEndpointReconciler) ensure(ctx context.Context, owner client.Object, name string, endpoints []dnsv1a1.Endpoint) error {
	if owner.GetDeletionTimestamp() != nil {
		return nil
	}
	key := client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}
	current := &dnsv1a1.DNSEndpoint{}
	err := r.Client.Get(ctx, key, current)
	if apierrors.IsNotFound(err) {
		ep := &dnsv1a1.DNSEndpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec:       dnsv1a1.DNSEndpointSpec{Endpoints: endpoints},
		}
		if err := controllerutil.SetControllerReference(owner, ep, r.Scheme); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, ep); err != nil {
			return fmt.Errorf("create DNSEndpoint %s: %w", key, err)
		}
		log.FromContext(ctx).Info("Created DNSEndpoint", "dnsEndpoint", key, "endpoints", len(endpoints))
		return nil
	}
	if err != nil {
		return fmt.Errorf("get DNSEndpoint %s: %w", key, err)
	}

	desired := current.DeepCopy()
	desired.Spec.Endpoints = endpoints
	// Fails when another object controls the DNSEndpoint: it is not ours
	// to overwrite.
	if err := controllerutil.SetControllerReference(owner, desired, r.Scheme); err != nil {
		return fmt.Errorf("DNSEndpoint %s: %w", key, err)
	}
	if equality.Semantic.DeepEqual(current.Spec, desired.Spec) && equality.Semantic.DeepEqual(current.OwnerReferences, desired.OwnerReferences) {
		return nil
	}
	if err := r.Client.Update(ctx, desired); err != nil {
		return fmt.Errorf("update DNSEndpoint %s: %w", key, err)
	}
	log.FromContext(ctx).Info("Updated DNSEndpoint", "dnsEndpoint", key, "endpoints", len(endpoints))
	return nil
}
