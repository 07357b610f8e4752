package federatedtype

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The default targets are what discovery of a current apiserver reports, so
// building them from discovery must give the same descriptions.
func TestTargetFromAPIResourceMatchesDefaults(t *testing.T) {
	deploy := metav1.APIResource{Name: "deployments", SingularName: "deployment", Kind: "Deployment",
		Namespaced: true, ShortNames: []string{"deploy"}, Verbs: []string{"create", "get"}}
	got := TargetFromAPIResource(schema.GroupVersion{Group: "apps", Version: "v1"}, deploy)
	var want Target
	for _, d := range DefaultTargets {
		if d.Kind == "Deployment" {
			want = d
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestTargetFromCRD(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true},
				{Name: "v1", Served: true, Storage: true},
				{Name: "v1alpha1", Served: false},
			},
		},
	}
	got, err := TargetFromCRD(crd, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", ShortNames: []string{"wd"}, Namespaced: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("storage version: got %+v, want %+v", got, want)
	}
	if got, err := TargetFromCRD(crd, "v1beta1"); err != nil || got.Version != "v1beta1" {
		t.Errorf("served version: got %+v, %v", got, err)
	}
	if _, err := TargetFromCRD(crd, "v1alpha1"); err == nil || !strings.Contains(err.Error(), "served: v1beta1, v1") {
		t.Errorf("unserved version: got %v", err)
	}
}
