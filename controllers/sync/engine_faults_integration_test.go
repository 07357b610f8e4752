//go:build integration

package sync_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestEngineOwnCopyBehindItsCache checks what the engine does with a copy
// it does not know of yet because its cache of the member lags: a create
// that the member made though it answered with a server error is read
// before it is made again, not created twice and then overwritten; and a
// managed copy made elsewhere (by another replica, before this one took the
// member over) is checked and corrected as a managed copy, not refused as
// a pre-existing object even though adoptResources is Disabled. member1 is
// reached through a proxy that injects the error and holds the cache's
// watch events.
func TestEngineOwnCopyBehindItsCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx, func(s *corev1beta1.KubeFedConfigSpec) {
		s.SyncController.AdoptResources = corev1beta1.Disabled
	})
	host := fw.Host.Client
	runControllerManager(t, ctx, fw)
	joinMembers(t, ctx, fw)
	member1 := fw.Members[0]
	proxy := throughFaultProxy(t, ctx, fw, member1)
	only1 := []string{member1.Name}
	create(t, ctx, host, fedObject("ConfigMap", testNS, "warm-up", map[string]any{"data": map[string]any{"i": "0"}}, only1))
	waitFor(t, ctx, "a copy through the proxy", time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "warm-up") == "True| "+member1.Name && proxy.Watches("configmaps") > 0
	})

	// A create answered 500 after the member made the copy, while the
	// cache does not show the copy: the next try reads it.
	proxy.HoldWatches(true)
	held := true
	t.Cleanup(func() {
		if held {
			proxy.HoldWatches(false)
		}
	})
	proxy.FailNextCreate("configmaps", "answered-500")
	create(t, ctx, host, fedObject("ConfigMap", testNS, "answered-500", map[string]any{"data": map[string]any{"i": "1"}}, only1))
	waitFor(t, ctx, "a second request for the copy answered 500", time.Minute, func() bool {
		got := proxy.Requests("configmaps", "answered-500")
		return len(got) >= 2 && !strings.HasSuffix(got[1], " 0")
	})
	waitFor(t, ctx, "answered-500 propagated", time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "answered-500") == "True| "+member1.Name
	})
	if got := proxy.Requests("configmaps", "answered-500"); got[0] != "POST 201" || got[1] != "GET 200" || slices.ContainsFunc(got[1:], written) {
		t.Errorf("requests for the copy whose create was answered 500 (the member's answers): %v, want one POST, then a GET and no write", got)
	}

	// A managed copy made elsewhere, not in the cache: checked and
	// corrected, although adoptResources is Disabled.
	elsewhere := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "made-elsewhere", Namespace: testNS,
			Labels: map[string]string{corev1beta1.ManagedByKubeFedLabelKey: corev1beta1.ManagedByKubeFedLabelValue}},
		Data: map[string]string{"i": "stale"},
	}
	if err := member1.Client.Create(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}
	create(t, ctx, host, fedObject("ConfigMap", testNS, "made-elsewhere", map[string]any{"data": map[string]any{"i": "2"}}, only1))
	waitFor(t, ctx, "made-elsewhere propagated while the cache lags", time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "made-elsewhere") == "True| "+member1.Name
	})
	if got := proxy.Requests("configmaps", "made-elsewhere"); !slices.Contains(got, "PUT 200") {
		t.Errorf("requests for the managed copy made elsewhere: %v, want it corrected with a PUT", got)
	}
	got := &corev1.ConfigMap{}
	if err := member1.Client.Get(ctx, client.ObjectKeyFromObject(elsewhere), got); err != nil {
		t.Fatal(err)
	}
	if got.Data["i"] != "2" {
		t.Errorf("made-elsewhere holds %v in member1, want the template's data", got.Data)
	}

	proxy.HoldWatches(false)
	held = false
	// Once the cache catches up, nothing is written again. (The events
	// held replay the copy as it was before the engine's update: an update
	// tried on that old version is refused with a conflict, not a write.)
	before := len(proxy.Requests("configmaps", "made-elsewhere"))
	create(t, ctx, host, fedObject("ConfigMap", testNS, "after-catch-up", map[string]any{"data": map[string]any{"i": "3"}}, only1))
	waitFor(t, ctx, "after-catch-up propagated", time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "after-catch-up") == "True| "+member1.Name
	})
	if got := proxy.Requests("configmaps", "made-elsewhere"); slices.ContainsFunc(got[before:], written) {
		t.Errorf("requests for made-elsewhere after the cache caught up: %v, want no write after the first %d", got, before)
	}
}

// written reports whether a recorded request ("PUT 200") was a write the
// member carried out.
func written(request string) bool {
	method, code, _ := strings.Cut(request, " ")
	return method != "GET" && strings.HasPrefix(code, "2")
}

// throughFaultProxy puts a joined member behind a fault proxy: its
// KubeFedCluster's endpoint becomes the proxy's, and the control plane's
// clients move there when it sees the change, its caches too (those of a
// resource are made for its first copy).
func throughFaultProxy(t *testing.T, ctx context.Context, fw *framework.Framework, member *framework.Cluster) *framework.FaultProxy {
	t.Helper()
	host := fw.Host.Client
	proxy, err := framework.StartFaultProxy(member.Config.Host, member.Config.CAData)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	kfc := &corev1beta1.KubeFedCluster{}
	if err := host.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: member.Name}, kfc); err != nil {
		t.Fatal(err)
	}
	kfc.Spec.APIEndpoint, kfc.Spec.CABundle = proxy.URL(), proxy.CABundle()
	if err := host.Update(ctx, kfc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, member.Name+" reached through the proxy", time.Minute, func() bool { return proxy.Served() > 0 })
	return proxy
}
