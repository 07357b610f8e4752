package retention

import (
	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// SetManagedLabel labels desired, an object about to be written to a member
// cluster, kubefed.io/managed: "true", which member-side watches select on.
// desired must be owned by the caller.
func SetManagedLabel(desired map[string]any) error {
	meta, err := ensureObject(desired, "metadata")
	if err != nil {
		return err
	}
	labels, err := asObject(meta["labels"])
	if err != nil {
		return fieldError(desiredObj, "metadata.labels", err)
	}
	if labels == nil {
		labels = make(map[string]any, 1)
		meta["labels"] = labels
	}
	labels[corev1beta1.ManagedByKubeFedLabelKey] = corev1beta1.ManagedByKubeFedLabelValue
	return nil
}

// IsManaged reports whether a member object is labelled kubefed.io/managed: "true".
func IsManaged(obj map[string]any) bool {
	return managedLabel(obj) == corev1beta1.ManagedByKubeFedLabelValue
}

// ManagementForbidden reports whether a member object is labelled
// kubefed.io/managed: "false": its owner forbids managing or adopting it
// (status ManagedLabelFalse).
func ManagementForbidden(obj map[string]any) bool {
	return managedLabel(obj) == corev1beta1.UnmanagedByKubeFedLabelValue
}

// RemoveManagedLabel removes kubefed.io/managed from obj, an orphaned member
// object that is kept but no longer managed, and reports whether it was
// there (if not, no update is needed). obj must be owned by the caller: copy
// an object from an informer cache first.
func RemoveManagedLabel(obj map[string]any) bool {
	labels := labelsOf(obj)
	if _, ok := labels[corev1beta1.ManagedByKubeFedLabelKey]; !ok {
		return false
	}
	delete(labels, corev1beta1.ManagedByKubeFedLabelKey)
	return true
}

// managedLabel returns the kubefed.io/managed label of obj; "" when absent
// or malformed, since a malformed label marks nothing.
func managedLabel(obj map[string]any) string {
	v, _ := labelsOf(obj)[corev1beta1.ManagedByKubeFedLabelKey].(string)
	return v
}

// labelsOf returns metadata.labels of obj, nil when absent or malformed.
func labelsOf(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	return labels
}
