package typeconfig

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// Values of status.targetTypeOverallStatus.
const (
	// PresentInAllClusters means every ready member serves the target type.
	PresentInAllClusters corev1beta1.TargetTypeOverallStatus = "PresentInAllClusters"
	// NotPresentInAllClusters means some ready member does not serve it, or
	// could not be asked.
	NotPresentInAllClusters corev1beta1.TargetTypeOverallStatus = "NotPresentInAllClusters"
)

// ReasonTargetTypeNotPresent is the reason of the warning event that names
// the members missing a type's target type.
const ReasonTargetTypeNotPresent = "TargetTypeNotPresent"

// memberAPIs is what one member cluster's discovery reported. It is never
// modified once built, so readers share it without locking.
type memberAPIs struct {
	// resources holds each served group version's resources by plural name.
	resources map[schema.GroupVersion]map[string]servedResource
	// failed are the group versions whose discovery failed, such as an
	// aggregated API whose server is down, with the error: whether they
	// serve a type is unknown.
	failed map[schema.GroupVersion]string
}

// servedResource is the part of a discovered resource a target type must match.
type servedResource struct {
	kind       string
	namespaced bool
}

// newMemberAPIs indexes discovery's resource lists. failed are the group
// versions discovery could not read.
func newMemberAPIs(lists []*metav1.APIResourceList, failed map[schema.GroupVersion]error) (*memberAPIs, error) {
	m := &memberAPIs{resources: map[schema.GroupVersion]map[string]servedResource{}}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery reported group version %q: %w", list.GroupVersion, err)
		}
		byName := m.resources[gv]
		if byName == nil {
			byName = map[string]servedResource{}
			m.resources[gv] = byName
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			byName[r.Name] = servedResource{kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	if len(failed) > 0 {
		m.failed = make(map[schema.GroupVersion]string, len(failed))
		for gv, err := range failed {
			m.failed[gv] = err.Error()
		}
	}
	return m, nil
}

// equal reports whether two discoveries found the same; nil equals only nil.
func (m *memberAPIs) equal(o *memberAPIs) bool {
	if m == nil || o == nil {
		return m == o
	}
	return reflect.DeepEqual(m.resources, o.resources) && reflect.DeepEqual(m.failed, o.failed)
}

// serves reports whether the member serves the target type: its group
// version has a resource of that plural name, kind and scope. A resource of
// the same name but another kind or scope is another type, not this one.
// The error says why the answer is unknown.
func (m *memberAPIs) serves(t corev1beta1.APIResource) (bool, error) {
	gv := schema.GroupVersion{Group: t.Group, Version: t.Version}
	if r, ok := m.resources[gv][t.PluralName]; ok {
		return r.kind == t.Kind && r.namespaced == t.Namespaced(), nil
	}
	if msg, failed := m.failed[gv]; failed {
		return false, fmt.Errorf("discovery of %s failed: %s", gv, msg)
	}
	return false, nil
}

// clusterPresence is whether one ready member serves a target type.
type clusterPresence struct {
	cluster string
	present bool
	// problem says why it is not known, for the warning event; the type
	// then counts as not present, as nothing can be propagated there either.
	problem string
}

// targetPresence is a type's presence across the ready members, as the
// FederatedTypeConfig's status reports it.
type targetPresence struct {
	// clusters are sorted by name; nil when no member is ready.
	clusters []corev1beta1.TargetTypeClusterStatus
	// overall is empty when no member is ready: there is nothing to report.
	overall corev1beta1.TargetTypeOverallStatus
	// missing are the members that do not serve the type, sorted.
	missing []string
}

// summarizePresence turns what each ready member answered into the status.
func summarizePresence(found []clusterPresence) targetPresence {
	if len(found) == 0 {
		return targetPresence{}
	}
	p := targetPresence{overall: PresentInAllClusters}
	for _, f := range sortedByCluster(found) {
		status := corev1beta1.TargetTypePresent
		if !f.present {
			status = corev1beta1.TargetTypeNotPresent
			p.missing = append(p.missing, f.cluster)
			p.overall = NotPresentInAllClusters
		}
		p.clusters = append(p.clusters, corev1beta1.TargetTypeClusterStatus{ClusterName: f.cluster, Status: status})
	}
	return p
}

// newlyMissing reports whether the type is missing in a member the previous
// status did not report missing: the moment to warn, once, rather than on
// every evaluation.
func (p targetPresence) newlyMissing(previous []corev1beta1.TargetTypeClusterStatus) bool {
	before := reportedMissing(previous)
	for _, m := range p.missing {
		if !slices.Contains(before, m) {
			return true
		}
	}
	return false
}

// reportedMissing are the members a status reports as not serving the type, sorted.
func reportedMissing(status []corev1beta1.TargetTypeClusterStatus) []string {
	var missing []string
	for _, s := range status {
		if s.Status != corev1beta1.TargetTypePresent {
			missing = append(missing, s.ClusterName)
		}
	}
	sort.Strings(missing)
	return missing
}

// missingMessage is the warning event's message: the target type and each
// member missing it, with the reason where the member could not be asked.
func missingMessage(t corev1beta1.APIResource, found []clusterPresence) string {
	var names []string
	for _, f := range sortedByCluster(found) {
		if f.present {
			continue
		}
		if f.problem != "" {
			names = append(names, fmt.Sprintf("%s (%s)", f.cluster, f.problem))
		} else {
			names = append(names, f.cluster)
		}
	}
	noun := "cluster"
	if len(names) > 1 {
		noun = "clusters"
	}
	return fmt.Sprintf("target type %s %s (%s) is not served by member %s %s; its objects cannot be propagated there",
		t.GroupVersionString(), t.Kind, t.PluralName, noun, strings.Join(names, ", "))
}

func sortedByCluster(found []clusterPresence) []clusterPresence {
	sorted := slices.Clone(found)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].cluster < sorted[j].cluster })
	return sorted
}
