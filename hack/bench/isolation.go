package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// Isolation scenarios: one member is slow or hung while a wave goes to all
// of them; what counts is the other members' throughput and p99, as a
// ratio to a wave in the same run with every member healthy.
const (
	scenarioIsolationBase = "isolation: healthy"
	scenarioIsolationSlow = "isolation: slow"
	scenarioIsolationHung = "isolation: hung"
	// slowDelay is what the delaying proxy adds to every request of the
	// slow member.
	slowDelay = time.Second
)

// isolationWaves runs -isolation-rounds rounds of the three isolation
// waves of -isolation-n objects of each resource, created as fast as the
// load generator goes. One wave's throughput and p99 move with whatever
// else the machine does, and the ratios divide by the healthy wave; with
// more than one round they are of the medians over the rounds.
func (r *runner) isolationWaves(ctx context.Context) error {
	if len(r.env.members) < 2 {
		logf("  isolation needs 2 members or more; skipped")
		return nil
	}
	odd := r.env.members[len(r.env.members)-1]
	healthy := func(it item, c string) (string, bool) {
		return wantState(it.r, version{}, c), c != hostName && c != odd.name
	}
	run := func(scenario, prefix string, around func(body func() error) error) (*result, error) {
		items := waveItems(prefix, r.o.isolationN)
		clusters := r.env.memberNames()
		res := r.newResult(scenario, len(items), 0)
		res.Clusters = len(clusters) - 1
		return res, r.measured(ctx, res, func() error {
			return around(func() error {
				return r.wave(ctx, res, items, 0, healthy, r.creator(clusters))
			})
		})
	}

	proxy, err := startProxy(odd, slowDelay)
	if err != nil {
		return err
	}
	defer proxy.Close()
	slow := func(body func() error) error {
		restore, err := r.throughProxy(ctx, odd.name, proxy)
		if err != nil {
			return err
		}
		defer restore()
		logf("  %s answers through a proxy adding %s to every request", odd.name, slowDelay)
		return body()
	}
	hung := func(body func() error) error {
		if err := odd.local.PauseAPIServer(); err != nil {
			return err
		}
		logf("  %s's kube-apiserver stopped with SIGSTOP", odd.name)
		bodyErr := body()
		if err := odd.local.ResumeAPIServer(); err != nil {
			return err
		}
		return bodyErr
	}
	var rounds []isolationRound
	for i := range r.o.isolationRounds {
		suffix, prefix := "", ""
		if i > 0 {
			suffix, prefix = fmt.Sprintf(" #%d", i+1), strconv.Itoa(i+1)
		}
		var round isolationRound
		var err error
		if round.base, err = run(scenarioIsolationBase+suffix, "ib"+prefix, func(body func() error) error { return body() }); err != nil {
			return err
		}
		if round.slow, err = run(scenarioIsolationSlow+suffix, "is"+prefix, slow); err != nil {
			return err
		}
		if round.hung, err = run(scenarioIsolationHung+suffix, "ih"+prefix, hung); err != nil {
			return err
		}
		rounds = append(rounds, round)
	}
	r.report.Ratios = append(r.report.Ratios, isolationRatios(rounds)...)
	return nil
}

// isolationRound is one healthy, slow and hung wave.
type isolationRound struct{ base, slow, hung *result }

// isolationRatios are the isolated waves' ratios to the healthy ones:
// throughput, and p99 as healthy p99 over isolated p99, both 1 when the odd
// member makes no difference; each of the medians over the rounds (of one
// round, its own values). A round with a wave that measured nothing is left
// out.
func isolationRatios(rounds []isolationRound) []ratio {
	measured := func(res *result) bool {
		return res != nil && res.Throughput > 0 && res.PerCluster != nil && res.PerCluster.P99 > 0
	}
	var out []ratio
	for _, s := range []struct {
		name string
		wave func(isolationRound) *result
	}{{"isolation-slow", func(r isolationRound) *result { return r.slow }}, {"isolation-hung", func(r isolationRound) *result { return r.hung }}} {
		var baseTput, baseP99, tput, p99 []float64
		for _, round := range rounds {
			res := s.wave(round)
			if !measured(round.base) || !measured(res) {
				continue
			}
			baseTput = append(baseTput, round.base.Throughput)
			baseP99 = append(baseP99, round.base.PerCluster.P99)
			tput = append(tput, res.Throughput)
			p99 = append(p99, res.PerCluster.P99)
		}
		if len(tput) == 0 {
			continue
		}
		if len(rounds) > 1 {
			logf("  %s: throughput %v against %v obj×cl/s, p99 %v against %v ms", s.name, tput, baseTput, p99, baseP99)
		}
		out = append(out,
			ratio{Name: s.name + "-throughput", Value: median(tput) / median(baseTput)},
			ratio{Name: s.name + "-p99", Value: median(baseP99) / median(p99)})
	}
	return out
}

// setEndpoint points a member's KubeFedCluster at endpoint and returns the
// endpoint it had.
func (r *runner) setEndpoint(ctx context.Context, member, endpoint string) (string, error) {
	kfc := &corev1beta1.KubeFedCluster{}
	if err := r.env.host.client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: member}, kfc); err != nil {
		return "", err
	}
	original := kfc.Spec.APIEndpoint
	kfc.Spec.APIEndpoint = endpoint
	return original, r.env.host.client.Update(ctx, kfc)
}

// startProxy starts a delaying proxy to a member's API server.
func startProxy(m *cluster, delay time.Duration) (*framework.DelayProxy, error) {
	target, err := url.Parse(m.cfg.Host)
	if err != nil {
		return nil, err
	}
	return framework.StartDelayProxy(target.Host, delay)
}

// throughProxy points a member's KubeFedCluster at proxy and returns once
// the control plane writes to the member through it (its clients and
// caches move to the proxy; writes have begun once a copy placed there
// alone shows up); restore points it back.
func (r *runner) throughProxy(ctx context.Context, member string, proxy *framework.DelayProxy) (restore func(), err error) {
	original, err := r.setEndpoint(ctx, member, "https://"+proxy.Addr())
	if err != nil {
		return nil, err
	}
	restore = func() { _, _ = r.setEndpoint(context.WithoutCancel(ctx), member, original) }
	if err := r.probeThrough(ctx, member); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// probeThrough creates a federated ConfigMap placed on member alone and
// waits until the member has it.
func (r *runner) probeThrough(ctx context.Context, member string) error {
	probe := configMaps
	name := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	if _, err := r.env.host.dyn.Resource(probe.fedGVR).Namespace(benchNS).
		Create(ctx, federatedObject(probe, name, 0, []string{member}), metav1.CreateOptions{}); err != nil {
		return err
	}
	r.benchHostWrites.Add(1)
	m := r.env.memberByName(member)
	return waitFor(ctx, "a copy through the slow member's proxy", 2*time.Minute, func() (bool, error) {
		_, err := m.dyn.Resource(probe.gvr).Namespace(benchNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil, err
	})
}
