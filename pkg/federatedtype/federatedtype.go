package federatedtype

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

// genericCRD is controller-gen's CRD for the generic FederatedObject; its
// schema (placement, overrides and status with their validation) is the
// schema of every Federated<T>.
//
//go:embed schema/types.kubefed.io_federatedobjects.yaml
var genericCRD []byte

// Target describes the type that federated objects create in members.
type Target struct {
	Group      string
	Version    string
	Kind       string
	Plural     string
	ShortNames []string
	Namespaced bool
}

// TypeConfigName is the FederatedTypeConfig name of the target.
func (t Target) TypeConfigName() string { return corev1beta1.TypeConfigName(t.Plural, t.Group) }

// Options chooses where the Federated<T> type lives.
type Options struct {
	// FederatedGroup defaults to types.kubefed.io.
	FederatedGroup string
	// FederatedVersion defaults to v1beta1.
	FederatedVersion string
	// Namespace is the KubeFed namespace the FederatedTypeConfig lives in.
	Namespace string
}

func (o Options) withDefaults() Options {
	if o.FederatedGroup == "" {
		o.FederatedGroup = typesv1beta1.DefaultFederatedGroup
	}
	if o.FederatedVersion == "" {
		o.FederatedVersion = typesv1beta1.DefaultFederatedVersion
	}
	if o.Namespace == "" {
		o.Namespace = corev1beta1.DefaultKubeFedNamespace
	}
	return o
}

// FederatedKind is the kind of the federated type of a target kind.
func FederatedKind(kind string) string { return "Federated" + kind }

// federatedNamespaced reports the federated type's scope: the target's,
// except for namespaces, whose FederatedNamespace lives in the namespace it
// federates so that a namespace-scoped control plane can read placement.
func (t Target) federatedNamespaced() bool {
	return t.Namespaced || (t.Group == "" && t.Plural == "namespaces")
}

// FederatedAPIResource is the federated type's entry in a FederatedTypeConfig.
func FederatedAPIResource(t Target, o Options) corev1beta1.APIResource {
	o = o.withDefaults()
	return corev1beta1.APIResource{
		Group:      o.FederatedGroup,
		Version:    o.FederatedVersion,
		Kind:       FederatedKind(t.Kind),
		PluralName: "federated" + t.Plural,
		Scope:      scope(t.federatedNamespaced()),
	}
}

func scope(namespaced bool) corev1beta1.ResourceScope {
	if namespaced {
		return corev1beta1.NamespaceScope
	}
	return corev1beta1.ClusterScope
}

// TypeConfig is the FederatedTypeConfig that federates the target.
func TypeConfig(t Target, o Options) *corev1beta1.FederatedTypeConfig {
	o = o.withDefaults()
	enabled := corev1beta1.Enabled
	return &corev1beta1.FederatedTypeConfig{
		TypeMeta: metav1.TypeMeta{
			APIVersion: corev1beta1.GroupVersion.String(),
			Kind:       "FederatedTypeConfig",
		},
		ObjectMeta: metav1.ObjectMeta{Name: t.TypeConfigName(), Namespace: o.Namespace},
		Spec: corev1beta1.FederatedTypeConfigSpec{
			TargetType: corev1beta1.APIResource{
				Group:      t.Group,
				Version:    t.Version,
				Kind:       t.Kind,
				PluralName: t.Plural,
				Scope:      scope(t.Namespaced),
			},
			FederatedType:    FederatedAPIResource(t, o),
			Propagation:      corev1beta1.Enabled,
			StatusCollection: &enabled,
		},
	}
}

var (
	genericOnce   sync.Once
	genericSchema *apiextensionsv1.JSONSchemaProps
	genericErr    error
)

func genericFederatedSchema() (*apiextensionsv1.JSONSchemaProps, error) {
	genericOnce.Do(func() {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(genericCRD, &crd); err != nil {
			genericErr = fmt.Errorf("decode the generic federated CRD: %w", err)
			return
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
			genericErr = fmt.Errorf("the generic federated CRD must have exactly one version with a schema")
			return
		}
		genericSchema = crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	})
	if genericErr != nil {
		return nil, genericErr
	}
	return genericSchema.DeepCopy(), nil
}

// CRD is the Federated<T> CustomResourceDefinition for the target.
func CRD(t Target, o Options) (*apiextensionsv1.CustomResourceDefinition, error) {
	if t.Kind == "" || t.Plural == "" || t.Version == "" {
		return nil, fmt.Errorf("target type needs kind, plural and version, got %+v", t)
	}
	o = o.withDefaults()
	schema, err := genericFederatedSchema()
	if err != nil {
		return nil, err
	}
	fed := FederatedAPIResource(t, o)
	schema.Description = fmt.Sprintf("%s propagates %s objects (%s) to member clusters: "+
		"spec.template is the object, spec.placement chooses clusters, spec.overrides vary it per cluster.",
		fed.Kind, t.Kind, t.groupVersion())
	if spec, ok := schema.Properties["spec"]; ok {
		tmpl := spec.Properties["template"]
		tmpl.Description = fmt.Sprintf("Template is the %s created in each cluster, without name and namespace.", t.Kind)
		spec.Properties["template"] = tmpl
		schema.Properties["spec"] = spec
	}

	var shortNames []string
	for _, s := range t.ShortNames {
		shortNames = append(shortNames, "f"+s)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(),
			Kind:       "CustomResourceDefinition",
		},
		ObjectMeta: metav1.ObjectMeta{Name: fed.PluralName + "." + fed.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: fed.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     fed.PluralName,
				Singular:   strings.ToLower(fed.Kind),
				Kind:       fed.Kind,
				ListKind:   fed.Kind + "List",
				ShortNames: shortNames,
				Categories: []string{"kubefed"},
			},
			Scope: apiextensionsv1.ResourceScope(fed.Scope),
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    fed.Version,
				Served:  true,
				Storage: true,
				Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				AdditionalPrinterColumns: t.printerColumns(),
			}},
		},
	}
	return crd, nil
}

// printerColumns show at a glance whether an object propagated, and why
// not, and for the workload kinds how many of their replicas are ready
// over all clusters.
func (t Target) printerColumns() []apiextensionsv1.CustomResourceColumnDefinition {
	if BuiltinAggregation(t.Group, t.Kind) == nil {
		return slices.Clone(printerColumns)
	}
	ready := apiextensionsv1.CustomResourceColumnDefinition{Name: "Ready", Type: "string", JSONPath: ".status.ready",
		Description: "Ready over desired, summed over the clusters"}
	return append([]apiextensionsv1.CustomResourceColumnDefinition{ready}, printerColumns...)
}

var printerColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Propagation", Type: "string", JSONPath: `.status.conditions[?(@.type=='Propagation')].status`},
	{Name: "Reason", Type: "string", JSONPath: `.status.conditions[?(@.type=='Propagation')].reason`},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	{Name: "Clusters", Type: "string", Priority: 1, JSONPath: ".status.clusters[*].name"},
}

func (t Target) groupVersion() string {
	if t.Group == "" {
		return t.Version
	}
	return t.Group + "/" + t.Version
}

// Manifest renders an object as YAML without the empty status and
// creationTimestamp that typed objects carry, the way it is applied.
func Manifest(obj runtime.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]interface{}); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(u)
}
