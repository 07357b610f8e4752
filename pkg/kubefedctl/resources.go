package kubefedctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

// apiType is one resource the host serves, in one group and version.
type apiType struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	shortNames []string
	namespaced bool
	verbs      []string
}

// name is the resource's plural.group, or its plural in the core group:
// the form users type to be unambiguous, and a FederatedTypeConfig's name.
func (a apiType) name() string {
	if a.gvr.Group == "" {
		return a.gvr.Resource
	}
	return a.gvr.Resource + "." + a.gvr.Group
}

// target is the type as federatedtype describes it.
func (a apiType) target() federatedtype.Target {
	return federatedtype.TargetFromAPIResource(a.gvr.GroupVersion(), metav1.APIResource{
		Name: a.gvr.Resource, Kind: a.kind, ShortNames: a.shortNames, Namespaced: a.namespaced,
	})
}

// matches reports whether n, in lower case, names the type the ways kubectl
// accepts: kind, plural, singular or short name, alone or followed by the
// group, or as plural.version.group.
func (a apiType) matches(n string) bool {
	names := []string{a.gvr.Resource, a.singular, strings.ToLower(a.kind)}
	for _, s := range a.shortNames {
		if n == strings.ToLower(s) {
			return true
		}
	}
	for _, s := range names {
		if s == "" {
			continue
		}
		if n == s || (a.gvr.Group != "" && n == s+"."+a.gvr.Group) {
			return true
		}
	}
	return a.gvr.Group != "" && n == a.gvr.Resource+"."+a.gvr.Version+"."+a.gvr.Group
}

// apiIndex is what the host's discovery reports.
type apiIndex struct {
	// types holds every resource in every version; within a group, the
	// versions come in discovery's order, preferred first.
	types []apiType
	// preferred is each group's preferred version.
	preferred map[string]string
	// failed are the group versions whose discovery failed (an aggregated
	// API whose server is down); named in "not found" errors.
	failed []string
}

// discoverAPI reads the host's discovery. A failed aggregated API does not
// fail the command: its types are merely unknown.
func discoverAPI(ctx context.Context, c *cluster) (*apiIndex, error) {
	groups, lists, err := discovery.ToDiscoveryInterfaceWithContext(c.kube.Discovery()).ServerGroupsAndResourcesWithContext(ctx)
	idx := &apiIndex{preferred: map[string]string{}}
	if err != nil {
		failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err)
		if !ok {
			return nil, fmt.Errorf("discover the API types cluster %q serves: %w", c.context, err)
		}
		for gv := range failed {
			idx.failed = append(idx.failed, gv.String())
		}
		sort.Strings(idx.failed)
	}
	for _, g := range groups {
		idx.preferred[g.Name] = g.PreferredVersion.Version
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery of cluster %q: %w", c.context, err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			idx.types = append(idx.types, apiType{
				gvr:        gv.WithResource(r.Name),
				kind:       r.Kind,
				singular:   r.SingularName,
				shortNames: r.ShortNames,
				namespaced: r.Namespaced,
				verbs:      r.Verbs,
			})
		}
	}
	return idx, nil
}

// errTypeNotFound is returned by resolve when nothing matches the name.
var errTypeNotFound = errors.New("no such API type")

// servesGroup says whether group is a non-core API group the host serves.
func (x *apiIndex) servesGroup(group string) bool {
	_, ok := x.preferred[group]
	return ok && group != ""
}

// matching lists every type name designates, in discovery's order.
func (x *apiIndex) matching(name string) []schema.GroupResource {
	n := strings.ToLower(strings.TrimSpace(name))
	var matched []schema.GroupResource
	for _, t := range x.types {
		gr := t.gvr.GroupResource()
		if n != "" && t.matches(n) && !slices.Contains(matched, gr) {
			matched = append(matched, gr)
		}
	}
	return matched
}

// resolve finds the type name designates. With several groups matching,
// the core group wins (as kubectl has "events" mean the core Events);
// otherwise the name is ambiguous. version picks a version other than the
// group's preferred one.
func (x *apiIndex) resolve(name, version string) (apiType, error) {
	if strings.TrimSpace(name) == "" {
		return apiType{}, fmt.Errorf("an API type name is required")
	}
	matched := x.matching(name)
	if len(matched) > 1 {
		var core []schema.GroupResource
		for _, gr := range matched {
			if gr.Group == "" {
				core = append(core, gr)
			}
		}
		if len(core) == 1 {
			matched = core
		}
	}
	switch len(matched) {
	case 0:
		msg := fmt.Sprintf("the host cluster serves no API type named %q (looked for a kind, plural, singular, short name or plural.group)", name)
		if len(x.failed) > 0 {
			msg += fmt.Sprintf("; discovery failed for %s", strings.Join(x.failed, ", "))
		}
		return apiType{}, fmt.Errorf("%s: %w", msg, errTypeNotFound)
	case 1:
	default:
		names := make([]string, len(matched))
		for i, gr := range matched {
			names[i] = gr.String()
		}
		sort.Strings(names)
		return apiType{}, fmt.Errorf("%q is ambiguous: it names %s; use the plural.group form, e.g. %q",
			name, strings.Join(names, ", "), names[0])
	}
	return x.version(matched[0], version)
}

