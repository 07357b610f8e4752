package typeconfig

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// The sync-finalizer admission policy (config/admission) gives a new
// federated object the sync controller's finalizer when its type
// propagates and runs. It reads that from one ConfigMap the leader keeps,
// corev1beta1.PropagatingTypesConfigMap, rather than from every
// FederatedTypeConfig: the API server evaluates a policy once per param
// object, converting the params and the whole request for each, so that
// every federated create cost as many evaluations as there were types.

// propagates reports whether ftc's objects get the sync controller's
// finalizer at creation: its propagation is Enabled and reported Running.
func propagates(ftc *corev1beta1.FederatedTypeConfig) bool {
	return ftc.DeletionTimestamp.IsZero() && ftc.PropagationEnabled() &&
		ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning
}

// propagatingKey is how the ConfigMap names a federated type, the resource
// and group an admission request names it by.
func propagatingKey(ftc *corev1beta1.FederatedTypeConfig) string {
	return ftc.Spec.FederatedType.PluralName + "." + ftc.Spec.FederatedType.Group
}

// The sync-finalizer policy needs the API server's schema of a federated
// type's group-version, which each API server process loads by polling its
// own OpenAPI document every 5 s: for up to 5 s after a group-version is
// first served (after `helm install`, say), every create the policy
// matches is refused with 503, whatever its failurePolicy. So a type is
// listed only once its group-version is admissible: it has been served for
// admissionSettle (servedFrom), more than that poll period on any API
// server of the host whether or not the policy had loaded by then, and a
// dry-run probe of it was not refused with 503 (a server whose poll fell
// behind) and was answered admissionSettle after it was served by the API
// server's own clock (this controller's may run ahead). A group-version a
// listed type already has is admissible at once (`kubefedctl enable` of
// another type of types.kubefed.io).
const (
	admissionSettle = 10 * time.Second
	// A refused group-version is probed again after admissionProbeRetry,
	// doubled with each refusal in a row up to admissionProbeRetryMax.
	admissionProbeRetry    = time.Second
	admissionProbeRetryMax = 30 * time.Second
	// admissionRefusalsTold refusals in a row, past admissionSettle, are
	// not the API server's poll falling behind: they are logged.
	admissionRefusalsTold = 5
	admissionProbeLimit   = 10 * time.Second
)

// publishPropagating writes the ConfigMap of the types that propagate and
// run, when it differs from what this leader last wrote or found. current
// is the FederatedTypeConfig just reconciled as its status now is (nil
// when it is gone): the cache may not show that status yet. A controller
// without the permission to write ConfigMaps logs it once and goes on:
// without the ConfigMap the policy adds nothing, and the engine adds the
// finalizer itself.
//
// A type is listed only once its group-version is admissible (above);
// until then its new objects get the finalizer from the engine. wait is
// how soon current's reconcile is to come back when its type is not
// listed yet for that reason; zero otherwise.
func (r *Reconciler) publishPropagating(ctx context.Context, name string, current *corev1beta1.FederatedTypeConfig) (wait time.Duration, err error) {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return 0, fmt.Errorf("list FederatedTypeConfigs: %w", err)
	}
	// types are the FederatedTypeConfigs that propagate and run, by key.
	types := map[string]*corev1beta1.FederatedTypeConfig{}
	for i := range list.Items {
		if ftc := &list.Items[i]; ftc.Name != name && propagates(ftc) {
			types[propagatingKey(ftc)] = ftc
		}
	}
	if current != nil && propagates(current) {
		types[propagatingKey(current)] = current
	}

	r.publishMu.Lock()
	defer r.publishMu.Unlock()
	now := time.Now()
	// Group-versions no type propagates any more are forgotten: their
	// CustomResourceDefinitions may be made anew before one comes back.
	gvs := map[string][]corev1beta1.APIResource{}
	for _, key := range slices.Sorted(maps.Keys(types)) {
		ft := types[key].Spec.FederatedType
		gvs[ft.GroupVersionString()] = append(gvs[ft.GroupVersionString()], ft)
	}
	for gv := range r.admission {
		if _, ok := gvs[gv]; !ok {
			delete(r.admission, gv)
		}
	}
	if r.admission == nil {
		r.admission = map[string]*gvAdmission{}
	}
	if r.published == nil {
		// A leader before this one listed these types' group-versions
		// once admissible.
		r.trustListed(ctx, types)
	}
	for gv, fts := range gvs {
		if r.admission[gv] == nil {
			a := &gvAdmission{since: now}
			if served, ok := r.servedFrom(ctx, fts[0]); ok {
				a.served = served
				if served.Before(now) {
					a.since = served
				}
			}
			r.admission[gv] = a
		}
	}
	listed := func() map[string]string {
		data := map[string]string{}
		for key, ftc := range types {
			if r.admission[ftc.Spec.FederatedType.GroupVersionString()].admissible {
				data[key] = ftc.Name
			}
		}
		return data
	}
	// The probes come before the write: where the ConfigMap is missing,
	// the policy matches nothing, and the probe proves nothing that
	// admissionSettle has not already.
	for _, gv := range slices.Sorted(maps.Keys(gvs)) {
		a := r.admission[gv]
		if a.admissible || now.Before(a.next()) {
			continue
		}
		// A namespaced type is probed where this controller may create
		// one; a cluster-scoped one only when its group-version has none.
		ft := gvs[gv][0]
		if i := slices.IndexFunc(gvs[gv], corev1beta1.APIResource.Namespaced); i >= 0 {
			ft = gvs[gv][i]
		}
		admitted, at := r.admits(ctx, ft)
		switch {
		case !admitted:
			a.refusedAt = now
			if a.refusals++; a.refusals == admissionRefusalsTold {
				logf.FromContext(ctx).Info("The API server still cannot apply the sync-finalizer policy to the group-version; until it can, its new objects get the finalizer from the engine",
					"type", ft.PluralName+"."+ft.Group, "refusals", a.refusals, "nextProbeIn", a.retryAfter().String())
			}
		case !at.IsZero() && !a.served.IsZero() && at.Sub(a.served) < admissionSettle:
			// The API server's clock, which stamped the CRD, is behind
			// this controller's: the wait runs by the server's clock.
			a.since = now.Add(-at.Sub(a.served))
		default:
			a.admissible = true
		}
	}
	if err := r.writePropagating(ctx, listed()); err != nil {
		return 0, err
	}
	if current == nil || !propagates(current) {
		return 0, nil
	}
	a := r.admission[current.Spec.FederatedType.GroupVersionString()]
	if a.admissible {
		return 0, nil
	}
	return max(a.next().Sub(now), admissionProbeRetry), nil
}

