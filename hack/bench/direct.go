package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

// limitWaves measure the physical limit: the objects the control plane
// writes, written straight into every member by a client with the rate
// limit and timeout the controller-manager's member clients have, with as
// many requests in flight per member as the engine can have (one per
// worker of each type), and observed by the same watches.
func (r *runner) limitWaves(ctx context.Context) error {
	clients := make([]dynamic.Interface, len(r.env.members))
	for i, m := range r.env.members {
		cfg := rest.CopyConfig(m.local.RESTConfig())
		cfg.QPS, cfg.Burst = clusterclient.DefaultQPS, clusterclient.DefaultBurst
		cfg.Timeout = clusterclient.DefaultTimeout
		cfg.UserAgent = "kubefed-bench-direct"
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("direct client for %s: %w", m.name, err)
		}
		clients[i] = dyn
	}
	items := waveItems("x", r.o.n)
	in := func(member int, it item) dynamic.ResourceInterface {
		return clients[member].Resource(it.r.gvr).Namespace(directNS)
	}
	err := r.directWave(ctx, scenarioLimitCreate, items, version{}, func(ctx context.Context, member int, _ obsKey, it item) error {
		_, err := in(member, it).Create(ctx, directObject(it.r, it.name, 0), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	err = r.directWave(ctx, scenarioLimitUpdate, items, version{revision: 1}, func(ctx context.Context, member int, k obsKey, it item) error {
		// Like the engine, write over the version the watch last saw;
		// the members' controllers change the status in between.
		obj := directObject(it.r, it.name, 1)
		obj.SetResourceVersion(r.obs.resourceVersion(k))
		_, err := in(member, it).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return r.directWave(ctx, scenarioLimitDelete, items, version{revision: -1}, func(ctx context.Context, member int, _ obsKey, it item) error {
		return in(member, it).Delete(ctx, it.name, metav1.DeleteOptions{})
	})
}

// directWave writes every item into every member concurrently and waits
// until the watches show each at v (a negative revision: gone).
func (r *runner) directWave(ctx context.Context, scenario string, items []item, v version,
	write func(ctx context.Context, member int, k obsKey, it item) error) error {
	res := r.newResult(scenario, len(items), 0)
	return r.measured(ctx, res, func() error {
		wanted := map[obsKey]string{}
		for _, m := range r.env.members {
			for _, it := range items {
				state := goneMarker
				if v.revision >= 0 {
					state = wantState(it.r, v, m.name)
				}
				wanted[obsKey{cluster: m.name, resource: it.r.name, name: it.name}] = state
			}
		}
		w := newWave(wanted)
		r.obs.begin(w)
		defer r.obs.end()
		// As many writes in flight per member as the engine can have:
		// each member's dispatcher has ClusterWorkers workers for every
		// type, Workers (-sync-workers) unless set.
		perMember := r.o.syncWorkers
		start := time.Now()
		var wg sync.WaitGroup
		failed := make([]int, len(r.env.members))
		for i, m := range r.env.members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, failed[i] = drive(ctx, len(items), 0, perMember, func(j int) error {
					it := items[j]
					k := obsKey{cluster: m.name, resource: it.r.name, name: it.name}
					w.sentAt(k, time.Now())
					err := write(ctx, i, k, it)
					if err != nil {
						w.drop(func(o obsKey) bool { return o == k })
					}
					return err
				})
			}()
		}
		wg.Wait()
		res.SendRate = float64(len(items)*len(r.env.members)) / time.Since(start).Seconds()
		for _, f := range failed {
			res.Errors += f
		}
		if left := w.wait(ctx, r.o.waveTimeout); left > 0 {
			logf("  %d expected effects not seen within %s", left, r.o.waveTimeout)
		}
		fill(res, w, len(r.env.members))
		return ctx.Err()
	})
}
