package cluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

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
	switch health := lease.Annotations[AgentHealthAnnotation]; health {
	case "ok":
		return observation{health: HealthReady}, nil
	case "":
		return observation{health: HealthNotReady, message: fmt.Sprintf("the agent's Lease %s says nothing of its cluster's health", key.Name)}, nil
	default:
		return observation{health: HealthNotReady, message: "the agent reports: " + health}, nil
	}
}
