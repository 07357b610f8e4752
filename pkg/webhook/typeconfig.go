package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// FederatedTypeConfigValidator denies a FederatedTypeConfig whose target or
// federated type the host cluster serves otherwise than declared, and
// admits one whose type it does not serve yet with a warning.
type FederatedTypeConfigValidator struct {
	// Mapper resolves kinds with the host's discovery. It must look again
	// on a miss, as controller-runtime's dynamic RESTMapper does, or a type
	// installed after its first lookup would go unchecked.
	Mapper meta.RESTMapper
}

var _ admission.Validator[*corev1beta1.FederatedTypeConfig] = &FederatedTypeConfigValidator{}

var federatedTypeConfigKind = corev1beta1.GroupVersion.WithKind("FederatedTypeConfig").GroupKind()

// ValidateCreate checks both types; the name is the CRD schema's rule.
func (v *FederatedTypeConfigValidator) ValidateCreate(_ context.Context, ftc *corev1beta1.FederatedTypeConfig) (admission.Warnings, error) {
	return v.validate(nil, ftc)
}

// ValidateUpdate checks what the update changes: the target type when it
// changes, the federated type when it changes. The type-config controller
// removes its finalizer with an update, also after the types are gone.
func (v *FederatedTypeConfigValidator) ValidateUpdate(_ context.Context, old, ftc *corev1beta1.FederatedTypeConfig) (admission.Warnings, error) {
	return v.validate(old, ftc)
}

// ValidateDelete admits every deletion.
func (v *FederatedTypeConfigValidator) ValidateDelete(context.Context, *corev1beta1.FederatedTypeConfig) (admission.Warnings, error) {
	return nil, nil
}

// validate checks ftc; old is nil on create.
func (v *FederatedTypeConfigValidator) validate(old, ftc *corev1beta1.FederatedTypeConfig) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
	check := func(a corev1beta1.APIResource, path *field.Path, hint string) {
		invalid, warning := v.served(a, path, hint)
		if invalid != nil {
			errs = append(errs, invalid)
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	if old == nil || old.Spec.TargetType != ftc.Spec.TargetType {
		check(ftc.Spec.TargetType, spec.Child("targetType"), "reports TargetTypeNotFound until the type is installed")
	}
	if old == nil || old.Spec.FederatedType != ftc.Spec.FederatedType {
		check(ftc.Spec.FederatedType, spec.Child("federatedType"), "reports FederatedTypeNotFound until its CRD is installed (kubefedctl enable does both)")
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(federatedTypeConfigKind, ftc.Name, errs)
	}
	return warnings, nil
}

// served checks that the host serves a as declared and returns the field
// error if it serves it otherwise (another kind, plural name or scope).
// When the type is not served at all, or discovery fails, it returns a
// warning instead, and the object is admitted.
func (v *FederatedTypeConfigValidator) served(a corev1beta1.APIResource, path *field.Path, hint string) (*field.Error, string) {
	gvk := schema.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: a.Kind}
	mapping, err := v.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A wrong kind is a likelier mistake than a missing type when the
		// plural name is served.
		gvr := gvk.GroupVersion().WithResource(a.PluralName)
		if kind, kindErr := v.Mapper.KindFor(gvr); kindErr == nil {
			return field.Invalid(path.Child("kind"), a.Kind, fmt.Sprintf("%s, Resource=%s is served with kind %s", a.GroupVersionString(), a.PluralName, kind.Kind)), ""
		}
		// Nothing of the type is served: its CRD may be on its way (KubeFed's
		// kubefedctl enable does not wait for it to be Established, and a
		// GitOps tool may apply the FederatedTypeConfig first). The
		// controller reports the missing type and looks again.
		return nil, fmt.Sprintf("%s: the host cluster does not serve %s; the FederatedTypeConfig is admitted and %s",
			path, kindString(a), hint)
	}
	if err != nil {
		return nil, fmt.Sprintf("%s was not checked: discovery of %s failed: %v", path, kindString(a), err)
	}
	if mapping.Resource.Resource != a.PluralName {
		return field.Invalid(path.Child("pluralName"), a.PluralName,
			fmt.Sprintf("%s is served as %q", kindString(a), mapping.Resource.Resource)), ""
	}
	scope := corev1beta1.ClusterScope
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		scope = corev1beta1.NamespaceScope
	}
	if a.Scope != scope {
		return field.Invalid(path.Child("scope"), a.Scope, fmt.Sprintf("%s is %s", kindString(a), scope)), ""
	}
	return nil, ""
}

// kindString is schema.GroupVersionKind's String without the leading slash
// of the core group: "v1, Kind=ConfigMap", "apps/v1, Kind=Deployment".
func kindString(a corev1beta1.APIResource) string {
	return a.GroupVersionString() + ", Kind=" + a.Kind
}
