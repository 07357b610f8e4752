// Package kubefedctl implements the kubefedctl command line, the KubeFed
// users' tool for registering member clusters with a control plane (join,
// unjoin) and for choosing what it federates (enable, disable, federate,
// orphaning-deletion). Each verb lives in its own file and shares the
// kubeconfig handling and output conventions of this package; cmd/kubefedctl
// only calls NewRootCommand.
package kubefedctl
