package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/test/framework"
)

// Scale-out scenarios: the same wave with one controller-manager and with
// scaleReplicas of them sharing the members (--scale-out), then a wave
// during which one replica is killed.
const (
	scenarioScaleOne    = "scale-out: 1 replica"
	scenarioScaleMany   = "scale-out: 3 replicas"
	scenarioScaleKilled = "scale-out: replica killed"
	// The updates of the waves' objects: not ratios, their host writes
	// per object compare (with three replicas, one status write per
	// updated object takes every replica's word on the generation).
	scenarioScaleOneUpdate  = "scale-out: update (1 replica)"
	scenarioScaleManyUpdate = "scale-out: update (3 replicas)"
	scaleReplicas           = 3
)

// scaleOutWaves runs the scale-out scenarios; they run last, as they leave
// the replicas in place of the bench's controller-manager.
func (r *runner) scaleOutWaves(ctx context.Context) error {
	n := r.o.scaleN
	if err := r.createWave(ctx, scenarioScaleOne, "so", n, 0); err != nil {
		return err
	}
	if err := r.updateWave(ctx, scenarioScaleOneUpdate, "so", n); err != nil {
		return err
	}
	// The replicas start over the same number of objects as the single
	// one saw, so that their memory compares.
	if err := r.deleteWave(ctx, "scale-out: delete (1 replica)", "so", n); err != nil {
		return err
	}
	if err := r.scaleOut(ctx); err != nil {
		return err
	}
	if err := r.createWave(ctx, scenarioScaleMany, "sm", n, 0); err != nil {
		return err
	}
	if err := r.updateWave(ctx, scenarioScaleManyUpdate, "sm", n); err != nil {
		return err
	}
	// The killed wave too starts over as many objects as the single
	// replica's: its throughput and the survivors' memory compare.
	if err := r.deleteWave(ctx, "scale-out: delete (3 replicas)", "sm", n); err != nil {
		return err
	}
	if err := r.killedWave(ctx, "sk", n); err != nil {
		return err
	}
	r.scaleOutRatios()
	return nil
}

