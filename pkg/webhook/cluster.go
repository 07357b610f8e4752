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

// KubeFedClusterValidator admits a KubeFedCluster whose credentials Secret
// exists in its namespace.
type KubeFedClusterValidator struct {
	// Reader reads Secrets' metadata. It must not be a cache: kubefedctl
	// join creates the Secret a moment before the KubeFedCluster.
	Reader client.Reader
}

var _ admission.Validator[*corev1beta1.KubeFedCluster] = &KubeFedClusterValidator{}

var kubeFedClusterKind = corev1beta1.GroupVersion.WithKind("KubeFedCluster").GroupKind()

// ValidateCreate checks that the Secret exists.
func (v *KubeFedClusterValidator) ValidateCreate(ctx context.Context, c *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	return v.secretExists(ctx, c)
}

// ValidateUpdate checks that the Secret exists when the update names
// another one; a Secret deleted since does not block other updates, such
// as unjoin's or a finalizer's removal.
func (v *KubeFedClusterValidator) ValidateUpdate(ctx context.Context, old, c *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	if old.Spec.SecretRef.Name == c.Spec.SecretRef.Name {
		return nil, nil
	}
	return v.secretExists(ctx, c)
}

// ValidateDelete admits every deletion.
func (v *KubeFedClusterValidator) ValidateDelete(context.Context, *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	return nil, nil
}

func (v *KubeFedClusterValidator) secretExists(ctx context.Context, c *corev1beta1.KubeFedCluster) (admission.Warnings, error) {
	name := c.Spec.SecretRef.Name
	path := field.NewPath("spec", "secretRef", "name")
	if name == "" {
		// The CRD schema requires the name; nothing to look up.
		return nil, nil
	}
	// Metadata only: the webhook has no use for the token.
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, apierrors.NewInvalid(kubeFedClusterKind, c.Name, field.ErrorList{field.Invalid(path, name,
			fmt.Sprintf("no such Secret in namespace %q; create it, with the member's token, before the KubeFedCluster", c.Namespace))})
	case err != nil:
		return admission.Warnings{fmt.Sprintf("%s was not checked: get Secret %s/%s: %v", path, c.Namespace, name, err)}, nil
	}
	return nil, nil
}
