//go:build integration

package sync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestEngineNamespacedScope: as in KubeFed, a Namespaced control plane's
// namespace is federated implicitly, so its objects go where their
// placement says; a FederatedNamespace of that namespace, once there,
// limits them to the clusters it selects, and gone, no longer does. The
// KubeFedConfig deleted and created again with the other scope ends the
// controller-manager, to start afresh with it.
func TestEngineNamespacedScope(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx, func(s *corev1beta1.KubeFedConfigSpec) { s.Scope = corev1beta1.NamespaceScoped })
	host := fw.Host.Client
	ns := corev1beta1.DefaultKubeFedNamespace

	opts := controllermanager.DefaultOptions()
	opts.Kubeconfig, opts.Context = fw.Kubeconfig, fw.Host.Name
	opts.MetricsAddr, opts.HealthAddr, opts.WebhookPort = "0", "0", 0
	cmCtx, stopCM := context.WithCancel(ctx)
	cmDone := make(chan error, 1)
	go func() { cmDone <- controllermanager.Run(cmCtx, opts) }()
	ended := false
	t.Cleanup(func() {
		stopCM()
		if !ended {
			<-cmDone
		}
	})

	both := joinOnly(t, ctx, fw)
	member1, member2 := fw.Members[0], fw.Members[1]

	count := func(m *framework.Cluster) int {
		t.Helper()
		n, err := framework.WaveCopies(ctx, m, ns, "cm-")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	propagation := func() string {
		u := fedObject("ConfigMap", ns, "cm-0", nil, nil)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err.Error()
		}
		return framework.PropagationState(u)
	}

	create(t, ctx, host, fedObject("ConfigMap", ns, "cm-0", map[string]any{"data": map[string]any{"i": "0"}}, both))
	waitFor(t, ctx, "the object in both members without a FederatedNamespace", 2*time.Minute, func() bool {
		return count(member1) == 1 && count(member2) == 1
	})

	fns := fedObject("Namespace", ns, ns, map[string]any{}, []string{member1.Name})
	create(t, ctx, host, fns)
	waitFor(t, ctx, "the copy gone from the member the FederatedNamespace leaves out", time.Minute, func() bool {
		return count(member2) == 0 && propagation() == "True| "+member1.Name
	})
	if got := count(member1); got != 1 {
		t.Fatalf("member1 has %d copies, want 1", got)
	}

	if err := host.Delete(ctx, fns); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the copy back once the FederatedNamespace is gone", time.Minute, func() bool {
		return count(member2) == 1 && propagation() == "True| "+member1.Name+" "+member2.Name
	})

	// The scope cannot be updated, but the KubeFedConfig can be made anew.
	kfc := &corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: ns}}
	if err := host.Delete(ctx, kfc); err != nil {
		t.Fatal(err)
	}
	kfc = &corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: ns},
		Spec: corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped}}
	if err := host.Create(ctx, kfc); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cmDone:
		ended = true
		if err == nil || !strings.Contains(err.Error(), "scope changed from Namespaced to Cluster") {
			t.Fatalf("controller-manager ended with %v, want the scope change", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the controller-manager ran on after the KubeFedConfig's scope changed")
	}
}