// version picks gr's type in the given version, or else in the group's
// preferred version, or else (a resource missing from the preferred
// version) in the first version that serves it.
func (x *apiIndex) version(gr schema.GroupResource, version string) (apiType, error) {
	var served []apiType
	for _, t := range x.types {
		if t.gvr.GroupResource() == gr {
			served = append(served, t)
		}
	}
	if len(served) == 0 {
		return apiType{}, fmt.Errorf("the host cluster does not serve %s: %w", gr, errTypeNotFound)
	}
	want := version
	if want == "" {
		want = x.preferred[gr.Group]
	}
	for _, t := range served {
		if t.gvr.Version == want {
			return t, nil
		}
	}
	if version == "" {
		return served[0], nil
	}
	versions := make([]string, len(served))
	for i, t := range served {
		versions[i] = t.gvr.Version
	}
	return apiType{}, fmt.Errorf("the host cluster serves %s in version %s, not %q", served[0].name(), strings.Join(versions, ", "), version)
}

// lookup finds the type of a group, kind and version, as an object's
// apiVersion and kind name it.
func (x *apiIndex) lookup(gvk schema.GroupVersionKind) (apiType, error) {
	for _, t := range x.types {
		if t.gvr.Group == gvk.Group && t.gvr.Version == gvk.Version && t.kind == gvk.Kind {
			return t, nil
		}
	}
	return apiType{}, fmt.Errorf("the host cluster does not serve kind %s in %s: %w", gvk.Kind, gvk.GroupVersion(), errTypeNotFound)
}

// servesKind says whether the host serves gk in some version.
func (x *apiIndex) servesKind(gk schema.GroupKind) bool {
	return slices.ContainsFunc(x.types, func(t apiType) bool { return t.gvr.Group == gk.Group && t.kind == gk.Kind })
}

// guessedType is the type of a kind the host's discovery does not tell:
// its plural guessed from the kind as KubeFed did, and every verb, so
// that only the kind's group and resource decide whether it is federatable.
func guessedType(gvk schema.GroupVersionKind, namespaced bool) apiType {
	plural, singular := meta.UnsafeGuessKindToResource(gvk)
	return apiType{gvr: plural, kind: gvk.Kind, singular: singular.Resource, namespaced: namespaced, verbs: federationVerbs}
}

// scopeWord names a type's scope.
func scopeWord(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}

// kubefedGroup reports the API groups of KubeFed itself, whose types are
// the machinery of federation and never its subject.
func kubefedGroup(group string) bool {
	return group == "kubefed.io" || strings.HasSuffix(group, ".kubefed.io")
}

// unfederatable are served types that have all the verbs federation needs
// but that make no sense to copy between clusters.
var unfederatable = map[schema.GroupResource]string{
	{Resource: "events"}:                               "Events record what happened in one cluster",
	{Group: "events.k8s.io", Resource: "events"}:       "Events record what happened in one cluster",
	{Resource: "bindings"}:                             "a Binding assigns a pod to a node of one cluster",
	{Resource: "componentstatuses"}:                    "ComponentStatuses report on one cluster's control plane",
	{Resource: "nodes"}:                                "a Node is a machine of one cluster",
	{Group: "coordination.k8s.io", Resource: "leases"}: "Leases coordinate the components of one cluster",
	{Group: "apps", Resource: "controllerrevisions"}:   "ControllerRevisions are kept by each cluster's controllers",
}

// federationVerbs are what the sync controller does with a type in members.
var federationVerbs = []string{"create", "get", "list", "watch", "update", "delete"}

// federatable says why a type cannot be federated, or returns nil.
func federatable(t apiType) error {
	if kubefedGroup(t.gvr.Group) {
		return fmt.Errorf("%s is a KubeFed type (group %s) and cannot itself be federated", t.name(), t.gvr.Group)
	}
	if why, ok := unfederatable[t.gvr.GroupResource()]; ok {
		return fmt.Errorf("%s cannot be federated: %s", t.name(), why)
	}
	var missing []string
	for _, v := range federationVerbs {
		if !slices.Contains(t.verbs, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s cannot be federated: propagation needs the verbs %s, and the API server does not support %s on it",
			t.name(), strings.Join(federationVerbs, ", "), strings.Join(missing, ", "))
	}
	return nil
}
