package scheduling

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

// AgentPendingAnnotation on a Pull-mode member's heartbeat Lease holds, as
// JSON (PendingReport), the member's unschedulable pods as its agent's
// informer sees them. The host cannot read a pull member's pods; this is
// how the capacity estimate of a ReplicaSchedulingPreference with
// rebalance reaches it. No annotation: the agent does not know yet (or is
// older), and the member's capacity is not limited, as for a push member
// whose pods are not listed yet.
const AgentPendingAnnotation = "kubefed.io/agent-unschedulable"

// Bounds of a PendingReport, which rides on every heartbeat: a member with
// more unschedulable pods reports these many, and says it left some out.
const (
	maxPendingGroups = 500
	maxPendingPods   = 5000
)

// PendingReport is what a member's agent reports of its unschedulable
// pods: grouped by namespace and labels (a workload's pods share theirs),
// each pod by when it became unschedulable, by the member's clock as the
// pod's condition says, exactly what PendingPods reads of a push member.
type PendingReport struct {
	Groups []PendingGroup `json:"groups,omitempty"`
	// Truncated says that pods beyond the report's bounds were left out;
	// they do not limit their cluster's capacity.
	Truncated bool `json:"truncated,omitempty"`
}

// PendingGroup is the unschedulable pods of one namespace with one set of
// labels.
type PendingGroup struct {
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Since holds, per pod, since when it is unschedulable in Unix seconds,
	// ascending.
	Since []int64 `json:"since"`
}

// Report returns the unschedulable pods of a cluster, for its agent to
// send with its heartbeat; ok is false until the cluster's pods are known.
func (p *PendingPods) Report(clusterName string) (PendingReport, bool) {
	informer := p.informerFor(clusterName)
	if informer == nil || !informer.HasSynced() {
		return PendingReport{}, false
	}
	return pendingReport(informer.GetStore().List()), true
}

func pendingReport(objs []any) PendingReport {
	type entry struct {
		key   string
		group *PendingGroup
	}
	groups := map[string]*PendingGroup{}
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		since, ok := unschedulableSince(pod)
		if !ok {
			continue
		}
		key := pod.Namespace + "\x00" + labels.Set(pod.Labels).String()
		g := groups[key]
		if g == nil {
			g = &PendingGroup{Namespace: pod.Namespace, Labels: maps.Clone(pod.Labels)}
			groups[key] = g
		}
		g.Since = append(g.Since, since.Unix())
	}
	ordered := make([]entry, 0, len(groups))
	for k, g := range groups {
		slices.Sort(g.Since)
		ordered = append(ordered, entry{k, g})
	}
	// The same pods give the same report, so that the Lease changes only
	// when they do.
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].key < ordered[j].key })
	var out PendingReport
	pods := 0
	for _, e := range ordered {
		if len(out.Groups) == maxPendingGroups || pods == maxPendingPods {
			out.Truncated = true
			break
		}
		g := *e.group
		if room := maxPendingPods - pods; len(g.Since) > room {
			// The longest pending are the ones that limit capacity first.
			g.Since, out.Truncated = g.Since[:room], true
		}
		pods += len(g.Since)
		out.Groups = append(out.Groups, g)
	}
	return out
}

// EncodePendingReport is the annotation value of a report.
func EncodePendingReport(r PendingReport) string {
	raw, err := json.Marshal(r)
	if err != nil {
		// Strings, maps of strings and integers always marshal.
		return ""
	}
	return string(raw)
}

// AgentPods is the CapacityEstimator of Pull-mode members: it holds what
// their agents last reported of their unschedulable pods with their
// heartbeats (AgentPendingAnnotation), which the KubeFedCluster controller
// hands it as it reads them (cluster.HeartbeatListener).
type AgentPods struct {
	mu          sync.Mutex
	reports     map[string]map[string][]PendingGroup // cluster → namespace → groups
	raw         map[string]string
	subscribers subscribers
}

// NewAgentPods returns an empty AgentPods.
func NewAgentPods() *AgentPods {
	return &AgentPods{
		reports: map[string]map[string][]PendingGroup{},
		raw:     map[string]string{},
	}
}

// Heartbeat takes the report that comes with a heartbeat of cluster's
// agent, and tells subscribers of the namespaces whose pods it changed. A
// heartbeat without a (readable) report makes the cluster unknown again.
func (a *AgentPods) Heartbeat(clusterName string, lease *coordinationv1.Lease) {
	raw := lease.Annotations[AgentPendingAnnotation]
	a.mu.Lock()
	if prev, ok := a.raw[clusterName]; ok && prev == raw {
		a.mu.Unlock()
		return
	}
	old := a.reports[clusterName]
	var next map[string][]PendingGroup
	var report PendingReport
	if raw != "" && json.Unmarshal([]byte(raw), &report) == nil {
		next = map[string][]PendingGroup{}
		for _, g := range report.Groups {
			next[g.Namespace] = append(next[g.Namespace], g)
		}
	}
	if next == nil {
		delete(a.reports, clusterName)
		delete(a.raw, clusterName)
	} else {
		a.reports[clusterName] = next
		a.raw[clusterName] = raw
	}
	changed := map[string]bool{}
	for ns, groups := range old {
		if !groupsEqual(groups, next[ns]) {
			changed[ns] = true
		}
	}
	for ns := range next {
		if _, ok := old[ns]; !ok {
			changed[ns] = true
		}
	}
	a.mu.Unlock()
	for ns := range changed {
		a.subscribers.notify(clusterName, ns)
	}
}

func groupsEqual(a, b []PendingGroup) bool {
	return slices.EqualFunc(a, b, func(x, y PendingGroup) bool {
		return x.Namespace == y.Namespace && maps.Equal(x.Labels, y.Labels) && slices.Equal(x.Since, y.Since)
	})
}

// UnschedulableSince implements CapacityEstimator from the cluster's last
// report.
func (a *AgentPods) UnschedulableSince(clusterName, namespace string, selector labels.Selector) ([]time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	report, ok := a.reports[clusterName]
	if !ok {
		return nil, false
	}
	var out []time.Time
	for _, g := range report[namespace] {
		if !selector.Matches(labels.Set(g.Labels)) {
			continue
		}
		for _, s := range g.Since {
			out = append(out, time.Unix(s, 0))
		}
	}
	return out, true
}

// Subscribe implements CapacityEstimator.
func (a *AgentPods) Subscribe(notify func(cluster, namespace string)) func() {
	return a.subscribers.add(notify)
}

// memberPods estimates a member's capacity from its pods where the control
// plane holds its clients (push), and from its agent's reports where it
// does not (pull).
type memberPods struct {
	registry *clusterclient.Registry
	push     CapacityEstimator
	pull     CapacityEstimator
}

func (m memberPods) UnschedulableSince(clusterName, namespace string, selector labels.Selector) ([]time.Time, bool) {
	if _, ok := m.registry.Get(clusterName); ok {
		return m.push.UnschedulableSince(clusterName, namespace, selector)
	}
	return m.pull.UnschedulableSince(clusterName, namespace, selector)
}

func (m memberPods) Subscribe(notify func(cluster, namespace string)) func() {
	a, b := m.push.Subscribe(notify), m.pull.Subscribe(notify)
	return func() { a(); b() }
}
