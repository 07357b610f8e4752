package kubefedctl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// connectHost resolves the host cluster from --host-cluster-context, else
// the kubeconfig's current context. It sends no request.
func connectHost(g *globalOptions, streams IOStreams) (*cluster, error) {
	conn := g.newConnector(g, streams)
	name := g.hostClusterContext
	if name == "" {
		var err error
		if name, err = conn.currentContext(); err != nil {
			return nil, err
		}
	}
	host, err := conn.connect(name)
	if err != nil {
		return nil, fmt.Errorf("host cluster: %w", err)
	}
	return host, nil
}

// typeConfigRef names a FederatedTypeConfig in output and errors.
func typeConfigRef(namespace, name string) objectRef {
	return objectRef{Kind: "FederatedTypeConfig", Namespace: namespace, Name: name}
}

// crdRef names a CustomResourceDefinition in output and errors.
func crdRef(name string) objectRef {
	return objectRef{Kind: "CustomResourceDefinition", Name: name}
}

// listTypeConfigs returns the FederatedTypeConfigs of the control plane,
// sorted by name. The control plane ignores those in other namespaces.
func listTypeConfigs(ctx context.Context, host *cluster, namespace string) ([]corev1beta1.FederatedTypeConfig, error) {
	var list corev1beta1.FederatedTypeConfigList
	if err := host.fed.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list FederatedTypeConfigs in namespace %q of %s: %w", namespace, host.context, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// resourceOf is the group and resource an FTC entry designates.
func resourceOf(a corev1beta1.APIResource) schema.GroupResource {
	return schema.GroupResource{Group: a.Group, Resource: a.PluralName}
}

// gvrOf is the resource an FTC entry designates, in its version.
func gvrOf(a corev1beta1.APIResource) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: a.Group, Version: a.Version, Resource: a.PluralName}
}

// sameType reports whether two FTC entries designate the same type, in any
// version: the version is a choice within a type, not a different one.
func sameType(a, b corev1beta1.APIResource) bool {
	return a.Group == b.Group && a.PluralName == b.PluralName && a.Kind == b.Kind && a.Scope == b.Scope
}

// describeType names an FTC entry for humans, e.g. "Deployment (deployments.apps/v1)".
func describeType(a corev1beta1.APIResource) string {
	return fmt.Sprintf("%s (%s/%s)", a.Kind, resourceOf(a), a.Version)
}

// typeConfigFor returns the FTC whose target or federated type is gr, or
// nil. Names differing from KubeFed's are found as well, since a
// hand-written FTC may use any name.
func typeConfigFor(ftcs []corev1beta1.FederatedTypeConfig, gr schema.GroupResource) *corev1beta1.FederatedTypeConfig {
	for i := range ftcs {
		if resourceOf(ftcs[i].Spec.TargetType) == gr || resourceOf(ftcs[i].Spec.FederatedType) == gr {
			return &ftcs[i]
		}
	}
	return nil
}

// findTypeConfig finds the FTC a user's name designates: the FTC's own
// name; else the type discovery resolves the name to, as target or
// federated type; else, for a type the host no longer serves, a target
// named so in the FTC itself.
// notEnabledError is findTypeConfig's answer for a type the host serves
// that no FederatedTypeConfig federates.
type notEnabledError struct {
	t   apiType
	err error
}

func (e *notEnabledError) Error() string { return e.err.Error() }

func findTypeConfig(ctx context.Context, host *cluster, namespace, name string) (*corev1beta1.FederatedTypeConfig, error) {
	ftcs, err := listTypeConfigs(ctx, host, namespace)
	if err != nil {
		return nil, err
	}
	for i := range ftcs {
		if ftcs[i].Name == name {
			return &ftcs[i], nil
		}
	}
	idx, err := discoverAPI(ctx, host)
	if err != nil {
		return nil, err
	}
	t, resolveErr := idx.resolve(name, "")
	if resolveErr == nil {
		if ftc := typeConfigFor(ftcs, t.gvr.GroupResource()); ftc != nil {
			return ftc, nil
		}
		return nil, &notEnabledError{t: t, err: fmt.Errorf("%s is not enabled: no FederatedTypeConfig in namespace %q of %s federates it (enable it with: kubefedctl enable %s)",
			t.name(), namespace, host.context, t.name())}
	}
	var found []*corev1beta1.FederatedTypeConfig
	n := strings.ToLower(name)
	for i := range ftcs {
		tt := ftcs[i].Spec.TargetType
		for _, s := range []string{tt.PluralName, strings.ToLower(tt.Kind), resourceOf(tt).String()} {
			if n == s {
				found = append(found, &ftcs[i])
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no FederatedTypeConfig in namespace %q of %s federates %q: %w", namespace, host.context, name, resolveErr)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.Name
	}
	return nil, fmt.Errorf("%q is ambiguous: FederatedTypeConfigs %s match it; name one of them", name, strings.Join(names, ", "))
}
