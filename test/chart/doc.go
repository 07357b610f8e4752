// Package chart tests the Helm chart in charts/kubefed: that its CRDs and
// default types are current copies of config/, that it lints and renders
// what the control plane needs in both scopes, and that the controller-manager
// runs on the rights of the chart's own ServiceAccount on a real host cluster.
package chart
