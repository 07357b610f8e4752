package federatedtype

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TargetFromAPIResource describes the target type r, as discovery reports
// it within the group version gv. Discovery leaves r.Group and r.Version
// empty for a list's own resources, so gv supplies them.
func TargetFromAPIResource(gv schema.GroupVersion, r metav1.APIResource) Target {
	return Target{
		Group:      gv.Group,
		Version:    gv.Version,
		Kind:       r.Kind,
		Plural:     r.Name,
		ShortNames: slices.Clone(r.ShortNames),
		Namespaced: r.Namespaced,
	}
}

// TargetFromCRD describes the custom resource a CustomResourceDefinition
// defines, in version, or in its storage version when version is empty.
func TargetFromCRD(crd *apiextensionsv1.CustomResourceDefinition, version string) (Target, error) {
	var served []string
	chosen := ""
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
		if (version == "" && v.Storage) || (version != "" && v.Name == version && v.Served) {
			chosen = v.Name
		}
	}
	switch {
	case chosen == "" && version != "":
		return Target{}, fmt.Errorf("CustomResourceDefinition %s does not serve version %q (served: %s)",
			crd.Name, version, strings.Join(served, ", "))
	case chosen == "":
		return Target{}, fmt.Errorf("CustomResourceDefinition %s has no storage version", crd.Name)
	}
	n := crd.Spec.Names
	if crd.Spec.Group == "" || n.Kind == "" || n.Plural == "" {
		return Target{}, fmt.Errorf("CustomResourceDefinition %s needs spec.group, spec.names.kind and spec.names.plural", crd.Name)
	}
	return Target{
		Group:      crd.Spec.Group,
		Version:    chosen,
		Kind:       n.Kind,
		Plural:     n.Plural,
		ShortNames: slices.Clone(n.ShortNames),
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}, nil
}
