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

// publishPropagating writes the ConfigMap of the types that propagate and
// run, when it differs from what this leader last wrote or found. current
// is the FederatedTypeConfig just reconciled as its status now is (nil
// when it is gone): the cache may not show that status yet. A controller
// without the permission to write ConfigMaps logs it once and goes on:
// without the ConfigMap the policy adds nothing, and the engine adds the
// finalizer itself.
func (r *Reconciler) publishPropagating(ctx context.Context, name string, current *corev1beta1.FederatedTypeConfig) error {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(r.Namespace)); err != nil {
		return fmt.Errorf("list FederatedTypeConfigs: %w", err)
	}
	data := map[string]string{}
	for i := range list.Items {
		if ftc := &list.Items[i]; ftc.Name != name && propagates(ftc) {
			data[propagatingKey(ftc)] = ftc.Name
		}
	}
	if current != nil && propagates(current) {
		data[propagatingKey(current)] = current.Name
	}

	r.publishMu.Lock()
	defer r.publishMu.Unlock()
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
