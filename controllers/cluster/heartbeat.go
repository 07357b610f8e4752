package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// AgentHealthAnnotation on an agent's heartbeat Lease is what the agent's
// own probe of its member's /readyz answered: "ok", or what went wrong.
const AgentHealthAnnotation = "kubefed.io/agent-health"

// observeAgent judges a Pull-mode member by its agent's heartbeat: the
// Lease kubefed-agent-<cluster> in the KubeFed namespace, which the agent
// renews every Period while it reaches the host. The host never connects
// to the member. A Lease that changed within Period+Timeout is the agent's
// answer, healthy when its own probe said ok; one unchanged for longer, or
// missing, is the member out of reach, with the same conditions as a push
// member that does not answer.
//
// Whether the Lease changed is judged by its resourceVersion and this
// controller's own clock, as client-go's leader election does: the
// renewTime the agent writes comes from the member's clock, which may be
// skewed either way.
//
// A Lease this worker has not seen before, after a restart of the
// controller-manager or at a join, tells nothing of when it was last
// renewed: it gives no verdict, and the reported conditions stand until it
// changes (a fresh verdict, one agent period later) or stays unchanged for
// the window (Offline). Judging it renewed would report an agent dead for
// hours Ready until the window passed. A member joining has no conditions
// yet and keeps none for that period rather than being reported Offline and
// then Ready a moment later; once the Lease changes, its first verdict
// applies at once, as any first observation does. A Lease created after this
// worker saw there was none was renewed just now and counts at once.
func (w *worker) observeAgent(ctx context.Context, cluster *fedv1b1.KubeFedCluster) (observation, error) {
	r := w.r
	var lease coordinationv1.Lease
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: fedv1b1.AgentLeaseName(cluster.Name)}
	if err := r.apiReader.Get(ctx, key, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			w.heartbeatObserved, w.heartbeatVersion = true, ""
			return observation{health: HealthOffline, message: fmt.Sprintf("%s: no heartbeat from its agent yet (Lease %s); is `controller-manager agent` running in the member?", msgNotReachable, key.Name)}, nil
		}
		return observation{}, fmt.Errorf("reading the agent's Lease %s: %w", key, err)
	}
	now := r.now()
	if !w.heartbeatObserved || lease.ResourceVersion != w.heartbeatVersion {
		w.heartbeatChanged = w.heartbeatObserved
		w.heartbeatObserved, w.heartbeatVersion, w.heartbeatSeen = true, lease.ResourceVersion, now
	}
	window := r.opts.Period + r.opts.Timeout
	if now.Sub(w.heartbeatSeen) > window {
		renewed := "never"
		if lease.Spec.RenewTime != nil {
			renewed = lease.Spec.RenewTime.UTC().Format(time.RFC3339) + " by its own clock"
		}
		// No age in the message: it would change every probe, and with
		// it the status, an event and a log line.
		return observation{health: HealthOffline, message: fmt.Sprintf("%s: its agent's Lease %s has not been renewed for more than %s (last renewed %s)",
			msgNotReachable, key.Name, window, renewed)}, nil
	}
	if !w.heartbeatChanged {
		return observation{noVerdict: true}, nil
	}
	r.heartbeat(w, &lease)
	switch health := lease.Annotations[AgentHealthAnnotation]; health {
	case "ok":
		return observation{health: HealthReady, agentSummary: agentSummary(&lease)}, nil
	case "":
		return observation{health: HealthNotReady, message: fmt.Sprintf("the agent's Lease %s says nothing of its cluster's health", key.Name)}, nil
	default:
		return observation{health: HealthNotReady, message: "the agent reports: " + truncate(health, maxBodyInMessage)}, nil
	}
}

// HeartbeatListener hears the heartbeats of Pull-mode members' agents: the
// Lease as read, once per probe period while it is fresh. Heartbeat must
// return quickly and must not keep or change the Lease; it is called, as
// Forget is, with the Reconciler's lock held, so neither may call the
// Reconciler. Forget says a
// cluster has no agent any more (it is gone or in push mode), so that
// nothing it reported earlier stays in use.
type HeartbeatListener interface {
	Heartbeat(cluster string, lease *coordinationv1.Lease)
	Forget(cluster string)
}

// AgentSummaryAnnotation on an agent's heartbeat Lease holds, as JSON, what
// the agent read of its cluster the way the control plane reads a push
// member (CollectAgentSummary): version, nodes, zones, region, resources
// and the APIs it serves.
// The control plane copies it into the KubeFedCluster's status.
const AgentSummaryAnnotation = "kubefed.io/agent-summary"

// AgentSummary is the JSON of AgentSummaryAnnotation, refreshed by the
// agent once a SummaryPeriod and sent with every renewal.
type AgentSummary struct {
	KubernetesVersion string               `json:"kubernetesVersion,omitempty"`
	Nodes             *fedv1b1.NodeSummary `json:"nodes,omitempty"`
	Zones             []string             `json:"zones,omitempty"`
	Region            *string              `json:"region,omitempty"`
	Allocatable       corev1.ResourceList  `json:"allocatable,omitempty"`
	Allocated         corev1.ResourceList  `json:"allocated,omitempty"`
	// APIEnablements are what the member serves, as status.apiEnablements
	// lists them for a push member; absent when discovery failed.
	APIEnablements []fedv1b1.APIEnablement `json:"apiEnablements,omitempty"`
}

// CollectAgentSummary reads an agent's own cluster as the control plane
// reads a push member; what fails is left out and reported in the error.
// previous are the API enablements of the last summary: those of group
// versions whose discovery failed are kept, as for a push member.
func CollectAgentSummary(ctx context.Context, kube kubernetes.Interface, disc discovery.DiscoveryInterface, previous []fedv1b1.APIEnablement) (AgentSummary, error) {
	s, err := collectSummary(ctx, kube, disc, previous)
	out := AgentSummary{KubernetesVersion: s.kubernetesVersion}
	if s.nodes != nil {
		count := s.nodes.count
		out.Nodes, out.Zones, out.Region, out.Allocatable = &count, s.nodes.zones, s.nodes.region, s.nodes.allocatable
	}
	if s.hasAllocated {
		out.Allocated = s.allocated
	}
	if s.hasAPIEnablements {
		out.APIEnablements = s.apiEnablements
	}
	return out, err
}

// agentSummary reads a heartbeat's summary, nil when it has none or it
// cannot be read.
func agentSummary(lease *coordinationv1.Lease) *summary {
	raw := lease.Annotations[AgentSummaryAnnotation]
	if raw == "" {
		return nil
	}
	var a AgentSummary
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return nil
	}
	s := &summary{kubernetesVersion: a.KubernetesVersion}
	if a.Nodes != nil {
		s.nodes = &nodesSummary{count: *a.Nodes, zones: a.Zones, region: a.Region, allocatable: a.Allocatable}
	}
	if a.Allocated != nil {
		s.allocated, s.hasAllocated = a.Allocated, true
	}
	if a.APIEnablements != nil {
		s.apiEnablements, s.hasAPIEnablements = a.APIEnablements, true
	}
	return s
}
