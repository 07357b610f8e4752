//go:build integration

package sync_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// TestEngineNamespacesTypeDisabled: as in KubeFed, with the namespaces
// type's propagation Disabled, namespaced types still propagate, placed
// by their namespace's FederatedNamespace, whose changes still move
// their copies; enabled again, the namespaces type's cache takes over.
func TestEngineNamespacesTypeDisabled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx)
	host := fw.Host.Client
	runControllerManager(t, ctx, fw)
	both := joinMembers(t, ctx, fw)
	member1, member2 := fw.Members[0], fw.Members[1]

	setPropagation := func(p corev1beta1.Mode) {
		t.Helper()
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := host.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: corev1beta1.NamespacesTypeConfigName}, ftc); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(ftc.DeepCopy())
		ftc.Spec.Propagation = p
		if err := host.Patch(ctx, ftc, patch); err != nil {
			t.Fatal(err)
		}
	}
	typeStatus := func(name string) string {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := host.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: name}, ftc); err != nil {
			return err.Error()
		}
		if ftc.Status.ObservedGeneration != ftc.Generation {
			return "not reconciled"
		}
		return string(ftc.Status.PropagationController)
	}
	placeNamespace := func(clusters ...string) {
		t.Helper()
		list := []any{}
		for _, c := range clusters {
			list = append(list, map[string]any{"name": c})
		}
		// The engine writes the object's status and finalizer meanwhile.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			fns := fedObject("Namespace", testNS, testNS, nil, nil)
			if err := host.Get(ctx, client.ObjectKeyFromObject(fns), fns); err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(fns.Object, list, "spec", "placement", "clusters"); err != nil {
				return err
			}
			return host.Update(ctx, fns)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	setPropagation(corev1beta1.Disabled)
	waitFor(t, ctx, "the namespaces type stopped", time.Minute, func() bool {
		return typeStatus(corev1beta1.NamespacesTypeConfigName) == string(corev1beta1.ControllerStatusNotRunning)
	})
	if got := typeStatus("configmaps"); got != string(corev1beta1.ControllerStatusRunning) {
		t.Fatalf("configmaps: %s, want Running while the namespaces type is Disabled", got)
	}

	create(t, ctx, host, fedObject("ConfigMap", testNS, "cm-0", map[string]any{"data": map[string]any{"i": "0"}}, both))
	waitFor(t, ctx, "a new object in both members", time.Minute, func() bool {
		return copies(t, ctx, member1) == 1 && copies(t, ctx, member2) == 1
	})

	// The FederatedNamespace, which no type propagates now, still places.
	placeNamespace(member1.Name)
	waitFor(t, ctx, "the copy gone from the member the namespace left", time.Minute, func() bool {
		return copies(t, ctx, member2) == 0 && state(ctx, host, "ConfigMap", "cm-0") == "True| "+member1.Name
	})
	if got := copies(t, ctx, member1); got != 1 {
		t.Fatalf("member1 has %d copies, want 1", got)
	}

	// Enabled again, the namespaces type's own cache places.
	setPropagation(corev1beta1.Enabled)
	waitFor(t, ctx, "the namespaces type running", time.Minute, func() bool {
		return typeStatus(corev1beta1.NamespacesTypeConfigName) == string(corev1beta1.ControllerStatusRunning)
	})
	placeNamespace(both...)
	waitFor(t, ctx, "the copy back in both members", 2*time.Minute, func() bool {
		return copies(t, ctx, member2) == 1 && state(ctx, host, "ConfigMap", "cm-0") == "True| "+member1.Name+" "+member2.Name
	})
}
