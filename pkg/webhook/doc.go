// Package webhook holds the validating admission webhooks for the rules that
// CEL in the CRD schemas cannot express because they look beyond the object:
// a FederatedTypeConfig's types must be served by the host cluster, and a
// KubeFedCluster's Secret must exist. The controller-manager serves them when
// started with --webhook-port; the Helm chart registers them with
// webhook.enabled.
//
// # What is checked
//
// A FederatedTypeConfig is denied when the host does not serve
// spec.targetType or spec.federatedType as declared (group, version, kind,
// pluralName, scope), or when its name is not
// <targetType.pluralName>[.<targetType.group>], KubeFed's rule. The kinds are
// resolved with a discovery-backed RESTMapper that asks the API server again
// on every miss, so a CRD installed a moment before its FederatedTypeConfig
// (kubefedctl enable waits until it is Established) is found; a CRD deleted
// since it was last looked up may still be found, which only errs towards
// admitting.
//
// A KubeFedCluster is denied when no Secret named spec.secretRef.name exists
// in its namespace. Denial rather than a warning is safe for the usual ways
// a KubeFedCluster is created: kubefedctl join creates the Secret before the
// KubeFedCluster (and deletes it again if the KubeFedCluster is refused), and
// Helm, Argo CD, Flux and Velero apply Secrets before custom resources. Only
// the metadata of the Secret is read, with an uncached reader: a cache could
// lag behind the Secret join created a moment before.
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
// or the Secret read fails), it admits the object with a warning. The
// controllers therefore still check everything the webhooks check and
// report it in status: the webhooks only move the error to the moment of
// `kubectl apply`.
package webhook
