package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Defaults of Options.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Handler is told when this replica starts and stops being the one that
// writes to a member cluster.
type Handler interface {
	// Acquired: the fence is held; writes to the member may begin.
	Acquired(cluster string)
	// Releasing: the fence is about to be given up or is lost. It returns
	// once no write to the member is under way and none will start.
	Releasing(cluster string)
}

// Options configure a Shard.
type Options struct {
	// Client reaches the host cluster, where the Leases live.
	Client kubernetes.Interface
	// Namespace holds the Leases: the KubeFed namespace.
	Namespace string
	// Identity names this replica; unique among the live replicas.
	Identity string
	// LeaseDuration is how long a replica or fence Lease lasts without
	// renewal; it is renewed every third of it.
	LeaseDuration time.Duration
	// RetryPeriod is how often Leases are read and fences sought.
	RetryPeriod time.Duration
	// Clusters lists the joined member clusters. On an error nothing
	// moves until it answers again.
	Clusters func() ([]string, error)
	// Handler hears about fences gained and lost.
	Handler Handler
	// Annotations are set on this replica's membership Lease, such as
	// where its peers reach it (Peers.Annotations).
	Annotations map[string]string
	Log         logr.Logger
}

// Shard is this replica's share of the member clusters. Run keeps its
// membership Lease renewed and seeks the fences of the members rendezvous
// hashing gives it; Holds says whether a member may be written to now.
type Shard struct {
	o     Options
	store leaseStore
	now   func() time.Time

	mu sync.Mutex
	// seen is, per Lease, the resourceVersion last read and when this
	// replica first saw it: a Lease is expired once it went unchanged for
	// its duration as measured here, whatever the holder's clock says.
	seen map[string]seenLease
	// live are the replicas with a current membership Lease, self included
	// while its own is.
	live []string
	// annotations are the live replicas' membership Lease annotations,
	// as of listedAt: the last step that read the Leases.
	annotations map[string]map[string]string
	listedAt    time.Time
	// assigned is Assign over the joined members last listed and live.
	assigned map[string]string
	// self is this replica's membership Lease, and until when it counts.
	self      *coordinationv1.Lease
	selfUntil time.Time
	selfRenew time.Time
	// held are the fences this replica holds.
	held map[string]*fence
}

type seenLease struct {
	resourceVersion string
	at              time.Time
}

type fence struct {
	lease *coordinationv1.Lease
	// until is when this replica stops writing unless renewed: the start
	// of the last successful renewal plus the duration, less a margin for
	// writes under way, always before any other replica can see the fence
	// expired.
	until time.Time
	renew time.Time
}

// New returns a shard; call Run.
func New(o Options) (*Shard, error) {
	if o.Identity == "" {
		return nil, fmt.Errorf("sharding needs a replica identity")
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RetryPeriod <= 0 || o.RetryPeriod > o.LeaseDuration/4 {
		o.RetryPeriod = min(DefaultRetryPeriod, o.LeaseDuration/4)
	}
	if o.Clusters == nil {
		o.Clusters = func() ([]string, error) { return nil, nil }
	}
	store := timedLeases{store: kubeLeases{c: o.Client, namespace: o.Namespace}, timeout: o.LeaseDuration / 3}
	return &Shard{o: o, store: store, now: time.Now,
		seen: map[string]seenLease{}, held: map[string]*fence{}}, nil
}

// SetHandler sets the Handler; call it before Start.
func (s *Shard) SetHandler(h Handler) { s.o.Handler = h }

// Identity is this replica's name.
func (s *Shard) Identity() string { return s.o.Identity }

// Holds reports whether this replica may write to cluster now.
func (s *Shard) Holds(cluster string) bool {
	_, ok := s.WriteDeadline(cluster)
	return ok
}

// Serving reports whether this replica holds cluster's fence, though its
// renewal may be overdue (WriteDeadline then says no write may start): on a
// host apiserver slow to answer, a renewal can land after the deadline and
// the fence stays this replica's, so its work must wait, not be dropped. A
// fence that cannot be renewed at all is lost at the next step past its
// deadline, and Serving turns false with it.
func (s *Shard) Serving(cluster string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[cluster] != nil
}

// WriteDeadline is when this replica must have stopped writing to cluster,
// and whether it may write to it at all.
func (s *Shard) WriteDeadline(cluster string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.held[cluster]
	if f == nil || !s.now().Before(f.until) {
		return time.Time{}, false
	}
	return f.until, true
}

// Assigned reports whether this replica should serve the cluster name: a
// joined member by Assign over the joined members and live replicas (each
// replica's share bounded), any other name by rendezvous hashing over the
// live replicas (the one that reports a cluster no replica writes to, such
// as a placement naming an unknown one, or that adds an object's
// finalizer).
func (s *Shard) Assigned(cluster string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if owner, joined := s.assigned[cluster]; joined {
		return owner == s.o.Identity
	}
	return Owner(cluster, s.live) == s.o.Identity
}

// Replicas are the live replicas, sorted.
func (s *Shard) Replicas() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.live)
}

