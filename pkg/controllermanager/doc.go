// Package controllermanager assembles the control plane: it reads the
// KubeFedConfig, builds a controller-runtime manager with leader election,
// metrics and health endpoints, and registers every controller. A change of
// the KubeFedConfig restarts the controllers in-process with the new settings.
package controllermanager
