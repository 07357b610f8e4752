package webhook

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

// hostTypes is what the fake host serves: some built-in types and their
// federated types, but nothing of example.com.
func hostTypes() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(group, version, kind, plural string, scope meta.RESTScope) {
		gv := schema.GroupVersion{Group: group, Version: version}
		m.AddSpecific(gv.WithKind(kind), gv.WithResource(plural), gv.WithResource(kind), scope)
	}
	add("", "v1", "ConfigMap", "configmaps", meta.RESTScopeNamespace)
	add("", "v1", "Secret", "secrets", meta.RESTScopeNamespace)
	add("", "v1", "Namespace", "namespaces", meta.RESTScopeRoot)
	add("apps", "v1", "Deployment", "deployments", meta.RESTScopeNamespace)
	for kind, plural := range map[string]string{"ConfigMap": "configmaps", "Secret": "secrets", "Namespace": "namespaces", "Deployment": "deployments"} {
		add("types.kubefed.io", "v1beta1", "Federated"+kind, "federated"+plural, meta.RESTScopeNamespace)
	}
	return m
}

// discoveryDown fails every lookup as an unreachable API server would.
type discoveryDown struct{ meta.RESTMapper }

func (discoveryDown) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("connection refused")
}

func typeConfig(plural string, edit ...func(*corev1beta1.FederatedTypeConfig)) *corev1beta1.FederatedTypeConfig {
	var target federatedtype.Target
	for _, t := range federatedtype.DefaultTargets {
		if t.Plural == plural {
			target = t
		}
	}
	ftc := federatedtype.TypeConfig(target, federatedtype.Options{})
	for _, e := range edit {
		e(ftc)
	}
	return ftc
}

func widgets(ftc *corev1beta1.FederatedTypeConfig) {
	ftc.Name = "widgets.example.com"
	ftc.Spec.TargetType = corev1beta1.APIResource{Group: "example.com", Version: "v1", Kind: "Widget", PluralName: "widgets", Scope: corev1beta1.NamespaceScope}
	ftc.Spec.FederatedType = corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedWidget", PluralName: "federatedwidgets", Scope: corev1beta1.NamespaceScope}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

const (
	targetNotServed    = "; the FederatedTypeConfig is admitted and reports TargetTypeNotFound until the type is installed"
	federatedNotServed = "; the FederatedTypeConfig is admitted and reports FederatedTypeNotFound until its CRD is installed (kubefedctl enable does both)"
)

func TestFederatedTypeConfigCreate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ftc          *corev1beta1.FederatedTypeConfig
		wantErr      string
		wantWarnings admission.Warnings
	}{
		{name: "namespaced type", ftc: typeConfig("configmaps")},
		{name: "cluster-scoped target with a namespaced federated type", ftc: typeConfig("namespaces")},
		{name: "group-qualified name", ftc: typeConfig("deployments")},
		{
			// KubeFed's kubefedctl enable and GitOps tools may create the
			// FederatedTypeConfig before its CRDs are served.
			name: "target and federated type not served yet",
			ftc:  typeConfig("configmaps", widgets),
			wantWarnings: admission.Warnings{
				"spec.targetType: the host cluster does not serve example.com/v1, Kind=Widget" + targetNotServed,
				"spec.federatedType: the host cluster does not serve types.kubefed.io/v1beta1, Kind=FederatedWidget" + federatedNotServed,
			},
		},
		{
			name: "federated type not served yet",
			ftc: typeConfig("configmaps", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.FederatedType.Group = "types.example.com"
			}),
			wantWarnings: admission.Warnings{
				"spec.federatedType: the host cluster does not serve types.example.com/v1beta1, Kind=FederatedConfigMap" + federatedNotServed,
			},
		},
		{
			name: "target version not served",
			ftc: typeConfig("deployments", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.TargetType.Version = "v1beta1"
			}),
			wantWarnings: admission.Warnings{
				"spec.targetType: the host cluster does not serve apps/v1beta1, Kind=Deployment" + targetNotServed,
			},
		},
		{
			name: "wrong plural name",
			ftc: typeConfig("deployments", func(f *corev1beta1.FederatedTypeConfig) {
				f.Name, f.Spec.TargetType.PluralName = "deployment.apps", "deployment"
			}),
			wantErr: `FederatedTypeConfig.core.kubefed.io "deployment.apps" is invalid: ` +
				`spec.targetType.pluralName: Invalid value: "deployment": apps/v1, Kind=Deployment is served as "deployments"`,
		},
		{
			name: "wrong kind of a served plural name",
			ftc: typeConfig("deployments", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.TargetType.Kind = "Deployments"
			}),
			wantErr: `FederatedTypeConfig.core.kubefed.io "deployments.apps" is invalid: ` +
				`spec.targetType.kind: Invalid value: "Deployments": apps/v1, Resource=deployments is served with kind Deployment`,
		},
		{
			name: "wrong scope",
			ftc: typeConfig("namespaces", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.TargetType.Scope = corev1beta1.NamespaceScope
			}),
			wantErr: `FederatedTypeConfig.core.kubefed.io "namespaces" is invalid: ` +
				`spec.targetType.scope: Invalid value: "Namespaced": v1, Kind=Namespace is Cluster`,
		},
		{
			name: "wrong scope with a type not served yet: denied, and the type named",
			ftc: typeConfig("namespaces", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.TargetType.Scope = corev1beta1.NamespaceScope
				f.Spec.FederatedType.Version = "v1"
			}),
			wantErr: `FederatedTypeConfig.core.kubefed.io "namespaces" is invalid: ` +
				`spec.targetType.scope: Invalid value: "Namespaced": v1, Kind=Namespace is Cluster`,
			wantWarnings: admission.Warnings{
				"spec.federatedType: the host cluster does not serve types.kubefed.io/v1, Kind=FederatedNamespace" + federatedNotServed,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &FederatedTypeConfigValidator{Mapper: hostTypes()}
			warnings, err := v.ValidateCreate(context.Background(), tc.ftc)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.wantErr)
			}
			if !slices.Equal(warnings, tc.wantWarnings) {
				t.Errorf("warnings\n got: %q\nwant: %q", warnings, tc.wantWarnings)
			}
		})
	}
}