// OwnerOf is the live replica that rendezvous hashing names for name,
// a name that is not a member cluster (such as an object's), or "".
func (s *Shard) OwnerOf(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Owner(name, s.live)
}

// liveAnnotations are another live replica's membership Lease annotations
// as last read.
func (s *Shard) liveAnnotations(identity string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Sub(s.listedAt) >= s.o.LeaseDuration {
		// Not read for a Lease duration (lists failing): any of them may
		// have expired since, and none is trusted on that read.
		return nil
	}
	return s.annotations[identity]
}

// lookUp reads identity's membership Lease now, for a replica another one
// already sees but this one's last step did not show: one that started
// since. It returns the Lease's annotations, and records them as a step
// would, when the Lease is live as a step taken now would find it: new to
// this replica, changed since read, or read within its duration. Which
// replicas are live, and so the assignment, is still the steps'.
func (s *Shard) lookUp(ctx context.Context, identity string) (map[string]string, bool) {
	if identity == s.o.Identity {
		return nil, false
	}
	name := ReplicaLeaseName(identity)
	l, err := s.store.get(ctx, name)
	if err != nil || l.Labels[LeaseRoleLabel] != RoleReplica || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != identity {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen, ok := s.seen[name]; ok && seen.resourceVersion == l.ResourceVersion && s.expiredLocked(name, l, s.now()) {
		return nil, false
	}
	if s.annotations == nil {
		s.annotations = map[string]map[string]string{}
	}
	s.annotations[identity] = l.Annotations
	return l.Annotations, true
}

// Held are the clusters whose fence this replica holds, sorted.
func (s *Shard) Held() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.held))
	for c := range s.held {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// NeedLeaderElection: every replica runs its shard.
func (s *Shard) NeedLeaderElection() bool { return false }

// Start runs the shard until ctx ends, then hands its fences over and
// leaves; it implements manager.Runnable.
func (s *Shard) Start(ctx context.Context) error {
	s.o.Log.Info("serving a share of the member clusters", "replica", s.o.Identity, "leaseDuration", s.o.LeaseDuration)
	t := time.NewTicker(s.o.RetryPeriod)
	defer t.Stop()
	for {
		s.step(ctx)
		select {
		case <-ctx.Done():
			s.leave()
			return nil
		case <-t.C:
		}
	}
}

// leave gives up every fence and the membership, so that the others take
// over at once rather than after the Leases expire.
func (s *Shard) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range s.Held() {
		s.release(ctx, c, false)
	}
	s.mu.Lock()
	self := s.self
	s.self, s.live, s.annotations = nil, nil, nil
	s.mu.Unlock()
	if self != nil {
		// Only the Lease as this shard last wrote it: a shard that
		// replaced this one in the process (the controllers restarted)
		// may have taken it over already.
		_ = s.store.delete(ctx, self.Name, self.ResourceVersion)
	}
	publish(s)
}

