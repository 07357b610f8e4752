// Package sync is the propagation engine: for every enabled
// FederatedTypeConfig it keeps each member cluster's copy of every federated
// object equal to the object's template, placement and overrides, and writes
// the outcome to the federated object's status.
//
// One Engine serves every type. Each type gets a host informer of its
// federated objects, a work queue drained by many workers, and a
// subscription to the shared member caches of pkg/informermanager, so that
// a change in a member re-enqueues only the federated object it belongs to.
// A member copy is written only when it differs from what is desired: the
// desired object's hash, stored in an annotation of the copy, tells a
// template or override change, and a comparison of the desired fields with
// the copy tells a change made by hand (drift). Steady state and a restart
// over propagated objects therefore write nothing.
package sync
