package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubefed-io/kubefed/test/framework"
)

// Scenario names, as the table and the JSON show them.
const (
	scenarioCreateRate  = "create (rate)"
	scenarioUpdate      = "update"
	scenarioOverride    = "override"
	scenarioIdle        = "steady: idle"
	scenarioRestart     = "steady: restart"
	scenarioDelete      = "delete"
	scenarioCreateMax   = "create (max)"
	scenarioLimitCreate = "limit: create"
	scenarioLimitUpdate = "limit: update"
	scenarioLimitDelete = "limit: delete"
)

// engineTypes are the federated types whose queues the bench waits on.
var engineTypes = []string{"namespaces", "deployments.apps", "configmaps"}

// engineQueues are the propagation engine's work queues the bench waits
// on: each type's planner and status queues and each member's dispatcher.
func (r *runner) engineQueues() []string {
	var queues []string
	for _, t := range engineTypes {
		queues = append(queues, t, t+"-status")
	}
	for _, m := range r.env.memberNames() {
		queues = append(queues, "cluster-"+m)
	}
	return queues
}

// hostPropagationResource says whether writes of a host resource are the
// propagation engine's: the federated objects and their status.
func hostPropagationResource(r string) bool {
	return strings.HasPrefix(r, "federated")
}

// runner runs the scenarios on an env and collects their results.
type runner struct {
	env    *env
	o      options
	report *report
	obs    *observer
	// cmPID is the controller-manager's pid, read by cost meters while a
	// restart replaces the process.
	cmPID atomic.Int64
	// benchHostWrites counts the bench's own writes of federated objects,
	// which the host's counters include.
	benchHostWrites atomic.Int64
}

// item is one object of a wave.
type item struct {
	r    resource
	name string
}

// waveItems interleaves n objects of every resource.
func waveItems(prefix string, n int) []item {
	var items []item
	names := make([][]string, len(resources))
	for i, r := range resources {
		names[i] = objectNames(r, prefix, n)
	}
	for j := range n {
		for i, r := range resources {
			items = append(items, item{r: r, name: names[i][j]})
		}
	}
	return items
}

// runAll runs the scenarios -scenarios selects, in their fixed order.
func (r *runner) runAll(ctx context.Context) error {
	if out, err := exec.Command(r.env.cmBin, "--version").Output(); err == nil {
		r.report.ControllerManager = strings.TrimSpace(string(out))
	}
	r.cmPID.Store(int64(r.env.cm.Pid()))
	r.obs = newObserver()
	defer r.obs.close()
	if err := r.startWatches(ctx); err != nil {
		return err
	}
	n := r.o.n
	steps := []struct {
		flag string
		name string
		run  func(context.Context) error
	}{
		{"create-rate", scenarioCreateRate, func(ctx context.Context) error { return r.createWave(ctx, scenarioCreateRate, "r", n, r.o.rate) }},
		{"update", scenarioUpdate, func(ctx context.Context) error { return r.updateWave(ctx, scenarioUpdate, "r", n) }},
		{"override", scenarioOverride, func(ctx context.Context) error { return r.overrideWave(ctx, "r", n) }},
		{"steady", "steady", func(ctx context.Context) error {
			if err := r.idle(ctx); err != nil {
				return err
			}
			return r.restart(ctx)
		}},
		{"delete", scenarioDelete, func(ctx context.Context) error { return r.deleteWave(ctx, scenarioDelete, "r", n) }},
		{"create-max", scenarioCreateMax, func(ctx context.Context) error { return r.createWave(ctx, scenarioCreateMax, "m", n, 0) }},
		{"limit", "limit", r.limitWaves},
		{"isolation", "isolation", r.isolationWaves},
		{"pull", "pull", r.pullWaves},
		{"flip", "flip", r.flipWaves},
		{"scale-out", "scale-out", r.scaleOutWaves},
	}
	for _, s := range steps {
		if !r.o.scenarios[s.flag] {
			continue
		}
		logf("scenario %s", s.name)
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if r.env.cm.Exited() {
			return fmt.Errorf("%s: the controller-manager exited (log %s)", s.name, r.env.cm.LogPath)
		}
	}
	return nil
}