// step renews what is due, reads every Lease and moves fences to match
// the assignment.
func (s *Shard) step(ctx context.Context) {
	s.renewSelf(ctx)
	leases, err := s.store.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Error(err, "reading the shard Leases")
		}
		s.renewHeld(ctx)
		s.loseExpired()
		publish(s)
		return
	}
	now := s.now()
	byName := map[string]*coordinationv1.Lease{}
	var live []string
	annotations := map[string]map[string]string{}
	s.mu.Lock()
	seen := make(map[string]seenLease, len(leases))
	for i := range leases {
		l := &leases[i]
		byName[l.Name] = l
		prev, ok := s.seen[l.Name]
		if !ok || prev.resourceVersion != l.ResourceVersion {
			prev = seenLease{resourceVersion: l.ResourceVersion, at: now}
		}
		seen[l.Name] = prev
	}
	s.seen = seen
	selfValid := s.self != nil && now.Before(s.selfUntil)
	for name, l := range byName {
		if l.Labels[LeaseRoleLabel] != RoleReplica || l.Spec.HolderIdentity == nil {
			continue
		}
		holder := *l.Spec.HolderIdentity
		if holder == s.o.Identity {
			continue
		}
		if s.expiredLocked(name, l, now) {
			if now.Sub(seen[name].at) > 2*duration(l, s.o.LeaseDuration) {
				// A replica gone for good; its Lease is litter.
				s.deleteLitter(name, l.ResourceVersion)
			}
			continue
		}
		live = append(live, holder)
		annotations[holder] = l.Annotations
	}
	if selfValid {
		live = append(live, s.o.Identity)
	}
	s.live = sortedUnique(live)
	s.annotations, s.listedAt = annotations, now
	s.mu.Unlock()

	joined, err := s.o.Clusters()
	if err != nil {
		s.o.Log.Error(err, "listing the member clusters")
		s.renewHeld(ctx)
		s.loseExpired()
		publish(s)
		return
	}
	isJoined := map[string]bool{}
	for _, c := range joined {
		isJoined[c] = true
	}
	s.mu.Lock()
	s.assigned = Assign(joined, s.live)
	for name, l := range byName {
		// The fence of a member that left, which its holder could not
		// delete (it died first, or the delete failed): litter once no
		// one has renewed it for twice its duration. The delete holds
		// only for the version seen, so a fence taken since stays.
		if l.Labels[LeaseRoleLabel] == RoleFence && !isJoined[l.Annotations[ClusterAnnotation]] &&
			s.held[l.Annotations[ClusterAnnotation]] == nil &&
			now.Sub(s.seen[name].at) > 2*duration(l, s.o.LeaseDuration) {
			s.deleteLitter(name, l.ResourceVersion)
		}
	}
	s.mu.Unlock()
	for _, c := range s.Held() {
		if !isJoined[c] {
			s.release(ctx, c, true)
		}
	}
	for _, c := range sortedUnique(joined) {
		mine := selfValid && s.Assigned(c)
		_, holding := s.heldFence(c)
		switch {
		case holding && !mine:
			s.release(ctx, c, false)
		case holding:
			s.renewFence(ctx, c)
		case mine:
			s.acquire(ctx, c, byName[FenceLeaseName(c)])
		}
	}
	s.loseExpired()
	publish(s)
}

// deleteLitter deletes a Lease no one renews any more, if it is still at
// resourceVersion, without holding up the step.
func (s *Shard) deleteLitter(name, resourceVersion string) {
	go func() {
		_ = s.store.delete(context.Background(), name, resourceVersion)
	}()
}

func duration(l *coordinationv1.Lease, fallback time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return fallback
}

// expiredLocked reports whether another replica's Lease is free to take:
// it went unchanged for its whole duration here, or it was freed and seen
// free for the margin. Its holder stopped starting writes before it freed
// the Lease, but a write it sent just before may still be under way at the
// member: a freed fence waits the same margin an expired one gives the
// writes of a holder that could not renew (fence.until).
func (s *Shard) expiredLocked(name string, l *coordinationv1.Lease, now time.Time) bool {
	seen, ok := s.seen[name]
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return ok && now.Sub(seen.at) >= s.margin()
	}
	return ok && now.Sub(seen.at) >= duration(l, s.o.LeaseDuration)
}

func (s *Shard) heldFence(c string) (*fence, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.held[c]
	return f, ok
}

