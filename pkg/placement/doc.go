// Package placement decides which member clusters a federated object goes to,
// from its spec.placement, the FederatedNamespace's placement and the known
// clusters. It is a pure function of those inputs so that the propagation
// controller can call it for every object without touching the API server.
package placement