// startWatches watches the copies in every member, the direct objects of
// the physical-limit scenarios, and the federated objects on the host.
func (r *runner) startWatches(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for _, m := range r.env.members {
		for _, res := range resources {
			start(func() error {
				return r.obs.watch(ctx, m.name, m.dyn, res.gvr, res.name, benchNS, managedSelector)
			})
			start(func() error { return r.obs.watch(ctx, m.name, m.dyn, res.gvr, res.name, directNS, benchLabel) })
		}
	}
	for _, res := range resources {
		start(func() error {
			return r.obs.watch(ctx, hostName, r.env.host.dyn, res.fedGVR, res.name, benchNS, benchLabel)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// measured runs body between two quiet points and records what it cost
// and which writes the apiservers served meanwhile.
func (r *runner) measured(ctx context.Context, res *result, body func() error) error {
	if err := r.quiesce(ctx); err != nil {
		return err
	}
	kindsBefore := writeKinds{}
	before, err := r.env.countWrites(ctx, kindsBefore)
	if err != nil {
		return err
	}
	benchBefore := r.benchHostWrites.Load()
	meter := newCostMeter(func() int { return int(r.cmPID.Load()) })
	var replicaMeters []*costMeter
	for _, cm := range r.env.replicas {
		replicaMeters = append(replicaMeters, newCostMeter(cm.Pid))
	}
	cpuBefore := r.env.clusterCPU()
	bodyErr := body()
	if err := r.quiesce(ctx); err != nil {
		return err
	}
	res.Cost = meter.end()
	if len(replicaMeters) > 0 {
		res.Replicas = []cost{res.Cost}
		for _, m := range replicaMeters {
			res.Replicas = append(res.Replicas, m.end())
		}
	}
	res.Cost.ByProcess = map[string]float64{"controller-manager": res.Cost.CPUSeconds}
	for k, v := range r.env.clusterCPU() {
		res.Cost.ByProcess[k] = v - cpuBefore[k]
	}
	kindsAfter := writeKinds{}
	after, err := r.env.countWrites(ctx, kindsAfter)
	if err != nil {
		return err
	}
	d := after.minus(before)
	res.Counters = d.nonZero()
	if u := kindsAfter.unusual(kindsBefore); len(u) > 0 {
		res.Notes = append(res.Notes, "members' copy writes other than creates answered 201: "+strings.Join(u, ", "))
	}
	res.MemberWrites = map[string]int{}
	for _, m := range r.env.members {
		res.MemberWrites[m.name] = d.sum(m.name, func(r string) bool { return !strings.HasSuffix(r, "/status") })
	}
	benchWrites := int(r.benchHostWrites.Load() - benchBefore)
	res.HostWrites = d.sum(hostName, hostPropagationResource) - benchWrites
	res.HostEvents = d.sum(hostName, func(r string) bool { return r == "events" })
	res.HostOther = d.sum(hostName, func(r string) bool { return r == otherWrites })
	res.HostCost = hostCost(d, benchWrites, res.HostEvents, res.Objects)
	r.report.add(res)
	logf("  %s: %d obj×cl in %.1fs (%.0f/s), p99 %s ms, host writes %d, CPU %.1fs, peak RSS %.0f MiB",
		res.Scenario, res.Objects*res.Clusters, res.Seconds, res.Throughput,
		ms(res.PerCluster, func(l *latency) float64 { return l.P99 }), res.HostWrites, res.Cost.CPUSeconds, res.Cost.PeakRSSMiB)
	if st := res.SlowestStages; st != nil {
		logf("    slowest tenth (%d copies): send to the federated object on the host with the engine's finalizer p50 %.0f ms (max %.0f), from there to the member p50 %.0f ms (max %.0f)",
			st.Copies, st.ToPlanned.P50, st.ToPlanned.Max, st.ToMember.P50, st.ToMember.Max)
	}
	if len(res.P99BySecond) > 0 {
		parts := make([]string, len(res.P99BySecond))
		for i, v := range res.P99BySecond {
			parts[i] = fmt.Sprintf("%d:%.0f", i, v)
		}
		logf("    p99 ms by second sent: %s", strings.Join(parts, " "))
	}
	return bodyErr
}

// hostCost splits the engine's host writes of a wave per federated object.
func hostCost(d writeCounts, benchWrites, events, objects int) *hostWrites {
	if objects == 0 {
		return nil
	}
	part := func(want string) func(string) bool {
		return func(r string) bool {
			resource, sub, _ := strings.Cut(r, "/")
			return strings.HasPrefix(resource, "federated") && sub == want
		}
	}
	spec := d.sum(hostName, part("")) - benchWrites
	status := d.sum(hostName, part("status"))
	conflicts := 0.0
	for k, v := range d {
		if c, r, _ := strings.Cut(k, "/"); c == hostName && part("status/conflicts")(r) {
			conflicts += v
		}
	}
	c := &hostWrites{
		Spec:   float64(spec) / float64(objects),
		Status: float64(status) / float64(objects),
		Events: float64(events) / float64(objects),
	}
	c.PerObject = c.Spec + c.Status + c.Events
	if status > 0 {
		c.StatusConflicts = conflicts / float64(status)
	}
	return c
}

// quiesce waits until the controller-manager has nothing queued or in
// progress and no apiserver serves writes any more, so that a scenario's
// counters and costs include all the work it caused and nothing else.
func (r *runner) quiesce(ctx context.Context) error {
	deadline := time.Now().Add(r.o.waveTimeout)
	var prev writeCounts
	stable := 0
	for stable < 3 {
		if time.Now().After(deadline) {
			logf("  warning: no quiet point within %s; measuring anyway", r.o.waveTimeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		idle, err := r.engineIdle()
		if err != nil {
			stable = 0
			continue
		}
		counts, err := r.env.countWrites(ctx, nil)
		if err != nil {
			return err
		}
		if idle && prev != nil && counts.equal(prev) {
			stable++
		} else {
			stable = 0
		}
		prev = counts
	}
	return nil
}

// engineIdle reports whether every running controller-manager has nothing
// queued or in progress.
func (r *runner) engineIdle() (bool, error) {
	queues := r.engineQueues()
	for _, cm := range append([]*framework.ControllerManager{r.env.cm}, r.env.replicas...) {
		if cm.Exited() {
			continue
		}
		metrics, err := cm.Metrics()
		if err != nil {
			return false, err
		}
		if queueState(metrics, "workqueue_depth", queues...) != 0 || queueState(metrics, "workqueue_unfinished_work_seconds", queues...) != 0 {
			return false, nil
		}
	}
	return true, nil
}

// drive calls send for every index, at rate per second or, with rate 0,
// as fast as workers concurrent senders go. It returns how long sending
// took and how many sends failed.
func drive(ctx context.Context, n int, rate float64, workers int, send func(i int) error) (time.Duration, int) {
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	call := func(i int) {
		if err := send(i); err != nil {
			if failed.Add(1) <= 3 {
				logf("  write failed: %v", err)
			}
		}
	}
	if rate <= 0 {
		next := make(chan int)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					call(i)
				}
			}()
		}
		for i := range n {
			if ctx.Err() != nil {
				break
			}
			next <- i
		}
		close(next)
	} else {
		slots := make(chan struct{}, workers)
		interval := time.Duration(float64(time.Second) / rate)
		for i := range n {
			if ctx.Err() != nil {
				break
			}
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				call(i)
			}()
		}
	}
	wg.Wait()
	return time.Since(start), int(failed.Load())
}

// fill computes a wave's latencies and throughput from what it saw.
func fill(res *result, w *wave, members int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	type objectID struct{ resource, name string }
	var perCluster, released []time.Duration
	firstSent := map[objectID]time.Time{}
	for k, at := range w.sent {
		id := objectID{k.resource, k.name}
		if t, ok := firstSent[id]; !ok || at.Before(t) {
			firstSent[id] = at
		}
	}
	sentFor := func(k obsKey) (time.Time, bool) {
		if t, ok := w.sent[k]; ok {
			return t, true
		}
		t, ok := w.sent[obsKey{resource: k.resource, name: k.name}]
		return t, ok
	}
	var first, last time.Time
	for _, t := range firstSent {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	lastSeen := map[objectID]time.Time{}
	seenIn := map[objectID]int{}
	byCluster := map[string][]time.Duration{}
	lastIn := map[string]time.Time{}
	for k, at := range w.got {
		sent, ok := sentFor(k)
		if !ok {
			continue
		}
		if k.cluster == hostName {
			released = append(released, at.Sub(sent))
			continue
		}
		perCluster = append(perCluster, at.Sub(sent))
		byCluster[k.cluster] = append(byCluster[k.cluster], at.Sub(sent))
		if at.After(lastIn[k.cluster]) {
			lastIn[k.cluster] = at
		}
		id := objectID{k.resource, k.name}
		seenIn[id]++
		if at.After(lastSeen[id]) {
			lastSeen[id] = at
		}
		if at.After(last) {
			last = at
		}
	}
	var all []time.Duration
	for id, n := range seenIn {
		if n == members {
			all = append(all, lastSeen[id].Sub(firstSent[id]))
		}
	}
	res.PerCluster, res.AllClusters, res.Released = summarize(perCluster), summarize(all), summarize(released)
	res.ByCluster = map[string]*clusterResult{}
	for c, ds := range byCluster {
		cr := &clusterResult{Latency: summarize(ds)}
		if secs := lastIn[c].Sub(first).Seconds(); !first.IsZero() && secs > 0 {
			cr.Throughput = float64(len(ds)) / secs
		}
		res.ByCluster[c] = cr
	}
	res.SlowestStages, res.P99BySecond = stagesOf(w, first, sentFor)
	res.Incomplete = w.remaining
	if !first.IsZero() && last.After(first) {
		res.Seconds = last.Sub(first).Seconds()
		res.Throughput = float64(len(perCluster)) / res.Seconds
	}
}

// federatedWave sends one write per federated object and waits for the
// states want gives each (member, object).
func (r *runner) federatedWave(ctx context.Context, res *result, items []item, rate float64,
	want func(it item, cluster string) (string, bool), write func(ctx context.Context, it item) error) error {
	return r.measured(ctx, res, func() error { return r.wave(ctx, res, items, rate, want, write) })
}

// wave is federatedWave's body, for scenarios that change the federation
// around it within one measurement. Latencies and throughput count the
// members want names for some object.
func (r *runner) wave(ctx context.Context, res *result, items []item, rate float64,
	want func(it item, cluster string) (string, bool), write func(ctx context.Context, it item) error) error {
	wanted := map[obsKey]string{}
	members := map[string]bool{}
	for _, it := range items {
		for _, m := range r.env.memberNames() {
			if s, ok := want(it, m); ok {
				wanted[obsKey{cluster: m, resource: it.r.name, name: it.name}] = s
				members[m] = true
			}
		}
		if s, ok := want(it, hostName); ok {
			wanted[obsKey{cluster: hostName, resource: it.r.name, name: it.name}] = s
		}
	}
	w := newWave(wanted)
	r.obs.begin(w)
	defer r.obs.end()
	elapsed, failed := drive(ctx, len(items), rate, r.o.workers, func(i int) error {
		it := items[i]
		w.sentAt(obsKey{resource: it.r.name, name: it.name}, time.Now())
		r.benchHostWrites.Add(1)
		err := write(ctx, it)
		if err != nil {
			w.drop(func(k obsKey) bool { return k.resource == it.r.name && k.name == it.name })
		}
		return err
	})
	res.SendRate = float64(len(items)) / elapsed.Seconds()
	res.Errors = failed
	if left := w.wait(ctx, r.o.waveTimeout); left > 0 {
		logf("  %d expected effects not seen within %s", left, r.o.waveTimeout)
	}
	fill(res, w, len(members))
	return ctx.Err()
}

func (r *runner) newResult(scenario string, objects int, rate float64) *result {
	return &result{Scenario: scenario, Objects: objects, Clusters: len(r.env.members), RequestedRate: rate}
}

func (r *runner) createWave(ctx context.Context, scenario, prefix string, n int, rate float64) error {
	items := waveItems(prefix, n)
	clusters := r.env.memberNames()
	return r.federatedWave(ctx, r.newResult(scenario, len(items), rate), items, rate,
		func(it item, c string) (string, bool) {
			return wantState(it.r, version{}, c), c != hostName
		},
		r.creator(clusters))
}

// creator writes a wave's federated objects, placed on clusters.
func (r *runner) creator(clusters []string) func(ctx context.Context, it item) error {
	return func(ctx context.Context, it item) error {
		_, err := r.env.host.dyn.Resource(it.r.fedGVR).Namespace(benchNS).
			Create(ctx, federatedObject(it.r, it.name, 0, clusters), metav1.CreateOptions{})
		return err
	}
}

func (r *runner) patchWave(ctx context.Context, res *result, items []item, want func(it item, c string) (string, bool), patch func(resource) map[string]any) error {
	patches := map[string][]byte{}
	for _, rs := range resources {
		data, err := json.Marshal(patch(rs))
		if err != nil {
			return err
		}
		patches[rs.name] = data
	}
	return r.federatedWave(ctx, res, items, 0, want, func(ctx context.Context, it item) error {
		_, err := r.env.host.dyn.Resource(it.r.fedGVR).Namespace(benchNS).
			Patch(ctx, it.name, types.MergePatchType, patches[it.r.name], metav1.PatchOptions{})
		return err
	})
}

// updateWave changes one template field of every object of a wave.
func (r *runner) updateWave(ctx context.Context, scenario, prefix string, n int) error {
	items := waveItems(prefix, n)
	return r.patchWave(ctx, r.newResult(scenario, len(items), 0), items,
		func(it item, c string) (string, bool) {
			return wantState(it.r, version{revision: 1}, c), c != hostName
		},
		func(rs resource) map[string]any { return templatePatch(rs, 1) })
}

// overrideWave gives the first member an override in every object of a
// wave; the other members must see no write at all.
func (r *runner) overrideWave(ctx context.Context, prefix string, n int) error {
	items := waveItems(prefix, n)
	target := r.env.members[0].name
	res := r.newResult(scenarioOverride, len(items), 0)
	res.Clusters = 1
	err := r.patchWave(ctx, res, items,
		func(it item, c string) (string, bool) {
			return wantState(it.r, version{revision: 1, overridden: true}, c), c == target
		},
		func(rs resource) map[string]any {
			return map[string]any{"spec": map[string]any{"overrides": []any{overrideOf(rs, target)}}}
		})
	var others []string
	for _, m := range r.env.members[1:] {
		if w := res.MemberWrites[m.name]; w != 0 {
			others = append(others, fmt.Sprintf("%s %d", m.name, w))
		}
	}
	if len(others) == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("only %s written (%d writes for %d objects); every other member 0", target, res.MemberWrites[target], len(items)))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("members other than %s were written: %s", target, strings.Join(others, ", ")))
	}
	return err
}