// servedFrom is a time since which the API server has served ft's
// group-version, by the API server's clock: when its
// CustomResourceDefinition was Established, or its spec last written if
// later (a version may have been added), a second later for the
// timestamps' resolution. A type whose CRD has been served for a while (a
// restart, a new KubeFedConfig) then waits for nothing. ok is false when
// the CRD is not found or not Established. Read past the cache, which
// holds no CRDs.
func (r *Reconciler) servedFrom(ctx context.Context, ft corev1beta1.APIResource) (served time.Time, ok bool) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: ft.PluralName + "." + ft.Group}, crd); err != nil {
		return time.Time{}, false
	}
	status, _ := crd.Object["status"].(map[string]any)
	established := jsonvalue.Condition(status, "Established")
	if established == nil || established["status"] != "True" {
		return time.Time{}, false
	}
	since, err := time.Parse(time.RFC3339, fmt.Sprint(established["lastTransitionTime"]))
	if err != nil {
		return time.Time{}, false
	}
	for _, f := range crd.GetManagedFields() {
		if f.Subresource == "" && f.Time != nil && f.Time.After(since) {
			since = f.Time.Time
		}
	}
	return since.Add(time.Second), true
}

// gvAdmission is what this leader knows of a federated group-version's
// admission (publishPropagating).
type gvAdmission struct {
	// since is when this leader's wait started, by its clock: when the
	// group-version was served from (servedFrom) or, if that is later or
	// unknown, when this leader first found it.
	since time.Time
	// served is when it was served from by the API server's clock; zero
	// when unknown.
	served time.Time
	// refusedAt is when a probe of it was last refused with 503, and
	// refusals how many were in a row.
	refusedAt time.Time
	refusals  int
	// admissible: its types are listed.
	admissible bool
}

// retryAfter is how long after the last refusal the group-version is
// probed again: none before a refusal, then admissionProbeRetry, doubled
// with each refusal in a row up to admissionProbeRetryMax.
func (a *gvAdmission) retryAfter() time.Duration {
	if a.refusals == 0 {
		return 0
	}
	return min(admissionProbeRetry<<min(a.refusals-1, 8), admissionProbeRetryMax)
}

// next is when the group-version may be probed: once served for
// admissionSettle, and its last refusal's retryAfter later.
func (a *gvAdmission) next() time.Time {
	next := a.since.Add(admissionSettle)
	if retry := a.refusedAt.Add(a.retryAfter()); retry.After(next) {
		return retry
	}
	return next
}

// trustListed takes the group-versions of the types the ConfigMap lists,
// of types, as admissible: a leader lists a type only once its
// group-version is, and a new leader does not take the list back while it
// waits again. Called with publishMu held.
func (r *Reconciler) trustListed(ctx context.Context, types map[string]*corev1beta1.FederatedTypeConfig) {
	cm := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		return
	}
	for key := range cm.Data {
		if ftc, ok := types[key]; ok {
			r.admission[ftc.Spec.FederatedType.GroupVersionString()] = &gvAdmission{admissible: true}
		}
	}
}

