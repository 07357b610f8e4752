package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/metrics"
)

// Event actions, the events.k8s.io field saying what was being done.
const (
	actionBuildClient = "BuildClient"
	actionProbeHealth = "ProbeHealth"
)

// worker probes one member cluster every period, or at once when poked.
type worker struct {
	r      *Reconciler
	name   string
	cancel context.CancelFunc
	poke   chan struct{}
	log    logr.Logger

	// The fields below belong to the worker's goroutine.

	// streak counts the consecutive probes of the same readiness.
	streak streak
	// lastProblem identifies the last problem an event was recorded for.
	lastProblem string
	// lastSummary is when the heavier status fields were last collected.
	lastSummary time.Time
	// heartbeatObserved says whether the worker has read a Pull-mode
	// member's heartbeat Lease, or found there was none; heartbeatVersion
	// is the Lease's resourceVersion when last read ("" for none),
	// heartbeatSeen when, by this controller's clock, it was first read at
	// that version, and heartbeatChanged whether that version replaced one
	// the worker read before (or the Lease's absence), which makes it a
	// renewal rather than whatever the Lease held when the worker started.
	heartbeatObserved bool
	heartbeatVersion  string
	heartbeatSeen     time.Time
	heartbeatChanged  bool
}

func newWorker(r *Reconciler, name string, cancel context.CancelFunc) *worker {
	return &worker{
		r:      r,
		name:   name,
		cancel: cancel,
		poke:   make(chan struct{}, 1),
		log:    r.log.WithValues("cluster", name),
	}
}

// probeNow makes the worker probe as soon as it is idle; pokes coalesce.
func (w *worker) probeNow() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *worker) run(ctx context.Context) {
	ticker := time.NewTicker(w.r.opts.Period)
	defer ticker.Stop()
	for {
		w.cycle(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-w.poke:
		}
	}
}

// cycle probes the member once and writes what it found.
func (w *worker) cycle(ctx context.Context) {
	r := w.r
	var cluster fedv1b1.KubeFedCluster
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: r.opts.Namespace, Name: w.name}, &cluster); err != nil {
		// A deleted cluster is Reconcile's to clean up.
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			w.log.Error(err, "Reading KubeFedCluster")
		}
		return
	}
	obs, clients, err := w.observe(ctx, &cluster)
	if err != nil {
		if !errors.Is(err, errWorkerStopped) && ctx.Err() == nil {
			w.log.Error(err, "Probing member cluster")
		}
		return
	}
	if ctx.Err() != nil {
		// Stopped mid-probe; the result may be about a deleted cluster.
		return
	}

	now := r.now()
	obs.message = truncate(obs.message, maxMessage)
	reported := reportedHealth(cluster.Status.Conditions)
	if !obs.noVerdict {
		w.streak = w.streak.observe(obs.ready())
	}
	var sum *summary
	if clients != nil && r.writes() && summaryDue(obs, reported, w.lastSummary, now, r.opts.SummaryPeriod) {
		sum = w.collect(ctx, clients, cluster.Status.APIEnablements)
		w.lastSummary = now
	}
	if obs.agentSummary != nil && r.writes() {
		// A Pull-mode member's summary comes with its heartbeat; an
		// unchanged one writes nothing.
		sum = obs.agentSummary
	}
	compute := func(old *fedv1b1.KubeFedClusterStatus) *fedv1b1.KubeFedClusterStatus {
		adopted := adopt(reportedHealth(old.Conditions), obs, w.streak, r.opts.thresholds())
		next := old.DeepCopy()
		next.Conditions = nextConditions(old.Conditions, obs, adopted, metav1.NewTime(now))
		if sum != nil {
			sum.applyTo(next)
		}
		return next
	}

	next := compute(&cluster.Status)
	if r.writes() && !obs.noVerdict {
		w.recordEvent(&cluster, obs)
	}
	if r.writes() && needsWrite(&cluster.Status, next, now, r.opts.ProbeTimeWriteInterval) {
		if err := w.writeStatus(ctx, &cluster, next, compute); err != nil && ctx.Err() == nil {
			w.log.Error(err, "Writing KubeFedCluster status")
		}
	}
	health := reportedHealth(next.Conditions)
	if health != reported {
		w.log.Info("Member cluster health changed", "from", reported.String(), "to", health.String(), "observation", obs.message)
	}
	r.publish(w, health)
}

