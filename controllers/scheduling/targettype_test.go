package scheduling

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func widgetCRD(replicas *apiextensionsv1.JSONSchemaProps, scale bool) *apiextensionsv1.CustomResourceDefinition {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if replicas != nil {
		spec.Properties["replicas"] = *replicas
	}
	v := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
		}},
	}
	if scale {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
		}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v},
		},
	}
}

func TestCRDReplicas(t *testing.T) {
	integer := &apiextensionsv1.JSONSchemaProps{Type: "integer"}
	text := &apiextensionsv1.JSONSchemaProps{Type: "string"}
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		want    string // "" or a part of the reason
	}{
		{"integer spec.replicas", widgetCRD(integer, false), "v1", ""},
		{"scale subresource", widgetCRD(nil, true), "v1", ""},
		{"no replicas", widgetCRD(nil, false), "v1", "no integer spec.replicas"},
		{"replicas of another type", widgetCRD(text, false), "v1", "no integer spec.replicas"},
		{"unserved version", widgetCRD(integer, false), "v2", "does not serve version v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := crdReplicas(tt.crd, tt.version)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("crdReplicas() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTargetTypesHasReplicas(t *testing.T) {
	crd := widgetCRD(nil, false)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(crdGVK)
	c := fake.NewClientBuilder().WithObjects(obj).Build()
	now := time.Now()
	tt := &targetTypes{reader: c, now: func() time.Time { return now }}
	ctx := context.Background()

	for _, target := range []corev1beta1.APIResource{
		{Group: "apps", Version: "v1", Kind: "Deployment", PluralName: "deployments"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet", PluralName: "statefulsets"},
		{Version: "v1", Kind: "ReplicationController", PluralName: "replicationcontrollers"},
	} {
		if why, err := tt.hasReplicas(ctx, target); why != "" || err != nil {
			t.Errorf("%s: %q %v", target.Kind, why, err)
		}
	}
	for _, target := range []corev1beta1.APIResource{
		{Version: "v1", Kind: "ConfigMap", PluralName: "configmaps"},
		{Group: "batch", Version: "v1", Kind: "Job", PluralName: "jobs"},
		{Group: "example.com", Version: "v1", Kind: "Gadget", PluralName: "gadgets"},
	} {
		if why, err := tt.hasReplicas(ctx, target); why == "" || err != nil {
			t.Errorf("%s: %q %v, want a reason", target.Kind, why, err)
		}
	}

	widget := corev1beta1.APIResource{Group: "example.com", Version: "v1", Kind: "Widget", PluralName: "widgets"}
	if why, _ := tt.hasReplicas(ctx, widget); !strings.Contains(why, "no integer spec.replicas") {
		t.Fatalf("widget without replicas: %q", why)
	}
	// The CRD gains spec.replicas: the verdict is cached for a while.
	withReplicas := widgetCRD(&apiextensionsv1.JSONSchemaProps{Type: "integer"}, false)
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(crdGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, current); err != nil {
		t.Fatal(err)
	}
	u, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(withReplicas)
	current.Object["spec"] = u["spec"]
	if err := c.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	if why, _ := tt.hasReplicas(ctx, widget); why == "" {
		t.Fatal("the cached verdict was not used")
	}
	now = now.Add(targetTypeTTL)
	if why, _ := tt.hasReplicas(ctx, widget); why != "" {
		t.Fatalf("after the TTL: %q", why)
	}
}
