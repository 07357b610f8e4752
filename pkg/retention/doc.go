// Package retention decides what an update of a member object keeps from the
// object already in the member cluster, such as allocated IPs and node ports,
// and handles the kubefed.io/managed label. It mutates the desired object
// in place and never the member's, which usually comes from an informer cache.
package retention
