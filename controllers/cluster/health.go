package cluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/metrics"
)

// Health is a member's health as the controller reports it.
type Health int

const (
	// HealthUnknown means no Ready condition has been written yet.
	HealthUnknown Health = iota
	// HealthReady means the member answered its health endpoint with ok.
	HealthReady
	// HealthNotReady means the member answered, but not with ok, or its
	// configuration is malformed.
	HealthNotReady
	// HealthOffline means the member could not be reached.
	HealthOffline
)

// String names h for logs.
func (h Health) String() string {
	switch h {
	case HealthReady:
		return "Ready"
	case HealthNotReady:
		return "NotReady"
	case HealthOffline:
		return "Offline"
	default:
		return "Unknown"
	}
}

// Condition messages; the first and the KubeFed prefix of the others are what
// KubeFed wrote, so that existing dashboards and scripts keep matching.
const (
	msgHealthy      = "/healthz responded with ok"
	msgReachable    = "cluster is reachable"
	msgNotReachable = "cluster is not reachable"
	msgMalformed    = "malformed cluster config"
)

// Event reasons recorded on a KubeFedCluster.
const (
	// EventMalformedClusterConfig: the cluster or its Secret cannot be turned into a client.
	EventMalformedClusterConfig = "MalformedClusterConfig"
	// EventRetrievingClusterHealthFailed: a health probe did not answer ok.
	EventRetrievingClusterHealthFailed = "RetrievingClusterHealthFailed"
)

// maxBodyInMessage bounds how much of what a member says, a health
// endpoint's answer or its agent's report, goes into a condition message.
const maxBodyInMessage = 256

// eventNoteLimit is the most an events.k8s.io Event's note may hold; a longer
// one is refused by the API server.
const eventNoteLimit = 1024

// eventNotePrefix starts the note of an event about a failed probe.
const eventNotePrefix = "cluster health check failed: "

// truncationMark ends a text that truncate cut.
const truncationMark = "..."

// maxMessage bounds every condition message, so that the event note made of
// it stays within eventNoteLimit.
const maxMessage = eventNoteLimit - len(eventNotePrefix) - len(truncationMark)

// truncate returns s as valid UTF-8 of at most limit bytes plus
// truncationMark when it was cut, cut between runes. A message must come out
// the same after the API server stored it (which replaces invalid UTF-8), or
// it would differ from the next probe's every time and be written every
// period.
func truncate(s string, limit int) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncationMark
}

// observation is the outcome of one probe of a member.
type observation struct {
	// health is HealthReady, HealthNotReady or HealthOffline.
	health Health
	// message explains a health other than ready.
	message string
	// malformed marks a configuration that could not be probed at all; its
	// health is HealthNotReady and reachability is unknown.
	malformed bool
	// agentSummary is what a Pull-mode member's agent read of its cluster,
	// in its heartbeat; the control plane cannot read it itself.
	agentSummary *summary
	// noVerdict marks a probe that cannot judge the member yet: the
	// reported conditions stand and the probe counts for no threshold.
	noVerdict bool
}

func (o observation) ready() bool { return o.health == HealthReady }

// classifyResponse judges an HTTP answer of a health endpoint. Any answer,
// even 401 or 500, proves the member reachable, so only "ok" is ready and
// everything else is not ready; Offline is for members that do not answer.
func classifyResponse(path string, code int, body []byte) observation {
	body = bytes.TrimSpace(body)
	if code == http.StatusOK && strings.EqualFold(string(body), "ok") {
		return observation{health: HealthReady}
	}
	msg := fmt.Sprintf("%s responded with %d %s", path, code, http.StatusText(code))
	if code == http.StatusOK {
		msg = path + " responded without ok"
	}
	if detail := summarizeBody(body); detail != "" && detail != http.StatusText(code) {
		msg += ": " + detail
	}
	if code == http.StatusUnauthorized {
		msg += " (check the token in the cluster's Secret)"
	}
	return observation{health: HealthNotReady, message: msg}
}

// summarizeBody keeps the failed checks of a /readyz or /healthz answer, the
// message of a Kubernetes Status, or the start of any other body, so that the
// message says what went wrong without flooding the status.
func summarizeBody(body []byte) string {
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
		return truncate(status.Message, maxBodyInMessage)
	}
	var failed []string
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	s := strings.Join(failed, "; ")
	if s == "" {
		s = strings.Join(strings.Fields(string(body)), " ")
	}
	return truncate(s, maxBodyInMessage)
}

