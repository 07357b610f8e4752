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
// skewed either way. A Lease first seen by this process counts as just
// renewed, so after a restart a dead agent is found out one window later.
func (w *worker) observeAgent(ctx context.Context, cluster *fedv1b1.KubeFedCluster) (observation, error) {
	r := w.r
	var lease coordinationv1.Lease
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: fedv1b1.AgentLeaseName(cluster.Name)}
	if err := r.apiReader.Get(ctx, key, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return observation{health: HealthOffline, message: fmt.Sprintf("%s: no heartbeat from its agent yet (Lease %s); is `controller-manager agent` running in the member?", msgNotReachable, key.Name)}, nil
		}
		return observation{}, fmt.Errorf("reading the agent's Lease %s: %w", key, err)
	}
	now := r.now()
	if lease.ResourceVersion != w.heartbeatVersion {
		w.heartbeatVersion, w.heartbeatSeen = lease.ResourceVersion, now
	}
	if age := now.Sub(w.heartbeatSeen); age > r.opts.Period+r.opts.Timeout {
		renewed := "never"
		if lease.Spec.RenewTime != nil {
			renewed = lease.Spec.RenewTime.UTC().Format(time.RFC3339) + " by its own clock"
		}
		return observation{health: HealthOffline, message: fmt.Sprintf("%s: its agent's Lease %s has not changed for %s (last renewed %s)",
			msgNotReachable, key.Name, age.Round(100*time.Millisecond), renewed)}, nil
	}
	if r.Heartbeats != nil {
		r.Heartbeats.Heartbeat(cluster.Name, &lease)
	}
	switch health := lease.Annotations[AgentHealthAnnotation]; health {
	case "ok":
		return observation{health: HealthReady, agentSummary: agentSummary(&lease)}, nil
	case "":
		return observation{health: HealthNotReady, message: fmt.Sprintf("the agent's Lease %s says nothing of its cluster's health", key.Name)}, nil
	default:
		return observation{health: HealthNotReady, message: "the agent reports: " + health}, nil
	}
}

// HeartbeatListener hears the heartbeats of Pull-mode members' agents: the
// Lease as read, once per probe period while it is fresh. Heartbeat must
// return quickly and must not keep or change the Lease. Forget says a
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
