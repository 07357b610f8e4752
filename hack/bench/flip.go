package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// Readiness-flip scenarios: the last member holds -flip-n objects of its
// own; a fixed-rate wave to the other members runs as it is and while that
// member turns NotReady and Ready again (which re-plans every one of its
// objects and rewrites their status twice), -flip-pairs times each.
const (
	scenarioFlipLoad    = "flip: load the flipping member"
	scenarioFlipBase    = "flip: without"
	scenarioFlipFlipped = "flip: member flips"
)

// Ways the flip scenario makes the member NotReady.
const (
	flipRestart = "restart"
	flipPause   = "pause"
	// flipHold reaches the member through a proxy that holds everything
	// for the flip: to the control plane the member hangs as when paused,
	// but its processes go on running, so that their stop and resumption
	// do not compete for this one machine as a remote member's would not.
	flipHold = "hold"
)

func (r *runner) flipWaves(ctx context.Context) error {
	if len(r.env.members) < 2 {
		logf("  flip needs 2 members or more; skipped")
		return nil
	}
	odd := r.env.members[len(r.env.members)-1]
	var others []string
	for _, m := range r.env.members[:len(r.env.members)-1] {
		others = append(others, m.name)
	}
	var proxy *framework.DelayProxy
	if r.o.flipMode == flipHold {
		var err error
		if proxy, err = startProxy(odd, 0); err != nil {
			return err
		}
		defer proxy.Close()
		restore, err := r.throughProxy(ctx, odd.name, proxy)
		if err != nil {
			return err
		}
		defer restore()
		logf("  %s reached through a proxy that the flip holds", odd.name)
	}
	// -flip-n objects in all, half of each resource, on the odd member only.
	loadItems := waveItems("fl", r.o.flipN/len(resources))
	load := r.newResult(scenarioFlipLoad, len(loadItems), 0)
	load.Clusters = 1
	if err := r.federatedWave(ctx, load, loadItems, 0,
		func(it item, c string) (string, bool) { return wantState(it.r, version{}, c), c == odd.name },
		r.creator([]string{odd.name})); err != nil {
		return err
	}
	toOthers := func(it item, c string) (string, bool) {
		return wantState(it.r, version{}, c), c != hostName && c != odd.name
	}
	wave := func(scenario, prefix string, around func(body func() error) error) (*result, error) {
		items := waveItems(prefix, r.o.isolationN)
		res := r.newResult(scenario, len(items), r.o.rate)
		res.Clusters = len(others)
		return res, r.measured(ctx, res, func() error {
			return around(func() error { return r.wave(ctx, res, items, r.o.rate, toOthers, r.creator(others)) })
		})
	}
	flip := func(body func() error) error {
		// NotReady just before the wave, Ready again during it: stopped
		// and started again (its apiserver and our informers reload every
		// object), or hung with SIGSTOP and continued (the same flip for
		// the control plane, without the member's own restart competing
		// for the machine).
		stop, start := odd.local.StopAPIServer, func() error { return odd.local.StartAPIServer(ctx) }
		switch r.o.flipMode {
		case flipPause:
			stop, start = odd.local.PauseAPIServer, odd.local.ResumeAPIServer
		case flipHold:
			stop = func() error { proxy.SetHeld(true); return nil }
			start = func() error { proxy.SetHeld(false); return nil }
		}
		if err := stop(); err != nil {
			return err
		}
		if err := r.env.waitReadiness(ctx, odd.name, false); err != nil {
			return err
		}
		down := time.Now()
		logf("  %s NotReady with %d objects (%s)", odd.name, len(loadItems), r.o.flipMode)
		// The wave begins; -flip-down later the member is reachable again.
		done := make(chan error, 1)
		go func() { done <- body() }()
		if r.o.flipDown > 0 {
			select {
			case <-time.After(r.o.flipDown):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := start(); err != nil {
			return err
		}
		if err := r.env.waitReadiness(ctx, odd.name, true); err != nil {
			return err
		}
		logf("  %s Ready again during the wave, NotReady for %.1fs", odd.name, time.Since(down).Seconds())
		return <-done
	}
	// Pairs of waves, alternated so that both see the machine alike.
	var baseP99, flippedP99 []float64
	for i := range r.o.flipPairs {
		suffix, prefix := "", ""
		if i > 0 {
			suffix, prefix = fmt.Sprintf(" #%d", i+1), strconv.Itoa(i+1)
		}
		base, err := wave(scenarioFlipBase+suffix, "fb"+prefix, func(body func() error) error { return body() })
		if err != nil {
			return err
		}
		flipped, err := wave(scenarioFlipFlipped+suffix, "ff"+prefix, flip)
		if err != nil {
			return err
		}
		if base.PerCluster != nil && flipped.PerCluster != nil && flipped.PerCluster.P99 > 0 {
			baseP99 = append(baseP99, base.PerCluster.P99)
			flippedP99 = append(flippedP99, flipped.PerCluster.P99)
		}
	}
	if len(baseP99) == r.o.flipPairs {
		name := "readiness-flip-p99"
		switch r.o.flipMode {
		case flipPause:
			name += "-paused"
		case flipHold:
			name += "-held"
		}
		b, f := median(baseP99), median(flippedP99)
		if r.o.flipPairs > 1 {
			logf("  p99 without the flip %v ms, with it %v ms: medians %.0f and %.0f", baseP99, flippedP99, b, f)
		}
		r.report.Ratios = append(r.report.Ratios, ratio{Name: name, Value: b / f})
	}
	return nil
}

// median is the middle of values (the mean of the middle two when even).
func median(values []float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// memberReady reports whether a member's KubeFedCluster is Ready.
func (e *env) memberReady(ctx context.Context, name string) (bool, error) {
	kfc := &corev1beta1.KubeFedCluster{}
	if err := e.host.client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, kfc); err != nil {
		return false, err
	}
	return kfc.IsReady(), nil
}

// waitReadiness waits until a member's readiness is ready.
func (e *env) waitReadiness(ctx context.Context, name string, ready bool) error {
	return waitFor(ctx, fmt.Sprintf("%s Ready=%t", name, ready), 2*time.Minute, func() (bool, error) {
		got, err := e.memberReady(ctx, name)
		return err == nil && got == ready, err
	})
}
