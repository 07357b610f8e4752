package kubefedctl

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// objectKey identifies an object within one namespace across all APIs.
type objectKey struct {
	group string
	kind  string
	name  string
}

// ephemeralResources are left out when judging whether a namespace is
// empty: Events about join's own objects must not keep the namespace.
var ephemeralResources = []schema.GroupResource{
	{Group: "", Resource: "events"},
	{Group: "events.k8s.io", Resource: "events"},
}

// systemObject reports the objects Kubernetes itself puts into every
// namespace, which do not make a namespace worth keeping.
func systemObject(gr schema.GroupResource, m *metav1.PartialObjectMetadata) bool {
	if gr.Group != "" {
		return false
	}
	switch gr.Resource {
	case "configmaps":
		return m.Name == "kube-root-ca.crt"
	case "serviceaccounts":
		return m.Name == "default"
	case "secrets":
		// The token Secret of the default ServiceAccount before Kubernetes 1.24.
		return m.Annotations[corev1.ServiceAccountNameKey] == "default"
	}
	return false
}

// ownedByWorkload reports objects a workload controls (a Pod of a
// ReplicaSet of a Deployment): they go with it, and the workload, in the
// same namespace, is judged itself.
func ownedByWorkload(m *metav1.PartialObjectMetadata) bool {
	owner := metav1.GetControllerOfNoCopy(m)
	return owner != nil && strings.HasPrefix(owner.APIVersion, "apps/")
}

// foreignObjects lists, as "Kind name", what a namespace holds besides the
// system objects and the objects in ignore. It looks at every listable
// namespaced resource the cluster serves, custom ones included, because
// unjoin must not delete a namespace holding anything join did not create.
func foreignObjects(ctx context.Context, c *cluster, namespace string, ignore map[objectKey]bool) ([]string, error) {
	_, lists, err := c.kube.Discovery().ServerGroupsAndResources()
	if err != nil {
		return nil, fmt.Errorf("discover the resources cluster %q serves: %w", c.context, err)
	}
	seen := map[schema.GroupResource]bool{}
	var found []string
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery of cluster %q: %w", c.context, err)
		}
		for _, r := range list.APIResources {
			gr := gv.WithResource(r.Name).GroupResource()
			if !r.Namespaced || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") ||
				seen[gr] || slices.Contains(ephemeralResources, gr) {
				continue
			}
			seen[gr] = true
			items, err := c.metadata.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{})
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				continue
			case err != nil:
				return nil, fmt.Errorf("list %s in namespace %q of cluster %q: %w", gr, namespace, c.context, err)
			}
			for i := range items.Items {
				item := &items.Items[i]
				if systemObject(gr, item) || ignore[objectKey{group: gv.Group, kind: r.Kind, name: item.Name}] || ownedByWorkload(item) {
					continue
				}
				found = append(found, r.Kind+" "+item.Name)
			}
		}
	}
	sort.Strings(found)
	return found, nil
}

// sameCluster reports whether two contexts reach the same cluster: the same
// context, the same server URL, or the same kube-system namespace UID,
// which identifies a cluster behind any number of addresses.
func sameCluster(ctx context.Context, a, b *cluster) bool {
	if a == b || a.context == b.context || normalizeServer(a.server) == normalizeServer(b.server) {
		return true
	}
	uid := func(c *cluster) string {
		ns, err := c.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return string(ns.UID)
	}
	ua := uid(a)
	return ua != "" && ua == uid(b)
}

func normalizeServer(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return strings.TrimSuffix(strings.ToLower(server), "/")
	}
	host := strings.ToLower(u.Host)
	if u.Port() == "" && (u.Scheme == "https" || u.Scheme == "") {
		host += ":443"
	}
	return host + strings.TrimSuffix(u.Path, "/")
}
