// Package planner decides how many replicas of a federated workload each
// member cluster runs, from a ReplicaSchedulingPreference's numbers, the
// candidate clusters, their estimated capacity and the current distribution.
// It is a pure function of those inputs, with KubeFed's algorithm as the
// preferred distribution, so that the scheduling controller stays thin and
// every decision is covered by table and fuzz tests.
package planner