func (s *Shard) margin() time.Duration { return s.o.RetryPeriod }

func (s *Shard) renewSelf(ctx context.Context) {
	s.mu.Lock()
	self, due := s.self, s.self == nil || !s.now().Before(s.selfRenew)
	s.mu.Unlock()
	if !due {
		return
	}
	start := s.now()
	var (
		l   *coordinationv1.Lease
		err error
	)
	if self == nil {
		l, err = s.store.create(ctx, s.newLease(ReplicaLeaseName(s.o.Identity), RoleReplica, "", start))
		if apierrors.IsAlreadyExists(err) {
			// Ours from before a restart of the controllers; take it over.
			l, err = s.takeOver(ctx, ReplicaLeaseName(s.o.Identity), start)
		}
	} else {
		next := self.DeepCopy()
		next.Spec.RenewTime = &metav1.MicroTime{Time: start}
		l, err = s.store.update(ctx, next)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			l, err = s.takeOver(ctx, ReplicaLeaseName(s.o.Identity), start)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Error(err, "renewing this replica's membership Lease")
		}
		return
	}
	s.mu.Lock()
	s.self, s.selfUntil, s.selfRenew = l, start.Add(s.o.LeaseDuration-s.margin()), start.Add(s.o.LeaseDuration/3)
	s.mu.Unlock()
}

// takeOver writes this replica's own membership Lease whatever it holds.
func (s *Shard) takeOver(ctx context.Context, name string, now time.Time) (*coordinationv1.Lease, error) {
	leases, err := s.store.list(ctx)
	if err != nil {
		return nil, err
	}
	for i := range leases {
		if leases[i].Name == name {
			next := leases[i].DeepCopy()
			fresh := s.newLease(name, RoleReplica, "", now)
			next.Spec, next.Annotations = fresh.Spec, fresh.Annotations
			return s.store.update(ctx, next)
		}
	}
	return s.store.create(ctx, s.newLease(name, RoleReplica, "", now))
}

func (s *Shard) newLease(name, role, cluster string, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LeaseRoleLabel: role}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(s.o.Identity),
			LeaseDurationSeconds: ptr.To(leaseSeconds(s.o.LeaseDuration)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
	if cluster != "" {
		l.Annotations = map[string]string{ClusterAnnotation: cluster}
	}
	if role == RoleReplica && len(s.o.Annotations) > 0 {
		l.Annotations = maps.Clone(s.o.Annotations)
	}
	return l
}

// leaseSeconds is d in whole seconds, rounded up: a Lease must not tell
// the others that it expires before its holder stops writing.
func leaseSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// acquire takes a member's fence when it is free: missing, released, or
// expired as this replica measures it.
func (s *Shard) acquire(ctx context.Context, c string, current *coordinationv1.Lease) {
	start := s.now()
	var (
		l   *coordinationv1.Lease
		err error
	)
	if current == nil {
		l, err = s.store.create(ctx, s.newLease(FenceLeaseName(c), RoleFence, c, start))
	} else {
		s.mu.Lock()
		free := s.expiredLocked(current.Name, current, start)
		s.mu.Unlock()
		if !free {
			return
		}
		next := current.DeepCopy()
		transitions := ptr.Deref(next.Spec.LeaseTransitions, 0) + 1
		next.Spec = s.newLease(next.Name, RoleFence, c, start).Spec
		next.Spec.LeaseTransitions = &transitions
		l, err = s.store.update(ctx, next)
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			s.o.Log.Error(err, "taking the fence of a member cluster", "cluster", c)
		}
		return
	}
	s.mu.Lock()
	s.held[c] = &fence{lease: l, until: start.Add(s.o.LeaseDuration - s.margin()), renew: start.Add(s.o.LeaseDuration / 3)}
	s.mu.Unlock()
	fenceChanges.WithLabelValues("acquired").Inc()
	s.o.Log.Info("now serving member cluster", "cluster", c, "replica", s.o.Identity)
	if s.o.Handler != nil {
		s.o.Handler.Acquired(c)
	}
}