// admits reports whether a dry-run create of the federated type ft,
// annotated as a probe, which the sync-finalizer policy matches, is not
// refused with 503 for want of the type's schema, nor because the type is
// not served. Any other answer (the object refused as invalid: validation
// comes after the mutating policies; the policy not installed; this
// controller not allowed to probe; a timeout) leaves the decision to
// admissionSettle, which has passed. at is the API server's time of an
// accepted probe (the dry run's creationTimestamp), zero otherwise.
func (r *Reconciler) admits(ctx context.Context, ft corev1beta1.APIResource) (admitted bool, at time.Time) {
	ctx, cancel := context.WithTimeout(ctx, admissionProbeLimit)
	defer cancel()
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(ft.GroupVersionString())
	probe.SetKind(ft.Kind)
	probe.SetGenerateName("admission-probe-")
	if ft.Namespaced() {
		probe.SetNamespace(r.Namespace)
	}
	probe.SetAnnotations(map[string]string{corev1beta1.AdmissionProbeAnnotation: ""})
	err := r.Client.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil:
		return true, probe.GetCreationTimestamp().Time
	case apierrors.IsServiceUnavailable(err), apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		logf.FromContext(ctx).V(1).Info("The API server cannot apply the sync-finalizer policy to the group-version yet; not listed",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return false, time.Time{}
	case apierrors.IsForbidden(err):
		// Once per group-version and term: this controller's rights lack
		// create on the federated types (the chart's have it).
		logf.FromContext(ctx).Info("Cannot probe whether the API server can apply the sync-finalizer policy to the group-version; listing it",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return true, time.Time{}
	default:
		logf.FromContext(ctx).V(1).Info("Probe of the sync-finalizer policy refused; listing the group-version",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return true, time.Time{}
	}
}

// writePropagating makes the ConfigMap hold data, unless this leader
// wrote or found just that within a recheck interval. Called with
// publishMu held.
func (r *Reconciler) writePropagating(ctx context.Context, data map[string]string) error {
	// What this leader wrote or found is trusted for a recheck interval;
	// after it the ConfigMap is read again, so that one deleted or edited
	// by hand is put back by the types' periodic evaluation.
	if r.published != nil && maps.Equal(r.published, data) && time.Since(r.publishedAt) < r.recheckInterval() {
		return nil
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.PropagatingTypesConfigMap}
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, key, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{Data: data}
		cm.Namespace, cm.Name = key.Namespace, key.Name
		if _, found := r.ownedByConfig(ctx, cm); !found && r.configSeen {
			// The KubeFedConfig went away, and the garbage collector took
			// the ConfigMap with it: the control plane is being removed.
			// One made now would have no owner and outlive it.
			r.published, r.publishedAt = data, time.Now()
			return nil
		}
		err = r.Client.Create(ctx, cm)
	case err == nil:
		owned, _ := r.ownedByConfig(ctx, cm)
		if owned || !maps.Equal(cm.Data, data) {
			cm.Data = data
			err = r.Client.Update(ctx, cm)
		}
	}
	if apierrors.IsForbidden(err) {
		if !r.publishForbidden {
			logf.FromContext(ctx).Error(err, "Cannot keep the ConfigMap of propagating types; the sync-finalizer admission policy adds no finalizer, the engine does",
				"configMap", key.String())
			r.publishForbidden = true
		}
		return nil
	}
	if err != nil {
		r.published = nil
		return fmt.Errorf("write ConfigMap %s: %w", key, err)
	}
	r.published, r.publishedAt = data, time.Now()
	return nil
}

// ownedByConfig makes the control plane's KubeFedConfig an owner of cm, so
// that the garbage collector removes the ConfigMap with it (helm uninstall
// deletes the chart's KubeFedConfig; the controller-manager that made the
// ConfigMap is gone by then). It reports whether it changed cm, and whether
// the KubeFedConfig was found. Without a KubeFedConfig, or unable to read
// it, cm is left as it is. Called with publishMu held.
func (r *Reconciler) ownedByConfig(ctx context.Context, cm *corev1.ConfigMap) (changed, found bool) {
	kfc := &corev1beta1.KubeFedConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.KubeFedConfigName}, kfc); err != nil {
		return false, !apierrors.IsNotFound(err)
	}
	r.configSeen = true
	before := slices.Clone(cm.OwnerReferences)
	if err := controllerutil.SetOwnerReference(kfc, cm, r.Client.Scheme()); err != nil {
		return false, true
	}
	return !equality.Semantic.DeepEqual(before, cm.OwnerReferences), true
}