// deleteWave deletes every object of a wave and waits until the copies are
// gone from every member and the federated objects from the host, i.e.
// their finalizers were released.
func (r *runner) deleteWave(ctx context.Context, scenario, prefix string, n int) error {
	items := waveItems(prefix, n)
	return r.federatedWave(ctx, r.newResult(scenario, len(items), 0), items, 0,
		func(item, string) (string, bool) { return goneMarker, true },
		func(ctx context.Context, it item) error {
			return r.env.host.dyn.Resource(it.r.fedGVR).Namespace(benchNS).Delete(ctx, it.name, metav1.DeleteOptions{})
		})
}

// idle counts writes while nothing changes.
func (r *runner) idle(ctx context.Context) error {
	res := r.newResult(scenarioIdle, 2*r.o.n, 0)
	return r.measured(ctx, res, func() error {
		start := time.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.o.idle):
		}
		res.Seconds = time.Since(start).Seconds()
		return nil
	})
}

// restart restarts the controller-manager over propagated objects and
// counts its writes until it is idle again; its Seconds are how long it
// took to reconcile everything after the new process started.
func (r *runner) restart(ctx context.Context) error {
	res := r.newResult(scenarioRestart, 2*r.o.n, 0)
	return r.measured(ctx, res, func() error {
		if err := r.env.cm.Stop(); err != nil {
			return err
		}
		start := time.Now()
		cm, err := startControllerManager(ctx, r.env)
		if err != nil {
			return err
		}
		r.env.cm = cm
		r.cmPID.Store(int64(cm.Pid()))
		// Every federated object is queued once after the host lists them;
		// the restart is over when they all went through the queue.
		want := float64(2*r.o.n + 1)
		err = waitFor(ctx, "the restarted controller-manager to reconcile every object", r.o.waveTimeout, func() (bool, error) {
			m, err := cm.Metrics()
			if err != nil {
				return false, err
			}
			queues := r.engineQueues()
			adds := queueState(m, "workqueue_adds_total", engineTypes...)
			busy := queueState(m, "workqueue_depth", queues...) + queueState(m, "workqueue_unfinished_work_seconds", queues...)
			return adds >= want && busy == 0, fmt.Errorf("%v of %v objects queued, depth+unfinished %v", adds, want, busy)
		})
		res.Seconds = time.Since(start).Seconds()
		return err
	})
}

