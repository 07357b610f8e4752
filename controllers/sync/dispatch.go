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
	queue   *workQueue[dispatchItem]
	// failures backs off the failures that say when to try again (a
	// create refused for a namespace not there yet, a cache behind):
	// while one lasts its retries come no faster than the backoff allows.
	failures workqueue.TypedRateLimiter[dispatchItem]
	cancel   context.CancelFunc
	done     chan struct{}
}

func newClusterDispatcher(e *Engine, cluster string) *clusterDispatcher {
	ctx, cancel := context.WithCancel(e.ctx)
	d := &clusterDispatcher{
		e: e, cluster: cluster, cancel: cancel, done: make(chan struct{}),
		queue:    newQueue[dispatchItem]("cluster-" + cluster),
		failures: workqueue.NewTypedItemExponentialFailureRateLimiter[dispatchItem](100*time.Millisecond, time.Minute),
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

// add queues an object of a type at priority, after a delay when after > 0.
func (d *clusterDispatcher) add(typeConfig, key string, priority int, after time.Duration) {
	enqueue(d.queue, dispatchItem{typeConfig: typeConfig, key: key}, priority, after)
}

// stop ends the dispatcher's workers and waits for them.
func (d *clusterDispatcher) stop() {
	d.cancel()
	d.queue.ShutDown()
	<-d.done
}

func (d *clusterDispatcher) processNext(ctx context.Context) bool {
	item, priority, shutdown := d.queue.GetWithPriority()
	if shutdown {
		return false
	}
	defer d.queue.Done(item)
	w := d.e.worker(item.typeConfig)
	if w == nil {
		d.forget(item)
		return true
	}
	p := w.planFor(item.key, d.cluster)
	if p == nil {
		d.forget(item)
		return true
	}
	o, done := w.execute(ctx, d.cluster, item.key, p)
	if !done || ctx.Err() != nil {
		d.queue.Forget(item)
		if !done && o.requeue > 0 && ctx.Err() == nil {
			// Not carried out, but still this member's to do.
			enqueue(d.queue, item, priority, o.requeue)
		}
		return true
	}
	switch w.recordResult(item.key, d.cluster, p, o) {
	case resultChanged:
		enqueue(w.statusQueue, item.key, priority, 0)
	case resultRemoteOnly:
		enqueue(w.statusQueue, item.key, priority, statusCoalesceDelay)
	}
	switch {
	case o.requeue > 0:
		d.queue.Forget(item)
		enqueue(d.queue, item, priority, d.retryAfter(item, o))
	case retriable(o.status):
		// A write the member refused or did not answer is tried again
		// with this member's backoff, as its trouble may pass.
		retryLater(d.queue, item, priority)
	default:
		d.forget(item)
	}
	return true
}

// retryAfter is when to try an item again whose outcome says when: then,
// unless it failed, in which case no sooner than its backoff, which grows
// while the failure lasts. A member that refuses every create (its
// admission denies the namespace) would otherwise be sent each object's
// create every second, using up its client's rate limit for every type.
func (d *clusterDispatcher) retryAfter(item dispatchItem, o outcome) time.Duration {
	if !retriable(o.status) {
		d.failures.Forget(item)
		return o.requeue
	}
	return max(o.requeue, d.failures.When(item))
}

// forget ends the item's backoffs: it is done, or no longer this member's.
func (d *clusterDispatcher) forget(item dispatchItem) {
	d.queue.Forget(item)
	d.failures.Forget(item)
}

// dispatcher returns a member's dispatcher, starting it on first use; nil
// when this engine does not serve the member (any more). Asked under the
// lock that Releasing takes the dispatcher with, so that a plan made just
// before a member was handed over cannot start a dispatcher after its
// release took the last one, which nothing would stop.
func (e *Engine) dispatcher(cluster string) *clusterDispatcher {
	e.dispatchMu.Lock()
	defer e.dispatchMu.Unlock()
	if !e.serves(cluster) {
		return nil
	}
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
