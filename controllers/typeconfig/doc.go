// Package typeconfig runs the FederatedTypeConfig controller: it starts,
// restarts and stops the per-type propagation machinery at runtime as
// FederatedTypeConfigs come, change and go, with no restart of the process.
// It reports in each FTC's status whether its controllers run and why not,
// and which ready member clusters serve the type's target type.
package typeconfig
