package controllermanager

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

func typeNames(t *testing.T, c client.Client) []string {
	t.Helper()
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := c.List(context.Background(), list, client.InNamespace(corev1beta1.DefaultKubeFedNamespace)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ftc := range list.Items {
		names = append(names, ftc.Name)
	}
	slices.Sort(names)
	return names
}

func TestInstallDefaultTypesOnFirstStartOnly(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, target := range federatedtype.DefaultTargets {
		all = append(all, target.TypeConfigName())
	}
	slices.Sort(all)
	without := func(names []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(drop, n) })
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		scope    corev1beta1.Scope
		exclude  []string
		existing []client.Object
		want     []string
	}{
		{name: "first start, Cluster scope", scope: corev1beta1.ClusterScoped, want: all},
		{name: "first start, Namespaced scope: nothing cluster-scoped", scope: corev1beta1.NamespaceScoped,
			want: without(all, "clusterroles.rbac.authorization.k8s.io")},
		{name: "excluded types", scope: corev1beta1.ClusterScoped, exclude: []string{"jobs.batch", "secrets"},
			want: without(all, "jobs.batch", "secrets")},
		{name: "a KubeFedConfig exists: not the first start", scope: corev1beta1.ClusterScoped,
			existing: []client.Object{&corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{
				Namespace: corev1beta1.DefaultKubeFedNamespace, Name: corev1beta1.KubeFedConfigName}}},
			want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.existing...).Build()
			o := DefaultOptions()
			o.Scope, o.ExcludeDefaultTypes = string(tc.scope), tc.exclude
			if err := installDefaultTypes(ctx, c, o); err != nil {
				t.Fatal(err)
			}
			if got := typeNames(t, c); !slices.Equal(got, tc.want) {
				t.Fatalf("installed %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("a type that exists is left alone", func(t *testing.T) {
		mine := federatedtype.TypeConfig(federatedtype.DefaultTargets[1], federatedtype.Options{Namespace: corev1beta1.DefaultKubeFedNamespace})
		mine.Spec.Propagation = corev1beta1.Disabled
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(mine).Build()
		o := DefaultOptions()
		if err := installDefaultTypes(ctx, c, o); err != nil {
			t.Fatal(err)
		}
		got := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mine), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Propagation != corev1beta1.Disabled {
			t.Fatalf("the existing %s was changed to %s", mine.Name, got.Spec.Propagation)
		}
	})

	t.Run("kinds served a moment after the start are waited for", func(t *testing.T) {
		// One `kubectl apply` of the install manifest: the CRDs and the
		// Deployment together.
		notServed := map[string]int{"KubeFedConfig": 1, "FederatedTypeConfig": 1}
		noMatch := func(obj client.Object) error {
			kind := "FederatedTypeConfig"
			if _, ok := obj.(*corev1beta1.KubeFedConfig); ok {
				kind = "KubeFedConfig"
			}
			if notServed[kind] > 0 {
				notServed[kind]--
				return &meta.NoKindMatchError{GroupKind: corev1beta1.GroupVersion.WithKind(kind).GroupKind(), SearchedVersions: []string{"v1beta1"}}
			}
			return nil
		}
		c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := noMatch(obj); err != nil {
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := noMatch(obj); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build()
		if err := installDefaultTypes(ctx, c, DefaultOptions()); err != nil {
			t.Fatalf("the kinds not served yet: %v", err)
		}
		if got := typeNames(t, c); !slices.Equal(got, all) {
			t.Fatalf("installed %v, want %v", got, all)
		}
	})

	t.Run("an unknown type to exclude is refused", func(t *testing.T) {
		o := DefaultOptions()
		o.ExcludeDefaultTypes = []string{"gadgets.example.com"}
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `--exclude-default-types: "gadgets.example.com" is not a default type`) {
			t.Fatalf("Validate: %v", err)
		}
	})
}