// classifyError judges a probe that got no HTTP answer.
func classifyError(err error, timeout time.Duration) observation {
	return observation{health: HealthOffline, message: msgNotReachable + ": " + describeError(err, timeout)}
}

// describeError renders a transport error without the parts that change from
// one connection to the next (the local port, the request URL, the current
// time of an expired certificate's error), so that the condition message,
// and with it the status, stays put while the cause does.
func describeError(err error, timeout time.Duration) string {
	s := describeTransportError(err, timeout)
	var invalid x509.CertificateInvalidError
	if errors.As(err, &invalid) && invalid.Reason == x509.Expired && invalid.Cert != nil {
		// Go's text names the current time; the validity period says as
		// much and does not change from one probe to the next.
		s = strings.Replace(s, invalid.Error(), fmt.Sprintf("x509: certificate has expired or is not yet valid: it is valid from %s until %s",
			invalid.Cert.NotBefore.UTC().Format(time.RFC3339), invalid.Cert.NotAfter.UTC().Format(time.RFC3339)), 1)
	}
	return s
}

func describeTransportError(err error, timeout time.Duration) string {
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		if opErr.Addr != nil {
			return fmt.Sprintf("%s %s: %v", opErr.Op, opErr.Addr, opErr.Err)
		}
		return fmt.Sprintf("%s: %v", opErr.Op, opErr.Err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// malformed is the observation for a cluster whose configuration cannot be
// used.
func malformed(err error) observation {
	return observation{health: HealthNotReady, malformed: true, message: msgMalformed + ": " + err.Error()}
}

// thresholds are the debounce settings of Options.
type thresholds struct {
	failure, success int
}

// streak counts consecutive observations of the same readiness.
type streak struct {
	ready bool
	n     int
}

// observe extends the streak by one observation.
func (s streak) observe(ready bool) streak {
	if s.n > 0 && s.ready == ready {
		return streak{ready: ready, n: s.n + 1}
	}
	return streak{ready: ready, n: 1}
}

// reportedHealth reads the health the conditions report.
func reportedHealth(conds []fedv1b1.ClusterCondition) Health {
	ready := findCondition(conds, fedv1b1.ClusterReady)
	if ready == nil {
		// KubeFed wrote only an Offline condition for unreachable members.
		if off := findCondition(conds, fedv1b1.ClusterOffline); off != nil && off.Status == corev1.ConditionTrue {
			return HealthOffline
		}
		return HealthUnknown
	}
	if ready.Status == corev1.ConditionTrue {
		return HealthReady
	}
	if off := findCondition(conds, fedv1b1.ClusterOffline); off != nil && off.Status == corev1.ConditionTrue {
		return HealthOffline
	}
	return HealthNotReady
}

// adopt says whether obs replaces the reported health. A change between
// ready and not ready is debounced: it needs failure (or success)
// consecutive observations, counted by s, which ends with obs. Changes that
// keep the readiness (not ready to offline), the first observation, and
// malformed configuration, which is no flake, apply at once; a probe that
// gave no verdict never does.
func adopt(reported Health, obs observation, s streak, th thresholds) bool {
	switch {
	case obs.noVerdict:
		return false
	case obs.malformed, reported == HealthUnknown:
		return true
	case (reported == HealthReady) == obs.ready():
		return true
	case obs.ready():
		return s.n >= th.success
	default:
		return s.n >= th.failure
	}
}

// nextConditions returns the conditions after a probe at now. When obs is
// not adopted the reported conditions stand and only their probe time moves.
//
// Every state carries both condition types with KubeFed's values: healthy is
// Ready=True/ClusterReady, reachable but unhealthy Ready=False/ClusterNotReady
// with Offline=False/ClusterReachable, unreachable Offline=True/
// ClusterNotReachable. KubeFed left out Ready when unreachable and Offline
// when healthy; we add Ready=False/ClusterNotReady and Offline=False/
// ClusterReachable there so that the READY column and `kubectl wait` work in
// every state and lastTransitionTime is meaningful for both types. A
// malformed configuration sets Ready=False/ClusterNotReady and leaves
// Offline alone, since reachability was not probed.
func nextConditions(old []fedv1b1.ClusterCondition, obs observation, adopted bool, now metav1.Time) []fedv1b1.ClusterCondition {
	out := make([]fedv1b1.ClusterCondition, 0, 2)
	for _, c := range old {
		out = append(out, *c.DeepCopy())
	}
	if !adopted {
		for i := range out {
			out[i].LastProbeTime = now
		}
		return out
	}
	switch {
	case obs.malformed:
		out = setCondition(out, fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, obs.message, now)
	case obs.health == HealthReady:
		out = setCondition(out, fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, now)
		out = setCondition(out, fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, now)
	case obs.health == HealthNotReady:
		out = setCondition(out, fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, obs.message, now)
		out = setCondition(out, fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, now)
	case obs.health == HealthOffline:
		out = setCondition(out, fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, obs.message, now)
		out = setCondition(out, fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, obs.message, now)
	}
	return out
}

// setCondition sets one condition, moving lastTransitionTime only when the
// status changes; Ready is kept first for readers that look at conditions[0].
func setCondition(conds []fedv1b1.ClusterCondition, t fedv1b1.ClusterConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) []fedv1b1.ClusterCondition {
	c := fedv1b1.ClusterCondition{
		Type:               t,
		Status:             status,
		LastProbeTime:      now,
		LastTransitionTime: &now,
		Reason:             &reason,
		Message:            &message,
	}
	for i := range conds {
		if conds[i].Type != t {
			continue
		}
		if conds[i].Status == status && conds[i].LastTransitionTime != nil {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
		conds[i] = c
		return conds
	}
	if t == fedv1b1.ClusterReady {
		return append([]fedv1b1.ClusterCondition{c}, conds...)
	}
	return append(conds, c)
}

func findCondition(conds []fedv1b1.ClusterCondition, t fedv1b1.ClusterConditionType) *fedv1b1.ClusterCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// needsWrite says whether next must be written over old. Any change but the
// probe times is written at once; a change of probe times alone only once
// the written probe time is interval old, which saves a write per cluster
// and period while keeping lastProbeTime a liveness signal.
func needsWrite(old, next *fedv1b1.KubeFedClusterStatus, now time.Time, interval time.Duration) bool {
	if !apiequality.Semantic.DeepEqual(withoutProbeTimes(old), withoutProbeTimes(next)) {
		return true
	}
	var lastProbe time.Time
	for _, c := range old.Conditions {
		if c.LastProbeTime.After(lastProbe) {
			lastProbe = c.LastProbeTime.Time
		}
	}
	return now.Sub(lastProbe) >= interval
}

func withoutProbeTimes(s *fedv1b1.KubeFedClusterStatus) *fedv1b1.KubeFedClusterStatus {
	out := s.DeepCopy()
	for i := range out.Conditions {
		out.Conditions[i].LastProbeTime = metav1.Time{}
	}
	return out
}

// eventFor returns the event reason and note to record for obs, and the key
// that identifies the problem. An event is recorded only when the key differs
// from the previous probe's, so a lasting problem yields one event, not one
// per period; a healthy probe has the empty key and resets it.
func eventFor(obs observation) (reason, note, key string) {
	switch {
	case obs.malformed:
		return EventMalformedClusterConfig, obs.message, EventMalformedClusterConfig + "/" + obs.message
	case obs.ready():
		return "", "", ""
	default:
		note = eventNotePrefix + obs.message
		return EventRetrievingClusterHealthFailed, note, EventRetrievingClusterHealthFailed + "/" + obs.message
	}
}

// metricState maps the reported health to the state label of
// kubefedcluster_total.
func metricState(h Health) string {
	switch h {
	case HealthReady:
		return metrics.ClusterStateReady
	case HealthOffline:
		return metrics.ClusterStateOffline
	default:
		return metrics.ClusterStateNotReady
	}
}

// summaryDue says whether the heavier status fields are to be collected:
// only from a member that answered ok, at once when it was not reported
// ready before (so a member that becomes ready gets them in the same
// write), and otherwise every period.
func summaryDue(obs observation, reported Health, last, now time.Time, period time.Duration) bool {
	if !obs.ready() {
		return false
	}
	return reported != HealthReady || last.IsZero() || now.Sub(last) >= period
}
