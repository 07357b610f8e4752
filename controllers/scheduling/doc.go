// Package scheduling is the ReplicaSchedulingPreference controller: it
// spreads the replicas of the federated workload of the same namespace and
// name over the member clusters, by writing the workload's
// spec.placement.clusters and /spec/replicas overrides, and reports what it
// decided in the preference's status.
//
// The plan itself comes from pkg/planner. This package gathers its inputs:
// the candidate clusters (KubeFedClusters, optionally intersected with the
// workload's clusterSelector), their readiness with a failover toleration,
// and their capacity as estimated from pods that stay unschedulable in
// them. docs/scheduling.md describes the semantics.
package scheduling
