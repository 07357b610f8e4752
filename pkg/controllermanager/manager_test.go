package controllermanager

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
)

// At the start a KubeFedConfig that cannot be loaded fails the start; after
// a change, the load is tried again until it succeeds, so that one failed
// read does not end every replica at once.
func TestAReloadIsRetriedUntilTheConfigLoads(t *testing.T) {
	failures := 2
	load := func() (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error) {
		if failures > 0 {
			failures--
			return nil, nil, errors.New("the server is currently unable to handle the request")
		}
		return &corev1beta1.KubeFedConfig{}, &kubefedconfig.Settings{}, nil
	}
	ctx := context.Background()
	if _, _, err := loadConfig(ctx, false, time.Millisecond, logr.Discard(), load); err == nil {
		t.Fatal("a failure at the start was not returned")
	}
	kfc, settings, err := loadConfig(ctx, true, time.Millisecond, logr.Discard(), load)
	if err != nil || kfc == nil || settings == nil || failures != 0 {
		t.Fatalf("a reload: %v, %v, %v; %d failures left", kfc, settings, err, failures)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	failures = 1
	if kfc, _, err := loadConfig(stopped, true, time.Millisecond, logr.Discard(), load); kfc != nil || err != nil {
		t.Fatalf("a reload as the process stops: %v, %v", kfc, err)
	}
}

// A KubeFedConfig that cannot be read for changes is said once per error,
// and again when it can be read; a change read then still restarts.
func TestConfigReadFailuresAreLoggedOnce(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	kfc := kubefedconfig.New(corev1beta1.DefaultKubeFedNamespace, corev1beta1.ClusterScoped)
	started := *kfc.Spec.DeepCopy()
	kfc.Spec.Scope = corev1beta1.NamespaceScoped
	refusals := 3
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kfc).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if refusals > 0 {
				refusals--
				return apierrors.NewForbidden(schema.GroupResource{Group: "core.kubefed.io", Resource: "kubefedconfigs"}, key.Name, errors.New("RBAC"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	ctx, cancel := context.WithCancelCause(context.Background())
	go watchConfig(ctx, cancel, c, corev1beta1.DefaultKubeFedNamespace, started, time.Millisecond, log)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), errConfigChanged) {
		t.Fatalf("the watch ended with %v, want the change", context.Cause(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 || !strings.Contains(lines[0], "Reading the KubeFedConfig for changes") || !strings.Contains(lines[0], "forbidden") ||
		!strings.Contains(lines[1], "can be read again") {
		t.Fatalf("logged %q, want the failure once and its end", lines)
	}
}

// A KubeFedConfig deleted and created again with another scope ends the
// process, whose caches and rights follow the scope it started with.
func TestAScopeChangeEndsTheProcess(t *testing.T) {
	if err := sameScope("", corev1beta1.NamespaceScoped); err != nil {
		t.Errorf("first load: %v", err)
	}
	if err := sameScope(corev1beta1.ClusterScoped, corev1beta1.ClusterScoped); err != nil {
		t.Errorf("same scope: %v", err)
	}
	err := sameScope(corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped)
	if err == nil || !strings.Contains(err.Error(), "scope changed from Cluster to Namespaced") {
		t.Errorf("changed scope: %v", err)
	}
}
