//go:build integration

package compat_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// config/admission/sync-finalizer.yaml gives a federated object the sync
// controller's finalizer as it is created, exactly when its type is listed
// in the ConfigMap kubefed-propagating-types of the control plane's
// namespace, which the controller-manager keeps to the types whose
// FederatedTypeConfig propagates and runs (controllers/typeconfig, tested
// there): the controller-manager would add it itself then, and only then.
func TestSyncFinalizerPolicy(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "kube-federation-system", corev1beta1.PropagatingTypesConfigMap
	defer func() { _ = host.Delete(ctx, cm) }()
	// list makes the ConfigMap list the types, creating it the first time.
	list := func(types ...string) {
		t.Helper()
		cm.Data = map[string]string{}
		for _, ty := range types {
			cm.Data[ty] = "some-type-config"
		}
		var err error
		if cm.ResourceVersion == "" {
			err = host.Create(ctx, cm)
		} else {
			err = host.Update(ctx, cm)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	// created is the finalizers a dry-run create of a federated object of
	// kind, listing finalizers, ends up with. Until the API server's
	// admission policies have loaded a new CRD's schema they refuse its
	// objects with 503 ("There can be a delay between when
	// CustomResourceDefinitions are created and when they are available"):
	// the create is tried again then, for up to a minute.
	created := func(kind string, finalizers ...string) []string {
		t.Helper()
		n++
		deadline := time.Now().Add(time.Minute)
		for {
			obj := object(fmt.Sprintf(`{"apiVersion": "types.kubefed.io/v1beta1", "kind": %q,
				"metadata": {"name": "probe-%d", "namespace": "team-a"}, "spec": {"template": {}}}`, kind, n))
			obj.SetFinalizers(finalizers)
			err := host.Create(ctx, obj, client.DryRunAll)
			if apierrors.IsServiceUnavailable(err) && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatalf("create %s: %v", kind, err)
			}
			return obj.GetFinalizers()
		}
	}
	// eventually waits for the API server to act on a change of the
	// policy's params, which it watches.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	has := func(finalizers []string) bool {
		return slices.Contains(finalizers, corev1beta1.SyncControllerFinalizer)
	}

	// Without the ConfigMap (an older controller-manager, or none yet) the
	// policy adds nothing: the engine adds the finalizer then.
	if got := created("FederatedServiceAccount"); has(got) {
		t.Errorf("without the ConfigMap a FederatedServiceAccount got finalizers %v", got)
	}
	list("federatedserviceaccounts.types.kubefed.io", "federatedconfigmaps.example.io")
	eventually("the finalizer on a type that propagates and runs", func() bool {
		return has(created("FederatedServiceAccount"))
	})
	// A type not listed is left alone: the policy was acting on another
	// one just before.
	if got := created("FederatedJob"); has(got) {
		t.Errorf("a FederatedJob, whose type is not listed, got finalizers %v", got)
	}
	// Finalizers of others are kept, and ours is not listed twice.
	if got, want := created("FederatedServiceAccount", "example.com/keep"), []string{"example.com/keep", corev1beta1.SyncControllerFinalizer}; !slices.Equal(got, want) {
		t.Errorf("finalizers %v, want %v", got, want)
	}
	if got, want := created("FederatedServiceAccount", corev1beta1.SyncControllerFinalizer), []string{corev1beta1.SyncControllerFinalizer}; !slices.Equal(got, want) {
		t.Errorf("finalizers %v, want %v", got, want)
	}

	// A GitOps tool's server-side apply that creates the object and applies
	// it again, without the finalizer in its manifest, keeps it: the
	// API server records a mutating policy's additions under no field
	// manager, so the applier never owns the finalizer, and a later apply
	// cannot remove it.
	applied := func(labels map[string]string) *unstructured.Unstructured {
		t.Helper()
		obj := object(`{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedServiceAccount",
			"metadata": {"name": "applied", "namespace": "team-a"}, "spec": {"template": {}}}`)
		obj.SetLabels(labels)
		if err := host.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("gitops"), client.ForceOwnership); err != nil {
			t.Fatalf("apply: %v", err)
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := host.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := applied(nil)
	defer func() {
		first.SetFinalizers(nil)
		_ = host.Update(ctx, first)
		_ = host.Delete(ctx, first)
	}()
	if !has(first.GetFinalizers()) {
		t.Fatalf("created by server-side apply: finalizers %v, want the sync controller's", first.GetFinalizers())
	}
	again := applied(map[string]string{"team": "a"})
	if again.GetLabels()["team"] != "a" {
		t.Fatalf("the second apply did not land: labels %v", again.GetLabels())
	}
	if !has(again.GetFinalizers()) {
		t.Errorf("a second apply without the finalizer removed it: finalizers %v", again.GetFinalizers())
	}
	first = again

	// No longer listed (the type stopped running, or its propagation was
	// disabled): nothing would release a finalizer.
	list("federatedjobs.types.kubefed.io")
	eventually("no finalizer once the type is no longer listed", func() bool {
		return !has(created("FederatedServiceAccount"))
	})
	eventually("the finalizer on the type listed now", func() bool {
		return has(created("FederatedJob"))
	})
	list("federatedserviceaccounts.types.kubefed.io")
	eventually("the finalizer once listed again", func() bool {
		return has(created("FederatedServiceAccount"))
	})
	if err := host.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually("no finalizer once the ConfigMap is gone", func() bool {
		return !has(created("FederatedServiceAccount"))
	})
}
