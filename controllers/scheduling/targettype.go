package scheduling

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// builtinsWithReplicas are the built-in kinds with an integer spec.replicas
// that a Federated type can target. Other built-in workloads (Job's
// parallelism, DaemonSet) do not scale that way.
var builtinsWithReplicas = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:        true,
	{Group: "apps", Kind: "ReplicaSet"}:        true,
	{Group: "apps", Kind: "StatefulSet"}:       true,
	{Group: "", Kind: "ReplicationController"}: true,
}

// targetTypeTTL is how long a custom type's verdict is reused before its
// CustomResourceDefinition is read again, so that a CRD that gains or loses
// spec.replicas is noticed without a watch on every CRD.
const targetTypeTTL = time.Minute

var crdGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// targetTypes decides whether a target type has an integer spec.replicas:
// built-in kinds from builtinsWithReplicas, custom ones from their
// CustomResourceDefinition, read live and cached for targetTypeTTL.
type targetTypes struct {
	reader client.Reader
	now    func() time.Time

	mu       sync.Mutex
	verdicts map[schema.GroupVersionKind]targetVerdict
}

type targetVerdict struct {
	// why is empty when the type has replicas, else the reason it has not.
	why string
	at  time.Time
}

// hasReplicas returns "" when t has an integer spec.replicas, else a
// message saying why not; errors are for failed reads only.
func (tt *targetTypes) hasReplicas(ctx context.Context, t corev1beta1.APIResource) (string, error) {
	gvk := schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind}
	if builtinsWithReplicas[gvk.GroupKind()] {
		return "", nil
	}
	now := tt.now()
	tt.mu.Lock()
	v, ok := tt.verdicts[gvk]
	tt.mu.Unlock()
	if ok && now.Sub(v.at) < targetTypeTTL {
		return v.why, nil
	}

	crdName := t.PluralName + "." + t.Group
	why := fmt.Sprintf("target type %s is neither a built-in kind with spec.replicas (Deployment, ReplicaSet, StatefulSet, ReplicationController) nor defined by a CustomResourceDefinition %s", gvk, crdName)
	if t.Group == "" {
		why = fmt.Sprintf("target type %s has no spec.replicas; the built-in kinds that have one are Deployment, ReplicaSet, StatefulSet and ReplicationController", gvk)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdGVK)
	var err error
	if t.Group != "" {
		err = tt.reader.Get(ctx, client.ObjectKey{Name: crdName}, u)
	}
	switch {
	case t.Group == "" || apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("read CustomResourceDefinition %s: %w", crdName, err)
	default:
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return "", fmt.Errorf("decode CustomResourceDefinition %s: %w", crdName, err)
		}
		why = crdReplicas(crd, t.Version)
	}
	tt.mu.Lock()
	if tt.verdicts == nil {
		tt.verdicts = map[schema.GroupVersionKind]targetVerdict{}
	}
	tt.verdicts[gvk] = targetVerdict{why: why, at: now}
	tt.mu.Unlock()
	return why, nil
}

// crdReplicas returns "" when version of the CRD has an integer
// spec.replicas, by its scale subresource or its schema, else why not.
func crdReplicas(crd *apiextensionsv1.CustomResourceDefinition, version string) string {
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Subresources != nil && v.Subresources.Scale != nil && v.Subresources.Scale.SpecReplicasPath == ".spec.replicas" {
			return ""
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
			if ok && spec.Properties["replicas"].Type == "integer" {
				return ""
			}
		}
		return fmt.Sprintf("version %s of CustomResourceDefinition %s has no integer spec.replicas in its schema or scale subresource", version, crd.Name)
	}
	return fmt.Sprintf("CustomResourceDefinition %s does not serve version %s", crd.Name, version)
}
