// Package sync is the propagation engine: for every enabled
// FederatedTypeConfig it keeps each member cluster's copy of every federated
// object equal to the object's template, placement and overrides, and writes
// the outcome to the federated object's status.
//
// The unit of work is (federated object, member cluster). Per type, a
// planner turns each federated object into one plan per member (sync,
// remove, delete or release) without waiting for any member; per member
// cluster, a dispatcher with its own queue, workers and backoff carries out
// the plans of every type, so a slow or hung member holds only its own
// workers; per type, a status worker aggregates the members' outcomes into
// one status write per burst. A change of a member's copy goes to that
// member's dispatcher alone, through the shared member caches of
// pkg/informermanager. A member copy is written only when it differs from
// what is desired: the desired object's hash, stored in an annotation of the
// copy, tells a template or override change, and a comparison of the desired
// fields with the copy tells a change made by hand (drift). Steady state and
// a restart over propagated objects therefore write nothing.
package sync
