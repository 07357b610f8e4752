package main

import (
	"context"
	"fmt"
	"net/url"
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

// isolationWaves runs the three isolation waves of -isolation-n objects of
// each resource, created as fast as the load generator goes.
func (r *runner) isolationWaves(ctx context.Context) error {
	if len(r.env.members) < 2 {
		logf("  isolation needs 2 members or more; skipped")
		return nil
	}
	odd := r.env.members[len(r.env.members)-1]
	healthy := func(it item, c string) (string, bool) {
		return wantState(it.r, version{}, c), c != hostName && c != odd.name
	}
	run := func(scenario, prefix string, around func(body func() error) error) error {
		items := waveItems(prefix, r.o.isolationN)
		clusters := r.env.memberNames()
		res := r.newResult(scenario, len(items), 0)
		res.Clusters = len(clusters) - 1
		return r.measured(ctx, res, func() error {
			return around(func() error {
				return r.wave(ctx, res, items, 0, healthy, r.creator(clusters))
			})
		})
	}
	if err := run(scenarioIsolationBase, "ib", func(body func() error) error { return body() }); err != nil {
		return err
	}

	proxyTarget, err := url.Parse(odd.cfg.Host)
	if err != nil {
		return err
	}
	proxy, err := framework.StartDelayProxy(proxyTarget.Host, slowDelay)
	if err != nil {
		return err
	}
	defer proxy.Close()
	err = run(scenarioIsolationSlow, "is", func(body func() error) error {
		original, err := r.setEndpoint(ctx, odd.name, "https://"+proxy.Addr())
		if err != nil {
			return err
		}
		defer func() { _, _ = r.setEndpoint(context.WithoutCancel(ctx), odd.name, original) }()
		// The member's clients and caches move to the proxy; writes through
		// it have begun once a copy placed there alone shows up.
		if err := r.probeThrough(ctx, odd.name); err != nil {
			return err
		}
		logf("  %s answers through a proxy adding %s to every request", odd.name, slowDelay)
		return body()
	})
	if err != nil {
		return err
	}

	err = run(scenarioIsolationHung, "ih", func(body func() error) error {
		if err := odd.local.PauseAPIServer(); err != nil {
			return err
		}
		logf("  %s's kube-apiserver stopped with SIGSTOP", odd.name)
		bodyErr := body()
		if err := odd.local.ResumeAPIServer(); err != nil {
			return err
		}
		return bodyErr
	})
	if err != nil {
		return err
	}
	r.isolationRatios()
	return nil
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

// probeThrough creates a federated ConfigMap placed on member alone and
// waits until the member has it.
func (r *runner) probeThrough(ctx context.Context, member string) error {
	var probe resource
	for _, rs := range resources {
		if rs.name == "configmaps" {
			probe = rs
		}
	}
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

// isolationRatios adds the isolation scenarios' ratios to the healthy wave:
// throughput, and p99 as healthy p99 over isolated p99, both 1 when the odd
// member makes no difference.
func (r *runner) isolationRatios() {
	base := r.report.find(scenarioIsolationBase)
	if base == nil || base.Throughput == 0 || base.PerCluster == nil {
		return
	}
	for _, s := range []struct{ scenario, name string }{{scenarioIsolationSlow, "isolation-slow"}, {scenarioIsolationHung, "isolation-hung"}} {
		res := r.report.find(s.scenario)
		if res == nil || res.PerCluster == nil || res.PerCluster.P99 == 0 {
			continue
		}
		r.report.Ratios = append(r.report.Ratios,
			ratio{Name: s.name + "-throughput", Value: res.Throughput / base.Throughput},
			ratio{Name: s.name + "-p99", Value: base.PerCluster.P99 / res.PerCluster.P99})
	}
}
