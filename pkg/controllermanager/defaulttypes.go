package controllermanager

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
)

// defaultTypeConfigs are the FederatedTypeConfigs --install-default-types
// creates: every default type but the excluded ones and, for a Namespaced
// control plane, those whose federated type is cluster-scoped. They are
// config/default-types' (the chart's defaultTypes), in namespace.
func defaultTypeConfigs(namespace string, scope corev1beta1.Scope, exclude []string) ([]*corev1beta1.FederatedTypeConfig, error) {
	var known []string
	for _, t := range federatedtype.DefaultTargets {
		known = append(known, t.TypeConfigName())
	}
	for _, name := range exclude {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("--exclude-default-types: %q is not a default type; they are %s", name, strings.Join(known, ", "))
		}
	}
	var out []*corev1beta1.FederatedTypeConfig
	for _, t := range federatedtype.DefaultTargets {
		ftc := federatedtype.TypeConfig(t, federatedtype.Options{Namespace: namespace})
		if slices.Contains(exclude, ftc.Name) {
			continue
		}
		if scope == corev1beta1.NamespaceScoped && !ftc.Spec.FederatedType.Namespaced() {
			continue
		}
		out = append(out, ftc)
	}
	return out, nil
}

// installDefaultTypes creates the default FederatedTypeConfigs on the
// control plane's first start, which it tells by the KubeFedConfig not
// existing yet: installs without Helm (dist/) get what the chart's
// defaultTypes.install gives, and a type disabled later is not brought back
// by a restart. It runs before the KubeFedConfig is created, so a start cut
// short installs them again on the next; one that exists is left alone.
func installDefaultTypes(ctx context.Context, c client.Client, o Options) error {
	// The kinds may be served in a moment, their CRDs applied with the
	// Deployment, as Load waits for them.
	err := kubefedconfig.WhileKindNotReady(ctx, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: o.KubeFedNamespace, Name: corev1beta1.KubeFedConfigName}, &corev1beta1.KubeFedConfig{})
	})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read KubeFedConfig %s/%s: %w", o.KubeFedNamespace, corev1beta1.KubeFedConfigName, err)
	}
	ftcs, err := defaultTypeConfigs(o.KubeFedNamespace, corev1beta1.Scope(o.Scope), o.ExcludeDefaultTypes)
	if err != nil {
		return err
	}
	for _, ftc := range ftcs {
		err := kubefedconfig.WhileKindNotReady(ctx, func() error { return c.Create(ctx, ftc) })
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install default type %s: %w", ftc.Name, err)
		}
	}
	return nil
}
