package cluster

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// summary holds the heavier status fields collected from a healthy member.
// A field whose collection failed stays unset, and the status keeps its
// previous value, so that one failed list does not blank the status.
type summary struct {
	kubernetesVersion string
	nodes             *nodesSummary
	allocated         corev1.ResourceList
	hasAllocated      bool
	apiEnablements    []fedv1b1.APIEnablement
	hasAPIEnablements bool
}

// nodesSummary is what the status says about a member's Nodes.
type nodesSummary struct {
	zones       []string
	region      *string
	count       fedv1b1.NodeSummary
	allocatable corev1.ResourceList
}

// applyTo writes the collected fields into st.
func (s summary) applyTo(st *fedv1b1.KubeFedClusterStatus) {
	if s.kubernetesVersion != "" {
		st.KubernetesVersion = s.kubernetesVersion
	}
	if s.nodes != nil {
		st.Zones = s.nodes.zones
		st.Region = s.nodes.region
		count := s.nodes.count
		st.NodeSummary = &count
	}
	if s.nodes != nil || s.hasAllocated {
		rs := &fedv1b1.ResourceSummary{}
		if st.ResourceSummary != nil {
			rs = st.ResourceSummary.DeepCopy()
		}
		if s.nodes != nil {
			rs.Allocatable = s.nodes.allocatable
		}
		if s.hasAllocated {
			rs.Allocated = s.allocated
		}
		st.ResourceSummary = rs
	}
	if s.hasAPIEnablements {
		st.APIEnablements = s.apiEnablements
	}
}

// summarizeNodes counts nodes, sums their allocatable resources and gathers
// their topology. The region is set only when every node that names one
// names the same, as a member spanning regions has no single region.
func summarizeNodes(nodes []corev1.Node) nodesSummary {
	var s nodesSummary
	zones := map[string]bool{}
	regions := map[string]bool{}
	allocatable := corev1.ResourceList{}
	for i := range nodes {
		n := &nodes[i]
		s.count.TotalNum++
		if nodeReady(n) {
			s.count.ReadyNum++
		}
		addResources(allocatable, n.Status.Allocatable)
		if z := topologyLabel(n.Labels, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone); z != "" {
			zones[z] = true
		}
		if r := topologyLabel(n.Labels, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion); r != "" {
			regions[r] = true
		}
	}
	for z := range zones {
		s.zones = append(s.zones, z)
	}
	sort.Strings(s.zones)
	if len(regions) == 1 {
		for r := range regions {
			s.region = &r
		}
	}
	if len(allocatable) > 0 {
		s.allocatable = allocatable
	}
	return s
}

// topologyLabel prefers the GA label and falls back to the beta one that
// older members still set.
func topologyLabel(labels map[string]string, ga, beta string) string {
	if v := labels[ga]; v != "" {
		return v
	}
	return labels[beta]
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// sumPodRequests sums the requests of the pods bound to a node that have not
// terminated, which is what the scheduler counts against allocatable.
func sumPodRequests(pods []corev1.Pod) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		addResources(total, podRequests(p))
	}
	return total
}

// podRequests is the pod's effective request as the scheduler sees it: the
// app containers and restartable init containers (sidecars) run together,
// the other init containers one at a time beside the sidecars started before
// them, so the request is the larger of the two phases, plus the pod
// overhead. Pod-level requests replace the container sums they name.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	running := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addResources(running, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(sidecars, c.Resources.Requests)
			maxResources(initPeak, sidecars)
			continue
		}
		phase := sidecars.DeepCopy()
		addResources(phase, c.Resources.Requests)
		maxResources(initPeak, phase)
	}
	addResources(running, sidecars)
	maxResources(running, initPeak)
	if p.Spec.Resources != nil {
		for name, q := range p.Spec.Resources.Requests {
			running[name] = q.DeepCopy()
		}
	}
	addResources(running, p.Spec.Overhead)
	return running
}

func addResources(total, add corev1.ResourceList) {
	for name, q := range add {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

func maxResources(total, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
			total[name] = q.DeepCopy()
		}
	}
}

// apiEnablements turns discovery's resource lists into the status form,
// sorted so that an unchanged member yields an unchanged status. Previous
// entries of group versions whose discovery failed are kept, so that a
// flaky aggregated API does not make propagation believe it vanished.
func apiEnablements(lists []*metav1.APIResourceList, failed []string, previous []fedv1b1.APIEnablement) []fedv1b1.APIEnablement {
	byGV := map[string]fedv1b1.APIEnablement{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		var resources []fedv1b1.APIResourceName
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // subresources are not propagated
			}
			resources = append(resources, fedv1b1.APIResourceName{Name: r.Name, Kind: r.Kind})
		}
		if len(resources) == 0 {
			continue
		}
		sort.Slice(resources, func(i, j int) bool { return resources[i].Name < resources[j].Name })
		byGV[l.GroupVersion] = fedv1b1.APIEnablement{GroupVersion: l.GroupVersion, Resources: resources}
	}
	for _, p := range previous {
		if _, ok := byGV[p.GroupVersion]; !ok && slices.Contains(failed, p.GroupVersion) {
			byGV[p.GroupVersion] = *p.DeepCopy()
		}
	}
	out := make([]fedv1b1.APIEnablement, 0, len(byGV))
	for _, e := range byGV {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupVersion < out[j].GroupVersion })
	return out
}
