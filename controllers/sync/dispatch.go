package sync

import (
	"context"
	gosync "sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// dispatchItem is one federated object of one type, in one member's queue.
type dispatchItem struct{ typeConfig, key string }

// clusterDispatcher carries out the plans of one member cluster, for every
// type, with its own queue, workers and backoff: a member that is slow,
// hung or failing holds only its own workers, and its retries back off
// without delaying any other member's work.
type clusterDispatcher struct {
	e       *Engine
	cluster string
	queue   workqueue.TypedRateLimitingInterface[dispatchItem]
	cancel  context.CancelFunc
	done    chan struct{}
}

func newClusterDispatcher(e *Engine, cluster string) *clusterDispatcher {
	ctx, cancel := context.WithCancel(e.ctx)
	d := &clusterDispatcher{
		e: e, cluster: cluster, cancel: cancel, done: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[dispatchItem](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[dispatchItem]{Name: "cluster-" + cluster}),
	}
	go func() {
		<-ctx.Done()
		d.queue.ShutDown()
	}()
	var workers gosync.WaitGroup
	for range e.opts.ClusterWorkers {
		workers.Go(func() {
			for d.processNext(ctx) {
			}
		})
	}
	go func() {
		workers.Wait()
		close(d.done)
	}()
	return d
}

func (d *clusterDispatcher) add(typeConfig, key string) {
	d.queue.Add(dispatchItem{typeConfig: typeConfig, key: key})
}

func (d *clusterDispatcher) addAfter(typeConfig, key string, after time.Duration) {
	d.queue.AddAfter(dispatchItem{typeConfig: typeConfig, key: key}, after)
}

// stop ends the dispatcher's workers and waits for them.
func (d *clusterDispatcher) stop() {
	d.cancel()
	d.queue.ShutDown()
	<-d.done
}

func (d *clusterDispatcher) processNext(ctx context.Context) bool {
	item, shutdown := d.queue.Get()
	if shutdown {
		return false
	}
	defer d.queue.Done(item)
	w := d.e.worker(item.typeConfig)
	if w == nil {
		d.queue.Forget(item)
		return true
	}
	p := w.planFor(item.key, d.cluster)
	if p == nil {
		d.queue.Forget(item)
		return true
	}
	o, done := w.execute(ctx, d.cluster, item.key, p)
	if !done || ctx.Err() != nil {
		d.queue.Forget(item)
		return true
	}
	switch w.recordResult(item.key, d.cluster, p, o) {
	case resultChanged:
		w.statusQueue.Add(item.key)
	case resultRemoteOnly:
		w.statusQueue.AddAfter(item.key, statusCoalesceDelay)
	}
	switch {
	case o.requeue > 0:
		d.queue.Forget(item)
		d.queue.AddAfter(item, o.requeue)
	case retriable(o.status):
		// A write the member refused or did not answer is tried again
		// with this member's backoff, as its trouble may pass.
		d.queue.AddRateLimited(item)
	default:
		d.queue.Forget(item)
	}
	return true
}

// dispatcher returns a member's dispatcher, starting it on first use.
func (e *Engine) dispatcher(cluster string) *clusterDispatcher {
	e.dispatchMu.Lock()
	defer e.dispatchMu.Unlock()
	d := e.dispatchers[cluster]
	if d == nil {
		d = newClusterDispatcher(e, cluster)
		e.dispatchers[cluster] = d
	}
	return d
}

// removeDispatcher stops the dispatcher of a member that left.
func (e *Engine) removeDispatcher(cluster string) {
	if d := e.takeDispatcher(cluster); d != nil {
		// Its workers may be waiting out a write timeout.
		go d.stop()
	}
}

// takeDispatcher removes a member's dispatcher and returns it, if any.
func (e *Engine) takeDispatcher(cluster string) *clusterDispatcher {
	e.dispatchMu.Lock()
	defer e.dispatchMu.Unlock()
	d := e.dispatchers[cluster]
	delete(e.dispatchers, cluster)
	return d
}
