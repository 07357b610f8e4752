// Package webhook holds the validating admission webhooks for the rules that
// CEL in the CRD schemas cannot express because they look beyond the object:
// a FederatedTypeConfig must declare its types as the host cluster serves
// them, and a KubeFedCluster's Secret should exist. The controller-manager
// serves them when started with --webhook-port; the Helm chart registers
// them with webhook.enabled.
//
// # What is checked
//
// A FederatedTypeConfig is denied when the host serves spec.targetType or
// spec.federatedType otherwise than declared: its plural name with another
// kind, or its kind with another pluralName or scope. A type the host does
// not serve at all (no such group, version or kind) is admitted with a
// warning naming it, as KubeFed's webhook admitted it: KubeFed's kubefedctl
// enable creates the CRD and the FederatedTypeConfig without waiting for
// the CRD to be Established, and a GitOps tool may apply the
// FederatedTypeConfig first; the type-config controller reports
// TargetTypeNotFound or FederatedTypeNotFound and looks again until it is
// served. The kinds are resolved with a discovery-backed RESTMapper that
// asks the API server again on every miss, so a CRD installed a moment
// before its FederatedTypeConfig is checked; a CRD deleted since it was last
// looked up may still be found, which only errs towards admitting.
//
// A KubeFedCluster whose spec.secretRef.name names no Secret in its
// namespace is admitted with a warning: a Secret made asynchronously (by a
// SealedSecret or an ExternalSecret controller) may follow it, and a GitOps
// tool that does not retry would never apply a denied KubeFedCluster again.
// The cluster controller reports the missing Secret as a malformed cluster
// config until it exists. Only the metadata of the Secret is read, with an
// uncached reader: a cache could lag behind the Secret join created a moment
// before.
//
// # What is never denied
//
// An update is judged only on what it changes: the types are checked again
// only when they change, the Secret only when secretRef.name changes. So
// removing a finalizer after a CRD or a Secret is gone always succeeds, and
// no object becomes uneditable because of something outside it.
//
// The webhooks fail open. The configuration has failurePolicy Ignore and a
// 5 second timeout, so a controller-manager that is down, unreachable or slow
// never blocks a write; and when the handler itself cannot decide (discovery
// or the Secret read fails), or what it misses may still come, it admits the
// object with a warning. The controllers therefore still check everything
// the webhooks check and report it in status: the webhooks only move the
// error, or a warning of it, to the moment of `kubectl apply`.
package webhook
