// Package cluster is the KubeFedCluster controller: it probes every member
// cluster of the KubeFed namespace in its own worker and writes the member's
// health and capacity into the KubeFedCluster status, as KubeFed did.
// It also publishes which members are ready, through ReadinessTracker, to the
// controllers that must only propagate to ready members.
//
// # Conditions
//
// A probe GETs /readyz, or /healthz where /readyz answers 404 or 403. The
// conditions carry KubeFed's values:
//
//   - "ok": Ready=True/ClusterReady "/healthz responded with ok", and
//     Offline=False/ClusterReachable.
//   - any other HTTP answer, including 401 for a wrong token and 500 from a
//     failing check: Ready=False/ClusterNotReady with what the endpoint
//     answered, and Offline=False/ClusterReachable. An answer proves the
//     network path works, so it is "reachable but not ready"; the message and
//     a RetrievingClusterHealthFailed event point at the cause.
//   - no answer (refused, timeout, TLS verification failure):
//     Offline=True/ClusterNotReachable, and Ready=False/ClusterNotReady.
//   - a configuration that cannot be used (missing Secret or token, bad CA
//     PEM, bad endpoint or proxy): Ready=False/ClusterNotReady with a message
//     starting "malformed cluster config:", a MalformedClusterConfig event,
//     and Offline left as it was, since reachability was not probed.
//
// KubeFed wrote only Offline=True for an unreachable member and only
// Ready=True for a healthy one. Writing both types in every state is
// additive: every condition KubeFed users match on is still there with the
// same reason, while the READY printer column, `kubectl wait
// --for=condition=Ready=false` and lastTransitionTime work in every state.
//
// # Debounce and writes
//
// A Ready member is reported not ready after FailureThreshold consecutive
// failed probes, a not ready one Ready after SuccessThreshold successes; the
// first observation, changes between not ready and offline, and malformed
// configuration apply at once. lastTransitionTime moves only when a
// condition's status changes. A status in which only lastProbeTime would
// change is written at most every ProbeTimeWriteInterval (default one
// minute, never more often than Period) instead of every Period as KubeFed
// did: with many members that write per period is most of the controller's
// load on the host apiserver, and a one-minute-old lastProbeTime still shows
// the controller is alive. Every other change is written at once.
//
// # Capacity fields
//
// zones, region, kubernetesVersion, nodeSummary, resourceSummary and
// apiEnablements are collected from members that answered ok, when they
// become ready and then every SummaryPeriod (default one minute), because
// they change slowly and cost a list of all pods. Lists are served from the
// member's watch cache (resourceVersion=0); a part that fails, such as pods
// under KubeFed's Namespaced-scope join, keeps its previous value. The
// fields keep their last values while a member is not ready.
package cluster
