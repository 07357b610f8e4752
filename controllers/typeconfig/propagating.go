package typeconfig

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// admissionProbeRetry is how soon a type the API server cannot apply the
// sync-finalizer policy to yet is probed again.
const admissionProbeRetry = time.Second

// publishPropagating writes the ConfigMap of the types that propagate and
// run, when it differs from what this leader last wrote or found. current
// is the FederatedTypeConfig just reconciled as its status now is (nil
// when it is gone): the cache may not show that status yet. A controller
// without the permission to write ConfigMaps logs it once and goes on:
// without the ConfigMap the policy adds nothing, and the engine adds the
// finalizer itself.
//
// A type is listed only once a probe showed that the API server can apply
// the policy to it (admissible): listed any earlier, in the seconds after
// its group-version is first served, every create of it would be refused
// with 503. pending reports that some type is not listed for that reason
// yet for current's type, whose reconcile is to come back after
// admissionProbeRetry.
func (r *Reconciler) publishPropagating(ctx context.Context, name string, current *corev1beta1.FederatedTypeConfig) (pending bool, err error) {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return false, fmt.Errorf("list FederatedTypeConfigs: %w", err)
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
	if r.admissible == nil {
		r.admissible, r.refusedAt = map[string]bool{}, map[string]time.Time{}
	}
	// A type that stops propagating is probed again if it comes back: its
	// CustomResourceDefinition may have been made anew meanwhile.
	for key := range r.admissible {
		if _, ok := types[key]; !ok {
			delete(r.admissible, key)
		}
	}
	for key := range r.refusedAt {
		if _, ok := types[key]; !ok {
			delete(r.refusedAt, key)
		}
	}
	if r.published == nil {
		// A leader before this one probed the types its ConfigMap lists.
		r.trustListed(ctx, types)
	}
	listed := func() map[string]string {
		data := map[string]string{}
		for key := range types {
			if r.admissible[key] {
				data[key] = types[key].Name
			}
		}
		return data
	}
	exists, err := r.writePropagating(ctx, listed())
	if err != nil || !exists {
		// Without the ConfigMap the policy matches nothing, probes
		// included: nothing is refused, and nothing can be learned.
		return false, err
	}
	// The API server's schema that the policy needs is one per
	// group-version: a type is admissible once a namespaced type of its
	// group-version is. A type not listed yet is probed, in this control
	// plane's namespace, where its rights allow it, and a cluster-scoped
	// one only when its group-version has no namespaced type; one the API
	// server refused is probed again only after admissionProbeRetry: each
	// reconcile of a type waiting for it comes back that often.
	ready, namespaced := map[string]bool{}, map[string]bool{}
	for key, ftc := range types {
		if ft := ftc.Spec.FederatedType; ft.Namespaced() {
			namespaced[ft.GroupVersionString()] = true
			if r.admissible[key] {
				ready[ft.GroupVersionString()] = true
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(types), func(a, b string) int {
		// Namespaced types first, so that a cluster-scoped one finds its
		// group-version probed.
		na, nb := types[a].Spec.FederatedType.Namespaced(), types[b].Spec.FederatedType.Namespaced()
		if na != nb {
			if na {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	probed := false
	for _, key := range keys {
		ft := types[key].Spec.FederatedType
		gv := ft.GroupVersionString()
		switch {
		case r.admissible[key]:
			continue
		case ready[gv]:
			r.admissible[key], probed = true, true
			continue
		case !ft.Namespaced() && namespaced[gv],
			time.Since(r.refusedAt[key]) < admissionProbeRetry:
			continue
		}
		if r.admits(ctx, ft) {
			r.admissible[key], probed = true, true
			delete(r.refusedAt, key)
			if ft.Namespaced() {
				ready[gv] = true
			}
		} else {
			r.refusedAt[key] = time.Now()
		}
	}
	if probed {
		if _, err := r.writePropagating(ctx, listed()); err != nil {
			return false, err
		}
	}
	// The reconcile of the type waiting comes back for it.
	if current != nil && propagates(current) {
		key := propagatingKey(current)
		return !r.admissible[key], nil
	}
	return false, nil
}

// trustListed takes the types the ConfigMap lists, of types, as
// admissible: a leader lists a type only once it probed it (and a type
// that stops propagating meanwhile leaves the list), so that a new leader
// does not take the list back while it probes them again. Called with
// publishMu held.
func (r *Reconciler) trustListed(ctx context.Context, types map[string]*corev1beta1.FederatedTypeConfig) {
	cm := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		return
	}
	for key := range cm.Data {
		if _, ok := types[key]; ok {
			r.admissible[key] = true
		}
	}
}

// admits reports whether the API server can apply the sync-finalizer
// admission policy to a create of the federated type ft: a dry-run create
// of an object annotated as a probe, which the policy matches, is not
// refused with 503 for want of the type's schema, nor because the type is
// not served yet. Any other answer, an object refused as invalid included
// (validation comes after the mutating policies), says the policy was
// applied, or that it is not installed or this controller may not probe,
// and then listing the type changes nothing for its creates.
func (r *Reconciler) admits(ctx context.Context, ft corev1beta1.APIResource) bool {
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
		return true
	case apierrors.IsServiceUnavailable(err), apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		logf.FromContext(ctx).V(1).Info("The API server cannot apply the sync-finalizer policy to the type yet; not listed",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return false
	case apierrors.IsForbidden(err):
		// Once per type and term: this controller's rights lack create
		// on the federated types (the chart's have it).
		logf.FromContext(ctx).Info("Cannot probe whether the API server can apply the sync-finalizer policy to the type; listing it",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return true
	default:
		logf.FromContext(ctx).V(1).Info("Probe of the sync-finalizer policy refused; listing the type",
			"type", ft.PluralName+"."+ft.Group, "err", err.Error())
		return true
	}
}

// writePropagating makes the ConfigMap hold data, unless this leader
// wrote or found just that within a recheck interval. It reports whether
// the ConfigMap exists. Called with publishMu held.
func (r *Reconciler) writePropagating(ctx context.Context, data map[string]string) (exists bool, err error) {
	// What this leader wrote or found is trusted for a recheck interval;
	// after it the ConfigMap is read again, so that one deleted or edited
	// by hand is put back by the types' periodic evaluation.
	if r.published != nil && maps.Equal(r.published, data) && time.Since(r.publishedAt) < r.recheckInterval() {
		return r.publishedExists, nil
	}
	key := client.ObjectKey{Namespace: r.Namespace, Name: corev1beta1.PropagatingTypesConfigMap}
	cm := &corev1.ConfigMap{}
	err = r.APIReader.Get(ctx, key, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{Data: data}
		cm.Namespace, cm.Name = key.Namespace, key.Name
		if _, found := r.ownedByConfig(ctx, cm); !found && r.configSeen {
			// The KubeFedConfig went away, and the garbage collector took
			// the ConfigMap with it: the control plane is being removed.
			// One made now would have no owner and outlive it.
			r.published, r.publishedAt, r.publishedExists = data, time.Now(), false
			return false, nil
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
		return false, nil
	}
	if err != nil {
		r.published = nil
		return false, fmt.Errorf("write ConfigMap %s: %w", key, err)
	}
	r.published, r.publishedAt, r.publishedExists = data, time.Now(), true
	return true, nil
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
