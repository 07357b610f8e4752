package kubefedctl

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// federatedTemplate turns an object read from the host into the template
// of its federated object: without apiVersion and kind (the FTC names the
// type), status, and all metadata but labels (name and namespace come from
// the federated object; annotations are not propagated), and without the
// fields the host's API server or controllers filled in for this one
// cluster, which would be wrong or rejected in another.
func federatedTemplate(obj *unstructured.Unstructured) map[string]any {
	tmpl := obj.DeepCopy().Object
	delete(tmpl, "apiVersion")
	delete(tmpl, "kind")
	delete(tmpl, "status")
	delete(tmpl, "metadata")
	ls := map[string]any{}
	for k, v := range obj.GetLabels() {
		// Propagation sets the managed label itself; the host's copy
		// carries it once the host is a member that holds the object.
		if k != corev1beta1.ManagedByKubeFedLabelKey {
			ls[k] = v
		}
	}
	if len(ls) > 0 {
		tmpl["metadata"] = map[string]any{"labels": ls}
	}
	gk := obj.GroupVersionKind().GroupKind()
	switch gk {
	case schema.GroupKind{Kind: "Service"}:
		// Allocated by each cluster from its own ranges; but None, a
		// headless Service, is what the user asked for.
		if ip, _, _ := unstructured.NestedString(tmpl, "spec", "clusterIP"); ip != corev1.ClusterIPNone {
			unstructured.RemoveNestedField(tmpl, "spec", "clusterIP")
			unstructured.RemoveNestedField(tmpl, "spec", "clusterIPs")
		}
		unstructured.RemoveNestedField(tmpl, "spec", "healthCheckNodePort")
		if ports, ok, _ := unstructured.NestedSlice(tmpl, "spec", "ports"); ok {
			for _, p := range ports {
				if port, ok := p.(map[string]any); ok {
					delete(port, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(tmpl, ports, "spec", "ports")
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		// The API server generates a Job's selector from its UID, and
		// rejects a Job created with another Job's generated selector.
		if manual, _, _ := unstructured.NestedBool(tmpl, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(tmpl, "spec", "selector")
			for _, key := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
				unstructured.RemoveNestedField(tmpl, "spec", "template", "metadata", "labels", key)
			}
		}
	case schema.GroupKind{Kind: "Pod"}:
		// The host's scheduler chose a node of the host.
		unstructured.RemoveNestedField(tmpl, "spec", "nodeName")
	case schema.GroupKind{Kind: "ServiceAccount"}:
		// The host's token Secrets, as KubeFed left them out: a template
		// without secrets lets each member keep its own list.
		unstructured.RemoveNestedField(tmpl, "secrets")
	case schema.GroupKind{Kind: "Namespace"}:
		// The namespace controller's own finalizer, as KubeFed left it out.
		unstructured.RemoveNestedField(tmpl, "spec", "finalizers")
		if spec, ok := tmpl["spec"].(map[string]any); ok && len(spec) == 0 {
			delete(tmpl, "spec")
		}
	}
	return tmpl
}

// systemAnnotationPrefixes start the annotations kubectl and the API
// server's controllers write, which no one means to propagate.
var systemAnnotationPrefixes = []string{
	"kubectl.kubernetes.io/", "deployment.kubernetes.io/", "kubernetes.io/service-account.",
	"pv.kubernetes.io/", "endpoints.kubernetes.io/", "batch.kubernetes.io/", "control-plane.alpha.kubernetes.io/",
}

// userAnnotations are the keys of obj's annotations, sorted, that its
// template leaves out and a user may have meant to propagate: all but
// those of systemAnnotationPrefixes.
func userAnnotations(obj *unstructured.Unstructured) []string {
	var keys []string
	for k := range obj.GetAnnotations() {
		if !slices.ContainsFunc(systemAnnotationPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// federatedObject is the Federated<T> object for obj, placed in every
// cluster (an empty clusterSelector selects them all).
func federatedObject(ftc *corev1beta1.FederatedTypeConfig, obj *unstructured.Unstructured) *unstructured.Unstructured {
	fed := ftc.Spec.FederatedType
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"template":  federatedTemplate(obj),
			"placement": map[string]any{"clusterSelector": map[string]any{}},
		},
	}}
	u.SetAPIVersion(fed.GroupVersionString())
	u.SetKind(fed.Kind)
	u.SetName(obj.GetName())
	switch {
	case ftc.IsNamespace():
		// A FederatedNamespace lives in the namespace it federates.
		u.SetNamespace(obj.GetName())
	case fed.Namespaced():
		u.SetNamespace(obj.GetNamespace())
	}
	return u
}

// skippedContentTypes are never federated with a namespace's contents:
// each cluster has its own events, and its own controllers keep endpoints.
var skippedContentTypes = []schema.GroupResource{
	{Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
	{Resource: "endpoints"},
	{Group: "discovery.k8s.io", Resource: "endpointslices"},
}

// skipContent says why federate --contents leaves out an object of a
// namespace, or returns "". Objects that a controller or Kubernetes itself
// creates in each cluster would be duplicated or conflict there.
func skipContent(gr schema.GroupResource, obj *unstructured.Unstructured) string {
	owners := obj.GetOwnerReferences()
	if (gr == schema.GroupResource{Resource: "pods"} || gr == schema.GroupResource{Group: "apps", Resource: "replicasets"}) && len(owners) > 0 {
		return fmt.Sprintf("owned by %s %s", owners[0].Kind, owners[0].Name)
	}
	for _, o := range owners {
		if o.Controller != nil && *o.Controller {
			return fmt.Sprintf("managed by its controller %s %s", o.Kind, o.Name)
		}
	}
	if gr.Group == "" {
		switch gr.Resource {
		case "configmaps":
			if obj.GetName() == "kube-root-ca.crt" {
				return "published into every namespace by each cluster"
			}
		case "serviceaccounts":
			if obj.GetName() == "default" {
				return "created in every namespace by each cluster"
			}
		case "secrets":
			typ, _, _ := unstructured.NestedString(obj.Object, "type")
			if typ == string(corev1.SecretTypeServiceAccountToken) {
				return "a ServiceAccount token, valid in this cluster only"
			}
			if obj.GetAnnotations()[corev1.ServiceAccountNameKey] == "default" {
				return "a secret of the default ServiceAccount, created by each cluster"
			}
		}
	}
	if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
		return "its name is not a valid federated object name: " + strings.Join(errs, "; ")
	}
	return ""
}

// skippedType reports whether federate --contents leaves out a whole type.
func skippedType(gr schema.GroupResource, skip []schema.GroupResource) bool {
	return kubefedGroup(gr.Group) || slices.Contains(skippedContentTypes, gr) || slices.Contains(skip, gr) ||
		slices.Contains(skip, schema.GroupResource{Group: gr.Group, Resource: "*"})
}
