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

// Bounds of a PendingReport, which rides on every heartbeat (a Lease's
// annotations hold 256 KiB at most, and the health and summary must fit
// beside it): a member with more unschedulable pods reports the longest
// pending that fit, and says it left some out.
const (
	maxPendingGroups = 500
	maxPendingPods   = 5000
	maxPendingBytes  = 64 << 10
)

// PendingReport is what a member's agent reports of its unschedulable
// pods: grouped by namespace and labels (a workload's pods share theirs),
// each pod by when it became unschedulable, by the member's clock as the
// pod's condition says, exactly what PendingPods reads of a push member.
type PendingReport struct {
	Groups []PendingGroup `json:"groups,omitempty"`
	// Truncated says that pods beyond the report's bounds were left out.
	// The host then knows only the namespaces the report names: the others
	// are unknown, and their capacity is not limited.
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
	// The longest pending first, as they limit capacity first; the same
	// pods give the same report, so that the Lease changes only when they
	// do.
	sort.Slice(ordered, func(i, j int) bool {
		a, b := ordered[i].group.Since[0], ordered[j].group.Since[0]
		if a != b {
			return a < b
		}
		return ordered[i].key < ordered[j].key
	})
	var out PendingReport
	pods, size := 0, 0
	for _, e := range ordered {
		g := *e.group
		if room := maxPendingPods - pods; len(g.Since) > room {
			g.Since, out.Truncated = g.Since[:room], true
		}
		raw, _ := json.Marshal(g)
		if len(out.Groups) == maxPendingGroups || len(g.Since) == 0 || size+len(raw)+1 > maxPendingBytes {
			out.Truncated = true
			break
		}
		pods, size = pods+len(g.Since), size+len(raw)+1
		out.Groups = append(out.Groups, g)
	}
	// Sorted by namespace and labels, for readers of the annotation.
	sort.SliceStable(out.Groups, func(i, j int) bool {
		a, b := out.Groups[i], out.Groups[j]
		return a.Namespace+"\x00"+labels.Set(a.Labels).String() < b.Namespace+"\x00"+labels.Set(b.Labels).String()
	})
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
	truncated   map[string]bool
	subscribers subscribers
}

// NewAgentPods returns an empty AgentPods.
func NewAgentPods() *AgentPods {
	return &AgentPods{
		reports:   map[string]map[string][]PendingGroup{},
		raw:       map[string]string{},
		truncated: map[string]bool{},
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
	var next map[string][]PendingGroup
	var report PendingReport
	if raw != "" && json.Unmarshal([]byte(raw), &report) == nil {
		next = map[string][]PendingGroup{}
		for _, g := range report.Groups {
			next[g.Namespace] = append(next[g.Namespace], g)
		}
	}
	a.set(clusterName, next, raw, report.Truncated)
}

// Forget makes a cluster unknown: it is gone, or in push mode, and what its
// agent reported no longer holds.
func (a *AgentPods) Forget(clusterName string) {
	a.mu.Lock()
	if _, ok := a.reports[clusterName]; !ok {
		a.mu.Unlock()
		return
	}
	a.set(clusterName, nil, "", false)
}

// set replaces a cluster's report, nil for none, with a.mu held, which it
// releases before it tells subscribers of the namespaces that changed.
func (a *AgentPods) set(clusterName string, next map[string][]PendingGroup, raw string, truncated bool) {
	old, wasTruncated := a.reports[clusterName], a.truncated[clusterName]
	if next == nil {
		delete(a.reports, clusterName)
		delete(a.raw, clusterName)
		delete(a.truncated, clusterName)
	} else {
		a.reports[clusterName], a.raw[clusterName], a.truncated[clusterName] = next, raw, truncated
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
	if truncated != wasTruncated {
		// Namespaces the report does not name turned known or unknown.
		changed[""] = true
	}
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
	if _, named := report[namespace]; !named && a.truncated[clusterName] {
		// Left out of a truncated report: not known to have none.
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