func (s *Shard) renewFence(ctx context.Context, c string) {
	f, ok := s.heldFence(c)
	if !ok || s.now().Before(f.renew) {
		return
	}
	start := s.now()
	next := f.lease.DeepCopy()
	next.Spec.RenewTime = &metav1.MicroTime{Time: start}
	l, err := s.store.update(ctx, next)
	if apierrors.IsConflict(err) {
		// An earlier renewal whose answer was lost (a timeout) may have
		// been written: the fence is still ours while its Lease names this
		// replica with the acquireTime this replica took it with, which a
		// replica that took it since would have replaced.
		if cur, gerr := s.store.get(ctx, next.Name); gerr == nil && sameHolding(cur, f.lease) {
			next = cur.DeepCopy()
			next.Spec.RenewTime = &metav1.MicroTime{Time: start}
			l, err = s.store.update(ctx, next)
		}
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Someone else wrote our fence: it was taken from us.
			s.lose(c, "the fence Lease was changed by another writer")
			return
		}
		if ctx.Err() == nil {
			s.o.Log.Error(err, "renewing the fence of a member cluster", "cluster", c)
		}
		return
	}
	s.mu.Lock()
	if cur := s.held[c]; cur == f {
		f.lease, f.until, f.renew = l, start.Add(s.o.LeaseDuration-s.margin()), start.Add(s.o.LeaseDuration/3)
	}
	s.mu.Unlock()
}

// sameHolding reports whether cur is the holding of held: the same holder,
// who took it at the same time.
func sameHolding(cur, held *coordinationv1.Lease) bool {
	a, b := cur.Spec, held.Spec
	return a.HolderIdentity != nil && b.HolderIdentity != nil && *a.HolderIdentity == *b.HolderIdentity &&
		a.AcquireTime != nil && b.AcquireTime != nil && a.AcquireTime.Equal(b.AcquireTime)
}

// renewHeld renews the fences held that are due, when a step cannot go on
// to read the Leases or the members: renewing needs neither, and the
// fences stay this replica's until it can see whether they should move.
func (s *Shard) renewHeld(ctx context.Context) {
	for _, c := range s.Held() {
		s.renewFence(ctx, c)
	}
}

// release hands a fence over: writes stop first, then the Lease is freed
// (or deleted, for a member that left) so its next owner need not wait.
func (s *Shard) release(ctx context.Context, c string, remove bool) {
	f, ok := s.heldFence(c)
	if !ok {
		return
	}
	// Holds answers false from here on, so no new write starts while the
	// handler waits for those under way.
	s.mu.Lock()
	delete(s.held, c)
	s.mu.Unlock()
	if s.o.Handler != nil {
		s.o.Handler.Releasing(c)
	}
	var err error
	if remove {
		err = s.store.delete(ctx, f.lease.Name, f.lease.ResourceVersion)
	} else {
		next := f.lease.DeepCopy()
		next.Spec.HolderIdentity = ptr.To("")
		next.Spec.RenewTime = nil
		_, err = s.store.update(ctx, next)
	}
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		s.o.Log.Error(err, "freeing the fence of a member cluster; it expires by itself (a member's that left is deleted later)", "cluster", c)
	}
	fenceChanges.WithLabelValues("released").Inc()
	s.o.Log.Info("handed member cluster over", "cluster", c, "replica", s.o.Identity)
}

// lose drops a fence this replica can no longer vouch for.
func (s *Shard) lose(c, why string) {
	s.mu.Lock()
	delete(s.held, c)
	s.mu.Unlock()
	if s.o.Handler != nil {
		s.o.Handler.Releasing(c)
	}
	fenceChanges.WithLabelValues("lost").Inc()
	s.o.Log.Info("lost member cluster", "cluster", c, "replica", s.o.Identity, "reason", why)
}

// loseExpired drops the fences whose renewal failed for too long.
func (s *Shard) loseExpired() {
	now := s.now()
	var expired []string
	s.mu.Lock()
	for c, f := range s.held {
		if !now.Before(f.until) {
			expired = append(expired, c)
		}
	}
	s.mu.Unlock()
	for _, c := range expired {
		s.lose(c, "the fence could not be renewed in time")
	}
}
