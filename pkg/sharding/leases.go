package sharding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and annotations of the Leases the replicas share.
const (
	// LeaseRoleLabel marks the Leases of sharding; its value is
	// RoleReplica or RoleFence.
	LeaseRoleLabel = "kubefed.io/shard-lease"
	RoleReplica    = "replica"
	RoleFence      = "fence"
	// ClusterAnnotation names the member cluster a fence Lease is for.
	ClusterAnnotation = "kubefed.io/cluster"
)

// FenceLeaseName is the name of the Lease that fences writes to a member
// cluster. Names too long for a Lease are shortened with a hash.
func FenceLeaseName(cluster string) string { return leaseName("kubefed-cluster-", cluster) }

// ReplicaLeaseName is the name of a replica's membership Lease.
func ReplicaLeaseName(identity string) string { return leaseName("kubefed-replica-", identity) }

func leaseName(prefix, name string) string {
	const max = 253
	if len(prefix)+len(name) <= max {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:8])
	return prefix + name[:max-len(prefix)-len(h)-1] + "-" + h
}

// leaseStore is what the shard does with Leases; tests use an in-memory one.
type leaseStore interface {
	list(ctx context.Context) ([]coordinationv1.Lease, error)
	get(ctx context.Context, name string) (*coordinationv1.Lease, error)
	create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// update writes l if it still has l's resourceVersion.
	update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error)
	delete(ctx context.Context, name, resourceVersion string) error
}

// timedLeases bounds every call of a leaseStore. The shard's step makes
// its Lease calls one after the other: one that hangs (a host apiserver
// that takes the request and never answers) would hold every renewal
// behind it, the replica's own included, and keep fences this replica can
// no longer vouch for from being dropped at their deadline.
type timedLeases struct {
	store   leaseStore
	timeout time.Duration
}

func (t timedLeases) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.store.list(ctx)
}

func (t timedLeases) get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.store.get(ctx, name)
}

func (t timedLeases) create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.store.create(ctx, l)
}

func (t timedLeases) update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.store.update(ctx, l)
}

func (t timedLeases) delete(ctx context.Context, name, resourceVersion string) error {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.store.delete(ctx, name, resourceVersion)
}

type kubeLeases struct {
	c         kubernetes.Interface
	namespace string
}

func (k kubeLeases) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	l, err := k.c.CoordinationV1().Leases(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: LeaseRoleLabel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func (k kubeLeases) get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	return k.c.CoordinationV1().Leases(k.namespace).Get(ctx, name, metav1.GetOptions{})
}

func (k kubeLeases) create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return k.c.CoordinationV1().Leases(k.namespace).Create(ctx, l, metav1.CreateOptions{})
}

func (k kubeLeases) update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return k.c.CoordinationV1().Leases(k.namespace).Update(ctx, l, metav1.UpdateOptions{})
}

func (k kubeLeases) delete(ctx context.Context, name, resourceVersion string) error {
	opts := metav1.DeleteOptions{}
	if resourceVersion != "" {
		opts.Preconditions = &metav1.Preconditions{ResourceVersion: &resourceVersion}
	}
	return k.c.CoordinationV1().Leases(k.namespace).Delete(ctx, name, opts)
}

// FenceHolders reads the fence Leases in namespace through c and maps each
// member cluster to the replica holding its fence ("" while it is handed
// over); it is empty when replicas do not scale out.
func FenceHolders(ctx context.Context, c client.Reader, namespace string) (map[string]string, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{LeaseRoleLabel: RoleFence}); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(leases.Items))
	for _, l := range leases.Items {
		out[l.Annotations[ClusterAnnotation]] = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return out, nil
}
