// Package sharding splits the member clusters between the live replicas of
// the controller-manager, through coordination.k8s.io Leases on the host:
// a membership Lease per replica says who is alive, rendezvous hashing over
// the live replicas says who should serve each member, and a fence Lease per
// member says who may write to it, so that two replicas never do at once.
package sharding