// scaleOut replaces the controller-manager with scaleReplicas replicas
// running --scale-out and waits until every member is fenced by one.
func (r *runner) scaleOut(ctx context.Context) error {
	if err := r.env.cm.Stop(); err != nil {
		return err
	}
	var ids []string
	for i := range scaleReplicas {
		id := "bench-" + strconv.Itoa(i)
		// The -cm-args go to every replica: an address such as
		// --pprof-addr=127.0.0.1:0 gives each its own port.
		args := append([]string{"--scale-out", "--replica-id=" + id}, strings.Fields(r.o.cmArgs)...)
		if r.o.peers {
			args = append(args, "--peer-bind-address=127.0.0.1:0")
		}
		cm, err := framework.StartControllerManager(ctx, r.env.cmBin, r.env.fed.KubeconfigPath, r.env.host.name,
			filepath.Join(r.env.workDir, "controller-manager", id), args...)
		if err != nil {
			return err
		}
		logf("  replica %s pid %d, log %s", id, cm.Pid(), cm.LogPath)
		if i == 0 {
			r.env.cm = cm
			r.cmPID.Store(int64(cm.Pid()))
		} else {
			r.env.replicas = append(r.env.replicas, cm)
		}
		ids = append(ids, id)
	}
	start := time.Now()
	err := waitFor(ctx, "every member fenced by its replica", 2*time.Minute, func() (bool, error) {
		got, err := r.fences(ctx)
		if err != nil {
			return false, err
		}
		want := sharding.Assign(r.env.memberNames(), ids)
		for m, id := range want {
			if got[m] != id {
				return false, fmt.Errorf("member %s fenced by %q, assigned to %s", m, got[m], id)
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	logf("  members split over %d replicas in %.1fs: %v", scaleReplicas, time.Since(start).Seconds(), sharding.Assign(r.env.memberNames(), ids))
	return nil
}

// fences maps each member to the replica holding its fence.
func (r *runner) fences(ctx context.Context) (map[string]string, error) {
	return sharding.FenceHolders(ctx, r.env.host.client, kubefedNS)
}

// killedWave creates a wave and kills the last replica with SIGKILL once
// half of it is sent; it reports when the killed replica's members were
// fenced by the survivors and how many copies were created more than once.
func (r *runner) killedWave(ctx context.Context, prefix string, n int) error {
	items := waveItems(prefix, n)
	victim := r.env.replicas[len(r.env.replicas)-1]
	res := r.newResult(scenarioScaleKilled, len(items), 0)
	before, err := r.env.countCreates(ctx)
	if err != nil {
		return err
	}
	create := r.creator(r.env.memberNames())
	var (
		once              sync.Once
		sent              sync.WaitGroup
		mu                sync.Mutex
		sentCount         int64
		firstSent, killed time.Time
	)
	err = r.federatedWave(ctx, res, items, 0,
		func(it item, c string) (string, bool) { return wantState(it.r, version{}, c), c != hostName },
		func(ctx context.Context, it item) error {
			mu.Lock()
			sentCount++
			if sentCount == 1 {
				firstSent = time.Now()
			}
			half := sentCount == int64(len(items)/2)
			mu.Unlock()
			if half {
				once.Do(func() {
					sent.Add(1)
					go func() {
						defer sent.Done()
						_ = victim.Kill()
						killed = time.Now()
					}()
				})
			}
			return create(ctx, it)
		})
	sent.Wait()
	if err != nil {
		return err
	}
	// The survivors hold every fence by now: the wave converged.
	if f, ferr := r.fences(ctx); ferr == nil {
		var stale []string
		for m, id := range f {
			if id == "bench-"+strconv.Itoa(scaleReplicas-1) || id == "" {
				stale = append(stale, m)
			}
		}
		slices.Sort(stale)
		if len(stale) > 0 {
			res.Notes = append(res.Notes, "members still fenced by the killed replica after the wave: "+strings.Join(stale, ", "))
		}
	}
	after, err := r.env.countCreates(ctx)
	if err != nil {
		return err
	}
	perMember := len(items)
	var dup []string
	total := 0
	for _, m := range r.env.members {
		attempted := int(after[m.name].attempted - before[m.name].attempted)
		refused := int(after[m.name].conflicts - before[m.name].conflicts)
		// A second create of an existing copy is refused as existing. The
		// killed replica's creates in flight may fail without effect or
		// complete as a timeout (504), so attempts may exceed the copies.
		total += refused
		if refused != 0 {
			dup = append(dup, fmt.Sprintf("%s: %d create requests for %d copies, %d refused as existing", m.name, attempted, perMember, refused))
		}
	}
	res.Duplicates = &total
	if len(dup) == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("killed %s mid-wave; no member refused a create as existing (%d copies each)", victim.LogPath, perMember))
	} else {
		res.Notes = append(res.Notes, "copies created more than once or refused: "+strings.Join(dup, "; "))
	}
	if !killed.IsZero() {
		res.Notes = append(res.Notes, fmt.Sprintf("replica killed %.1fs into the wave, which converged %.1fs after the kill",
			killed.Sub(firstSent).Seconds(), res.Seconds-killed.Sub(firstSent).Seconds()))
	}
	return nil
}

// scaleOutRatios adds the scale-out ratios: the peak RSS of the largest
// replica over the single replica's (target at most 0.45), and throughput
// with three replicas, and with one killed, over one replica's.
func (r *runner) scaleOutRatios() {
	one, many, killed := r.report.find(scenarioScaleOne), r.report.find(scenarioScaleMany), r.report.find(scenarioScaleKilled)
	if one == nil || many == nil || one.Throughput == 0 || one.Cost.PeakRSSMiB == 0 {
		return
	}
	peak, anon := 0.0, 0.0
	for _, c := range many.Replicas {
		peak = max(peak, c.PeakRSSMiB)
		anon = max(anon, c.PeakAnonMiB)
	}
	if one.Cost.PeakAnonMiB > 0 {
		// Not a ratio to the limit, which is of the RSS: what of it the
		// replicas' data holds, the binary's pages left out.
		many.Notes = append(many.Notes, fmt.Sprintf("largest replica's anonymous memory %.0f MiB, %.2f× the single replica's %.0f MiB (RSS less the binary's file-backed pages)",
			anon, anon/one.Cost.PeakAnonMiB, one.Cost.PeakAnonMiB))
	}
	r.report.Ratios = append(r.report.Ratios,
		ratio{Name: "scale-out-rss-per-replica", Value: peak / one.Cost.PeakRSSMiB},
		ratio{Name: "scale-out-throughput", Value: many.Throughput / one.Throughput})
	if killed != nil {
		r.report.Ratios = append(r.report.Ratios, ratio{Name: "scale-out-killed-throughput", Value: killed.Throughput / one.Throughput})
	}
}

// creates are a member's create requests for the copies: all of them,
// and those refused because the object existed.
type creates struct{ attempted, conflicts float64 }

// countCreates reads every member's create counters of the copies.
func (e *env) countCreates(ctx context.Context) (map[string]creates, error) {
	kinds := writeKinds{}
	if _, err := e.countWrites(ctx, kinds); err != nil {
		return nil, err
	}
	return kinds.creates(), nil
}