// observe builds the member's clients and probes its health. An error means
// the probe could not be attempted for reasons on our side and is retried
// next period; problems of the member or its configuration are observations.
func (w *worker) observe(ctx context.Context, cluster *fedv1b1.KubeFedCluster) (observation, *clusterclient.Clients, error) {
	r := w.r
	if cluster.PullMode() {
		// No client: the member's agent reaches the host, never the reverse.
		if !r.asOwner(w, func() { r.Registry.Remove(w.name) }) {
			return observation{}, nil, errWorkerStopped
		}
		obs, err := w.observeAgent(ctx, cluster)
		return obs, nil, err
	}
	if r.Heartbeats != nil && !r.asOwner(w, func() { r.Heartbeats.Forget(w.name) }) {
		return observation{}, nil, errWorkerStopped
	}
	secret, err := w.secret(ctx, cluster)
	if err != nil {
		return observation{}, nil, err
	}
	clients, err := r.ensureClients(w, cluster, secret)
	switch {
	case errors.Is(err, errWorkerStopped):
		return observation{}, nil, err
	case err != nil:
		// Whatever stops a client from being built, a ConfigError or a
		// TLS setup client-go rejects, is the configuration's fault.
		return malformed(err), nil, nil
	}

	start := time.Now()
	probeCtx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	// The probe's own deadline bounds it: the clients' request timeout
	// (30 s) would cut a longer clusterHealthCheck.timeout short, as
	// KubeFed's health client, built with that timeout, did not.
	probeClient := *clients.HTTPClient()
	probeClient.Timeout = 0
	obs := probeHealth(probeCtx, &probeClient, clients.Host(), r.opts.Timeout)
	metrics.ClusterHealthStatusDuration.Observe(time.Since(start).Seconds())
	return obs, clients, nil
}

// secret returns the cluster's Secret, or nil when it does not exist.
func (w *worker) secret(ctx context.Context, cluster *fedv1b1.KubeFedCluster) (*corev1.Secret, error) {
	var s corev1.Secret
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: cluster.Spec.SecretRef.Name}
	if err := w.r.reader.Get(ctx, key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	return &s, nil
}

// collect reads the heavier status fields; what fails keeps its old value.
func (w *worker) collect(ctx context.Context, clients *clusterclient.Clients, previous []fedv1b1.APIEnablement) *summary {
	kube, err := clients.Kubernetes()
	if err != nil {
		w.log.Error(err, "Building clientset")
		return nil
	}
	disc, err := clients.Discovery()
	if err != nil {
		w.log.Error(err, "Building discovery client")
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, w.r.opts.SummaryTimeout)
	defer cancel()
	s, err := collectSummary(ctx, kube, disc, previous)
	if err != nil {
		// Expected where the join granted little (Namespaced scope), so
		// not an error worth alerting on.
		w.log.V(1).Info("Collecting member cluster status partly failed", "err", err.Error())
	}
	return &s
}

// recordEvent records an event when a new problem shows up.
func (w *worker) recordEvent(cluster *fedv1b1.KubeFedCluster, obs observation) {
	reason, note, key := eventFor(obs)
	if key != w.lastProblem && reason != "" {
		action := actionProbeHealth
		if obs.malformed {
			action = actionBuildClient
		}
		w.r.recorder.Eventf(cluster, nil, corev1.EventTypeWarning, reason, action, "%s", note)
		w.log.Info("Member cluster problem", "reason", reason, "message", obs.message)
	}
	w.lastProblem = key
}

// writeStatus patches the status, guarded by the resourceVersion the probe
// started from. On a conflict it recomputes from the current object, unless
// the object was replaced or its spec changed: then the probe used a stale
// configuration and the probe that the change triggered will write.
func (w *worker) writeStatus(ctx context.Context, cluster *fedv1b1.KubeFedCluster, next *fedv1b1.KubeFedClusterStatus, compute func(*fedv1b1.KubeFedClusterStatus) *fedv1b1.KubeFedClusterStatus) error {
	err := w.patchStatus(ctx, cluster, next)
	if !apierrors.IsConflict(err) {
		return err
	}
	var fresh fedv1b1.KubeFedCluster
	if err := w.r.apiReader.Get(ctx, client.ObjectKeyFromObject(cluster), &fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	if fresh.UID != cluster.UID || fresh.Generation != cluster.Generation {
		return nil
	}
	next = compute(&fresh.Status)
	if !needsWrite(&fresh.Status, next, w.r.now(), w.r.opts.ProbeTimeWriteInterval) {
		return nil
	}
	return w.patchStatus(ctx, &fresh, next)
}

func (w *worker) patchStatus(ctx context.Context, base *fedv1b1.KubeFedCluster, next *fedv1b1.KubeFedClusterStatus) error {
	updated := base.DeepCopy()
	updated.Status = *next
	err := w.r.writer.Status().Patch(ctx, updated, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
