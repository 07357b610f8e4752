//go:build integration

package compat_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// config/admission/sync-finalizer.yaml gives a federated object the sync
// controller's finalizer as it is created, exactly when its type's
// FederatedTypeConfig propagates and runs: the controller-manager would add
// it itself then, and only then.
func TestSyncFinalizerPolicy(t *testing.T) {
	ctx := context.Background()
	ftc := typeConfig(func(spec map[string]any) {
		spec["targetType"] = map[string]any{"kind": "ServiceAccount", "pluralName": "serviceaccounts", "scope": "Namespaced", "version": "v1"}
		spec["federatedType"] = map[string]any{"group": "types.kubefed.io", "kind": "FederatedServiceAccount",
			"pluralName": "federatedserviceaccounts", "scope": "Namespaced", "version": "v1beta1"}
	})
	if err := host.Create(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Delete(ctx, ftc) }()
	setRunning := func(status corev1beta1.ControllerStatus) {
		t.Helper()
		if err := unstructured.SetNestedField(ftc.Object, string(status), "status", "propagationController"); err != nil {
			t.Fatal(err)
		}
		if err := host.Status().Update(ctx, ftc); err != nil {
			t.Fatal(err)
		}
	}
	setPropagation := func(mode corev1beta1.Mode) {
		t.Helper()
		if err := unstructured.SetNestedField(ftc.Object, string(mode), "spec", "propagation"); err != nil {
			t.Fatal(err)
		}
		if err := host.Update(ctx, ftc); err != nil {
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

	setRunning(corev1beta1.ControllerStatusRunning)
	eventually("the finalizer on a type that propagates and runs", func() bool {
		return has(created("FederatedServiceAccount"))
	})
	// A type without a FederatedTypeConfig is left alone: the policy was
	// acting on the other one just before.
	if got := created("FederatedJob"); has(got) {
		t.Errorf("a FederatedJob, whose type has no FederatedTypeConfig, got finalizers %v", got)
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

	// Enabled but not reported Running: the controller-manager is not
	// syncing the type, so nothing would release a finalizer.
	setRunning(corev1beta1.ControllerStatusNotRunning)
	eventually("no finalizer once propagation is reported NotRunning", func() bool {
		return !has(created("FederatedServiceAccount"))
	})
	setRunning(corev1beta1.ControllerStatusRunning)
	eventually("the finalizer once Running again", func() bool {
		return has(created("FederatedServiceAccount"))
	})
	setPropagation(corev1beta1.Disabled)
	eventually("no finalizer once propagation is Disabled", func() bool {
		return !has(created("FederatedServiceAccount"))
	})
}
