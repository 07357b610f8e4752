package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubefed-io/kubefed/pkg/kubefedctl"
	"github.com/kubefed-io/kubefed/test/framework"
)

// Pull-mode scenarios: a wave with every member in push mode, then the
// same wave with the last member joined in pull mode, its agent running as
// a local process (as it would in the member). What counts is the pull
// member's throughput and p99 beside the push members' and the limit's,
// and what pull mode adds to the host's writes per federated object.
const (
	scenarioPullBase  = "pull: all push"
	scenarioPullMixed = "pull: last member pulled"
)

func (r *runner) pullWaves(ctx context.Context) error {
	if len(r.env.members) < 2 {
		logf("  pull needs 2 members or more; skipped")
		return nil
	}
	odd := r.env.members[len(r.env.members)-1]
	clusters := r.env.memberNames()
	wave := func(scenario, prefix string) error {
		items := waveItems(prefix, r.o.isolationN)
		res := r.newResult(scenario, len(items), 0)
		return r.federatedWave(ctx, res, items, 0,
			func(it item, c string) (string, bool) { return wantState(it.r, version{}, c), c != hostName },
			r.creator(clusters))
	}
	if err := wave(scenarioPullBase, "pa"); err != nil {
		return err
	}

	// The last member in pull mode: join creates the agent's host account
	// and its kubeconfig in the member and removes the host's credential.
	if err := r.env.kubefedctl(ctx, "join", odd.name, "--mode", "pull", "--install-agent=false", "--error-on-existing=false",
		"--cluster-context", odd.name, "--host-cluster-context", r.env.host.name); err != nil {
		return err
	}
	secret, err := odd.kube.CoreV1().Secrets(kubefedNS).Get(ctx, kubefedctl.AgentHostSecret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the agent's host kubeconfig in %s: %w", odd.name, err)
	}
	dir := filepath.Join(r.env.workDir, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hostKC := filepath.Join(dir, "host.kubeconfig")
	if err := os.WriteFile(hostKC, secret.Data[kubefedctl.AgentHostKubeconfigKey], 0o600); err != nil {
		return err
	}
	agent, err := framework.StartAgent(ctx, r.env.cmBin, r.env.fed.KubeconfigPath, odd.name, dir,
		"--cluster-name", odd.name, "--host-kubeconfig", hostKC, "--identity", "bench-agent")
	if err != nil {
		return err
	}
	logf("  %s in pull mode; agent pid %d, log %s", odd.name, agent.Pid(), agent.LogPath)
	// Its costs are measured beside the controller-manager's, and the bench
	// waits for its queues too.
	r.env.replicas = append(r.env.replicas, agent)
	defer func() {
		r.env.replicas = slices.DeleteFunc(r.env.replicas, func(cm *framework.ControllerManager) bool { return cm == agent })
		_ = agent.Stop()
	}()
	if err := r.env.waitReadiness(ctx, odd.name, true); err != nil {
		return err
	}
	if err := wave(scenarioPullMixed, "pb"); err != nil {
		return err
	}
	r.pullRatios(odd.name)

	// Back to push for the scenarios after this one.
	_ = agent.Stop()
	if err := r.env.kubefedctl(ctx, "join", odd.name, "--error-on-existing=false",
		"--cluster-context", odd.name, "--host-cluster-context", r.env.host.name); err != nil {
		return err
	}
	return r.env.waitReadiness(ctx, odd.name, true)
}

// pullRatios compares the pull member with the push members of the same
// wave (throughput per member, p99 as push p99 over pull p99: 1 when pull
// mode makes no difference), and with the limit's rate per member.
func (r *runner) pullRatios(pulled string) {
	mixed, base := r.report.find(scenarioPullMixed), r.report.find(scenarioPullBase)
	if mixed == nil || mixed.ByCluster[pulled] == nil || mixed.ByCluster[pulled].Latency == nil {
		return
	}
	pull := mixed.ByCluster[pulled]
	var pushRate, pushP99 float64
	pushes := 0
	for c, cr := range mixed.ByCluster {
		if c == pulled || cr.Latency == nil {
			continue
		}
		pushRate += cr.Throughput
		pushP99 = max(pushP99, cr.Latency.P99)
		pushes++
	}
	if pushes == 0 || pushRate == 0 || pull.Latency.P99 == 0 {
		return
	}
	pushRate /= float64(pushes)
	mixed.Notes = append(mixed.Notes,
		fmt.Sprintf("pull member %s: %.0f copies/s, p99 %.0f ms; push members: %.0f copies/s each, p99 %.0f ms", pulled, pull.Throughput, pull.Latency.P99, pushRate, pushP99))
	r.report.Ratios = append(r.report.Ratios,
		ratio{Name: "pull-vs-push-throughput", Value: pull.Throughput / pushRate},
		ratio{Name: "pull-vs-push-p99", Value: pushP99 / pull.Latency.P99})
	if limit := r.report.find(scenarioLimitCreate); limit != nil && limit.Throughput > 0 && limit.Clusters > 0 {
		perMember := limit.Throughput / float64(limit.Clusters)
		mixed.Notes = append(mixed.Notes, fmt.Sprintf("limit: %.0f objects/s per member", perMember))
		r.report.Ratios = append(r.report.Ratios,
			ratio{Name: "pull-throughput", Value: pull.Throughput / perMember},
			ratio{Name: "push-throughput-beside-pull", Value: pushRate / perMember})
	}
	if base != nil && base.HostCost != nil && mixed.HostCost != nil {
		b, m := base.HostCost, mixed.HostCost
		mixed.Notes = append(mixed.Notes, fmt.Sprintf("host writes per object added by pull mode: %+.2f (object %+.2f, status %+.2f, events %+.2f); writes of other resources but Leases: %d (all push: %d)",
			m.PerObject-b.PerObject, m.Spec-b.Spec, m.Status-b.Status, m.Events-b.Events, mixed.HostOther, base.HostOther))
	}
}
