// Package clusterclient is the one way the control plane reaches member
// clusters: RESTConfig turns a KubeFedCluster and its Secret into a
// rest.Config with KubeFed's endpoint, CA, token, TLS and proxy semantics.
// Registry caches the resulting clients per cluster and rebuilds them when
// the cluster's spec or Secret changes, so every controller shares them.
package clusterclient