// stagesOf splits the latency of a wave's slowest tenth of member copies
// at the moment the host showed the engine's finalizer on their federated
// object (its plan under way; with the admission policy, which adds it,
// the object's creation as the host's watch delivered it), and gives the p99 of copies by the second
// of the wave their object was sent in. Nil and empty where nothing was
// planned in the wave (updates, deletes) or nothing seen.
func stagesOf(w *wave, first time.Time, sentFor func(obsKey) (time.Time, bool)) (*stageSplit, []float64) {
	type copyTimes struct{ sent, planned, got time.Time }
	var copies []copyTimes
	bySecond := map[int][]time.Duration{}
	last := -1
	for k, at := range w.got {
		if k.cluster == hostName {
			continue
		}
		sent, ok := sentFor(k)
		if !ok {
			continue
		}
		sec := int(sent.Sub(first).Seconds())
		bySecond[sec] = append(bySecond[sec], at.Sub(sent))
		last = max(last, sec)
		if p, ok := w.planned[obsKey{resource: k.resource, name: k.name}]; ok && !p.After(at) {
			copies = append(copies, copyTimes{sent, p, at})
		}
	}
	var timeline []float64
	for sec := 0; sec <= last; sec++ {
		v := 0.0
		if l := summarize(bySecond[sec]); l != nil {
			v = l.P99
		}
		timeline = append(timeline, v)
	}
	if len(copies) == 0 {
		return nil, timeline
	}
	slices.SortFunc(copies, func(a, b copyTimes) int { return cmp.Compare(a.got.Sub(a.sent), b.got.Sub(b.sent)) })
	slowest := copies[len(copies)-max(len(copies)/10, 1):]
	var toPlanned, toMember []time.Duration
	for _, c := range slowest {
		toPlanned = append(toPlanned, max(c.planned.Sub(c.sent), 0))
		toMember = append(toMember, c.got.Sub(c.planned))
	}
	return &stageSplit{Copies: len(slowest), ToPlanned: summarize(toPlanned), ToMember: summarize(toMember)}, timeline
}
