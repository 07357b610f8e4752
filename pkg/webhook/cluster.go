package webhook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// KubeFedClusterValidator warns when a KubeFedCluster's credentials Secret
// does not exist in its namespace; it denies nothing.
type KubeFedClusterValidator struct {
	// Reader reads Secrets' metadata. It must not be a cache: kubefedctl
	// join creates the Secret a moment before the KubeFedCluster.
	Reader client.Reader
}

var _ admission.Validator[*corev1beta1.KubeFedCluster] = &KubeFedClusterValidator{}

// ValidateCreate warns when the Secret does not exist.
func (v *KubeFedClusterValidator) ValidateCreate(ctx context.Context, c *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	return v.secretWarnings(ctx, c), nil
}

// ValidateUpdate warns when the update names another Secret that does not
// exist; a Secret deleted since goes unmentioned in other updates, such as
// unjoin's or a finalizer's removal.
func (v *KubeFedClusterValidator) ValidateUpdate(ctx context.Context, old, c *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	if old.Spec.SecretRef.Name == c.Spec.SecretRef.Name {
		return nil, nil
	}
	return v.secretWarnings(ctx, c), nil
}

// ValidateDelete admits every deletion.
func (v *KubeFedClusterValidator) ValidateDelete(context.Context, *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	return nil, nil
}

// secretWarnings is a warning when c's Secret does not exist or cannot be read.
func (v *KubeFedClusterValidator) secretWarnings(ctx context.Context, c *corev1beta1.KubeFedCluster) admission.Warnings {
	name := c.Spec.SecretRef.Name
	path := field.NewPath("spec", "secretRef", "name")
	if name == "" {
		// The CRD schema requires the name; nothing to look up.
		return nil
	}
	// Metadata only: the webhook has no use for the token.
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		// A Secret made asynchronously (a SealedSecret's or an
		// ExternalSecret's) may follow in a moment, and a GitOps tool that
		// does not retry would never apply a denied KubeFedCluster again.
		// The cluster controller reports the missing Secret until it exists.
		return admission.Warnings{fmt.Sprintf("%s: no Secret %q in namespace %q; the KubeFedCluster is admitted and reports "+
			"Ready=False (malformed cluster config) until the Secret, with the member's token, exists", path, name, c.Namespace)}
	case err != nil:
		return admission.Warnings{fmt.Sprintf("%s was not checked: get Secret %s/%s: %v", path, c.Namespace, name, err)}
	}
	return nil
}