// TestFederatedTypeConfigTypeNotServedYet: a federated type whose CRD the
// host does not serve yet (the mapper answers NoMatch) is admitted with one
// warning naming it, as KubeFed's webhook admitted it; the controller
// reports it until it is served.
func TestFederatedTypeConfigTypeNotServedYet(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	if _, err := mapper.RESTMapping(schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedConfigMap"}, "v1beta1"); !meta.IsNoMatchError(err) {
		t.Fatalf("the mapper answers %v, want NoMatch", err)
	}
	v := &FederatedTypeConfigValidator{Mapper: mapper}
	warnings, err := v.ValidateCreate(context.Background(), typeConfig("configmaps"))
	want := admission.Warnings{"spec.federatedType: the host cluster does not serve types.kubefed.io/v1beta1, Kind=FederatedConfigMap" + federatedNotServed}
	if err != nil || !slices.Equal(warnings, want) {
		t.Errorf("got %q, %v; want %q and no error", warnings, err, want)
	}
}

// TestFederatedTypeConfigDiscoveryDown proves the handler fails open: a
// type it cannot look up is admitted, with a warning naming what was not checked.
func TestFederatedTypeConfigDiscoveryDown(t *testing.T) {
	v := &FederatedTypeConfigValidator{Mapper: discoveryDown{hostTypes()}}
	warnings, err := v.ValidateCreate(context.Background(), typeConfig("configmaps", widgets))
	want := admission.Warnings{
		"spec.targetType was not checked: discovery of example.com/v1, Kind=Widget failed: connection refused",
		"spec.federatedType was not checked: discovery of types.kubefed.io/v1beta1, Kind=FederatedWidget failed: connection refused",
	}
	if err != nil || !slices.Equal(warnings, want) {
		t.Errorf("got %q, %v; want %q and no error", warnings, err, want)
	}
}

func TestFederatedTypeConfigUpdate(t *testing.T) {
	deleting := func(f *corev1beta1.FederatedTypeConfig) {
		f.DeletionTimestamp = &metav1.Time{}
		f.Finalizers = nil
	}
	finalized := func(f *corev1beta1.FederatedTypeConfig) {
		f.DeletionTimestamp = &metav1.Time{}
		f.Finalizers = []string{corev1beta1.FederatedTypeConfigFinalizer}
	}
	for _, tc := range []struct {
		name         string
		old, new     *corev1beta1.FederatedTypeConfig
		wantErr      string
		wantWarnings admission.Warnings
	}{
		{
			name: "unchanged types are not checked again",
			old:  typeConfig("configmaps", widgets),
			new: typeConfig("configmaps", widgets, func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.Propagation = corev1beta1.Disabled
			}),
		},
		{
			name: "a finalizer is removed after the types are gone",
			old:  typeConfig("configmaps", widgets, finalized),
			new:  typeConfig("configmaps", widgets, deleting),
		},
		{
			name: "served target version",
			old:  typeConfig("deployments", func(f *corev1beta1.FederatedTypeConfig) { f.Spec.TargetType.Version = "v1beta1" }),
			new:  typeConfig("deployments"),
		},
		{
			name: "target changed to a version not served",
			old:  typeConfig("deployments"),
			new:  typeConfig("deployments", func(f *corev1beta1.FederatedTypeConfig) { f.Spec.TargetType.Version = "v1beta1" }),
			wantWarnings: admission.Warnings{
				"spec.targetType: the host cluster does not serve apps/v1beta1, Kind=Deployment" + targetNotServed,
			},
		},
		{
			name: "federated type changed to one not served",
			old:  typeConfig("configmaps"),
			new: typeConfig("configmaps", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.FederatedType.Version = "v1"
			}),
			wantWarnings: admission.Warnings{
				"spec.federatedType: the host cluster does not serve types.kubefed.io/v1, Kind=FederatedConfigMap" + federatedNotServed,
			},
		},
		{
			name: "federated type changed to another scope",
			old:  typeConfig("configmaps"),
			new: typeConfig("configmaps", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.FederatedType.Scope = corev1beta1.ClusterScope
			}),
			wantErr: `FederatedTypeConfig.core.kubefed.io "configmaps" is invalid: ` +
				`spec.federatedType.scope: Invalid value: "Cluster": types.kubefed.io/v1beta1, Kind=FederatedConfigMap is Namespaced`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &FederatedTypeConfigValidator{Mapper: hostTypes()}
			warnings, err := v.ValidateUpdate(context.Background(), tc.old, tc.new)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.wantErr)
			}
			if !slices.Equal(warnings, tc.wantWarnings) {
				t.Errorf("warnings\n got: %q\nwant: %q", warnings, tc.wantWarnings)
			}
		})
	}
}
