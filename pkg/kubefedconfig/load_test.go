package kubefedconfig

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// A KubeFedConfig CRD applied a moment before the controller starts (one
// `kubectl apply` of the install manifest) is not served yet: Load waits
// for it instead of failing the start.
func TestLoadWaitsForTheKindToBeServed(t *testing.T) {
	defer func(d time.Duration) { crdRetry = d }(crdRetry)
	crdRetry = time.Millisecond
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	notServed := 3
	gvk := schema.GroupVersionKind{Group: corev1beta1.GroupVersion.Group, Version: corev1beta1.GroupVersion.Version, Kind: "KubeFedConfig"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if notServed > 0 {
				notServed--
				if notServed == 0 {
					// What a MutatingAdmissionPolicy answers for a kind it
					// does not know yet.
					return apierrors.NewServiceUnavailable("Resource kind core.kubefed.io/v1beta1, Kind=KubeFedConfig not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.")
				}
				return &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	cfg, settings, err := Load(context.Background(), c, "kube-federation-system", corev1beta1.NamespaceScoped)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if notServed != 0 || cfg.Spec.Scope != corev1beta1.NamespaceScoped || settings.Scope != corev1beta1.NamespaceScoped {
		t.Errorf("after %d refusals left: %+v, %+v", notServed, cfg.Spec, settings)
	}

	// Any other error is not waited out.
	failing := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return context.DeadlineExceeded
		},
	}).Build()
	if _, _, err := Load(context.Background(), failing, "kube-federation-system", corev1beta1.ClusterScoped); err == nil {
		t.Error("Load succeeded with a failing client")
	}
}
