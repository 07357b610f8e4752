package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/metrics"
)

func TestClassifyResponse(t *testing.T) {
	tests := []struct {
		name        string
		path        string
		code        int
		body        string
		wantHealth  Health
		wantMessage string
	}{
		{name: "ok", path: "/readyz", code: 200, body: "ok", wantHealth: HealthReady},
		{name: "ok with newline and other case", path: "/healthz", code: 200, body: "OK\n", wantHealth: HealthReady},
		{name: "200 without ok", path: "/readyz", code: 200, body: "maybe", wantHealth: HealthNotReady,
			wantMessage: "/readyz responded without ok: maybe"},
		{name: "failing readyz checks", path: "/readyz", code: 500,
			body:       "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n",
			wantHealth: HealthNotReady, wantMessage: "/readyz responded with 500 Internal Server Error: [-]etcd failed: reason withheld; [-]informer-sync failed: reason withheld"},
		{name: "wrong token is reachable but not ready", path: "/readyz", code: 401,
			body:       `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`,
			wantHealth: HealthNotReady, wantMessage: `/readyz responded with 401 Unauthorized (check the token in the cluster's Secret)`},
		{name: "Status message is kept", path: "/readyz", code: 429,
			body:       `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too many requests, please try again later","code":429}`,
			wantHealth: HealthNotReady, wantMessage: `/readyz responded with 429 Too Many Requests: too many requests, please try again later`},
		{name: "forbidden healthz", path: "/healthz", code: 403, body: "", wantHealth: HealthNotReady,
			wantMessage: "/healthz responded with 403 Forbidden"},
		{name: "long body is cut", path: "/readyz", code: 503, body: strings.Repeat("x", 1000), wantHealth: HealthNotReady,
			wantMessage: "/readyz responded with 503 Service Unavailable: " + strings.Repeat("x", maxBodyInMessage) + "..."},
		{name: "long Status message is cut", path: "/readyz", code: 500,
			body:       `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + strings.Repeat("x", 5000) + `","code":500}`,
			wantHealth: HealthNotReady, wantMessage: "/readyz responded with 500 Internal Server Error: " + strings.Repeat("x", maxBodyInMessage) + "..."},
		{name: "body is cut between runes", path: "/readyz", code: 503, body: "x" + strings.Repeat("é", 300), wantHealth: HealthNotReady,
			wantMessage: "/readyz responded with 503 Service Unavailable: x" + strings.Repeat("é", (maxBodyInMessage-1)/2) + "..."},
		{name: "invalid UTF-8 is replaced", path: "/readyz", code: 503, body: "bad \xff\xfe byte", wantHealth: HealthNotReady,
			wantMessage: "/readyz responded with 503 Service Unavailable: bad \uFFFD byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyResponse(tc.path, tc.code, []byte(tc.body))
			if got.health != tc.wantHealth || got.message != tc.wantMessage || got.malformed {
				t.Errorf("got %+v, want health %v message %q", got, tc.wantHealth, tc.wantMessage)
			}
		})
	}
}

func TestClassifyError(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/readyz", Err: &net.OpError{
		Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443},
		Err:  &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED},
	}}
	reset := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/readyz", Err: &net.OpError{
		Op: "read", Net: "tcp",
		Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 54321},
		Addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443},
		Err:    &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET},
	}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "refused", err: refused, want: "cluster is not reachable: dial 127.0.0.1:6443: connect: connection refused"},
		{name: "reset leaves out the local port", err: reset, want: "cluster is not reachable: read 127.0.0.1:6443: read: connection reset by peer"},
		{name: "deadline", err: fmt.Errorf("get: %w", context.DeadlineExceeded), want: "cluster is not reachable: no answer within 3s"},
		{name: "TLS", err: &url.Error{Op: "Get", URL: "https://x/readyz", Err: errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority")},
			want: "cluster is not reachable: tls: failed to verify certificate: x509: certificate signed by unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyError(tc.err, 3*time.Second)
			if got.health != HealthOffline || got.message != tc.want {
				t.Errorf("got %+v, want Offline %q", got, tc.want)
			}
		})
	}
}

// Go's error for an expired certificate names the current time; the
// message names the certificate's validity instead, so that it is the same
// at every probe.
func TestExpiredCertificateMessageIsStable(t *testing.T) {
	cert := &x509.Certificate{
		NotBefore: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:  time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC),
	}
	expired := func(now string) error {
		return &url.Error{Op: "Get", URL: "https://x/readyz", Err: &tls.CertificateVerificationError{
			Err: x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired, Detail: "current time " + now + " is after 2025-06-01T00:00:00Z"},
		}}
	}
	first := classifyError(expired("2026-01-01T00:00:00Z"), time.Second)
	second := classifyError(expired("2026-01-01T00:00:10Z"), time.Second)
	want := "cluster is not reachable: tls: failed to verify certificate: x509: certificate has expired or is not yet valid: " +
		"it is valid from 2025-01-01T00:00:00Z until 2025-06-01T00:00:00Z"
	if first.message != want || second.message != want {
		t.Errorf("messages\n%q\n%q\nwant %q", first.message, second.message, want)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{name: "short", in: "abc", max: 3, want: "abc"},
		{name: "long", in: "abcd", max: 3, want: "abc..."},
		{name: "cut inside a rune moves before it", in: "aéé", max: 4, want: "aé..."},
		{name: "invalid UTF-8 replaced", in: "a\xffb", max: 10, want: "a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := truncate(tc.in, tc.max); got != tc.want || !utf8.ValidString(got) {
				t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

func TestStreak(t *testing.T) {
	var s streak
	for i, ready := range []bool{true, true, false, false, false, true} {
		s = s.observe(ready)
		want := []int{1, 2, 1, 2, 3, 1}[i]
		if s.n != want || s.ready != ready {
			t.Fatalf("after observation %d: %+v, want n=%d ready=%v", i, s, want, ready)
		}
	}
}

func TestAdopt(t *testing.T) {
	th := thresholds{failure: 3, success: 2}
	ready := observation{health: HealthReady}
	notReady := observation{health: HealthNotReady, message: "500"}
	offline := observation{health: HealthOffline, message: "refused"}
	bad := malformed(errors.New("no token"))

	tests := []struct {
		name     string
		reported Health
		obs      observation
		run      int
		want     bool
	}{
		{name: "first observation ready", reported: HealthUnknown, obs: ready, run: 1, want: true},
		{name: "first observation offline", reported: HealthUnknown, obs: offline, run: 1, want: true},
		{name: "ready stays ready", reported: HealthReady, obs: ready, run: 7, want: true},
		{name: "1st failure keeps Ready", reported: HealthReady, obs: offline, run: 1, want: false},
		{name: "2nd failure keeps Ready", reported: HealthReady, obs: notReady, run: 2, want: false},
		{name: "3rd failure flips", reported: HealthReady, obs: offline, run: 3, want: true},
		{name: "1st success keeps not ready", reported: HealthOffline, obs: ready, run: 1, want: false},
		{name: "2nd success flips", reported: HealthNotReady, obs: ready, run: 2, want: true},
		{name: "not ready to offline at once", reported: HealthNotReady, obs: offline, run: 1, want: true},
		{name: "offline to not ready at once", reported: HealthOffline, obs: notReady, run: 1, want: true},
		{name: "malformed flips Ready at once", reported: HealthReady, obs: bad, run: 1, want: true},
		{name: "no verdict keeps the reported health", reported: HealthOffline, obs: observation{noVerdict: true}, run: 5, want: false},
		{name: "no verdict writes nothing first", reported: HealthUnknown, obs: observation{noVerdict: true}, run: 1, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := streak{ready: tc.obs.ready(), n: tc.run}
			if got := adopt(tc.reported, tc.obs, s, th); got != tc.want {
				t.Errorf("adopt = %v, want %v", got, tc.want)
			}
		})
	}
}

// cond is a compact condition for table tests.
type cond struct {
	typ        fedv1b1.ClusterConditionType
	status     corev1.ConditionStatus
	reason     string
	message    string
	probe      time.Time
	transition time.Time
}

func toConds(cs ...cond) []fedv1b1.ClusterCondition {
	var out []fedv1b1.ClusterCondition
	for _, c := range cs {
		reason, message := c.reason, c.message
		tt := metav1.NewTime(c.transition)
		out = append(out, fedv1b1.ClusterCondition{
			Type: c.typ, Status: c.status, Reason: &reason, Message: &message,
			LastProbeTime: metav1.NewTime(c.probe), LastTransitionTime: &tt,
		})
	}
	return out
}

func TestNextConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	readyConds := toConds(
		cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, t0, t0},
		cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t0, t0},
	)
	offlineConds := toConds(
		cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "cluster is not reachable: x", t0, t0},
		cond{fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, "cluster is not reachable: x", t0, t0},
	)
	// KubeFed's shape for an unreachable member: Offline only.
	kubefedOffline := toConds(
		cond{fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, msgNotReachable, t0, t0},
	)

	tests := []struct {
		name    string
		old     []fedv1b1.ClusterCondition
		obs     observation
		adopted bool
		want    []fedv1b1.ClusterCondition
	}{
		{
			name: "first healthy probe", obs: observation{health: HealthReady}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, "/healthz responded with ok", t1, t1},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, "cluster is reachable", t1, t1},
			),
		},
		{
			name: "still healthy keeps transition times", old: readyConds, obs: observation{health: HealthReady}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, t1, t0},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t1, t0},
			),
		},
		{
			name: "debounced failure only moves probe times", old: readyConds, obs: observation{health: HealthOffline, message: "cluster is not reachable: y"}, adopted: false,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, t1, t0},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t1, t0},
			),
		},
		{
			name: "ready to offline", old: readyConds, obs: observation{health: HealthOffline, message: "cluster is not reachable: y"}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "cluster is not reachable: y", t1, t1},
				cond{fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, "cluster is not reachable: y", t1, t1},
			),
		},
		{
			name: "offline to reachable but not ready", old: offlineConds, obs: observation{health: HealthNotReady, message: "/readyz responded with 401 Unauthorized"}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "/readyz responded with 401 Unauthorized", t1, t0},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t1, t1},
			),
		},
		{
			name: "offline to ready", old: offlineConds, obs: observation{health: HealthReady}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, t1, t1},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t1, t1},
			),
		},
		{
			name: "KubeFed's offline status gains Ready first", old: kubefedOffline, obs: observation{health: HealthOffline, message: "cluster is not reachable: z"}, adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "cluster is not reachable: z", t1, t1},
				cond{fedv1b1.ClusterOffline, corev1.ConditionTrue, fedv1b1.ReasonClusterNotReachable, "cluster is not reachable: z", t1, t0},
			),
		},
		{
			name: "malformed leaves Offline untouched", old: readyConds, obs: malformed(errors.New(`Secret ns/s has no "token" key`)), adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, `malformed cluster config: Secret ns/s has no "token" key`, t1, t1},
				cond{fedv1b1.ClusterOffline, corev1.ConditionFalse, fedv1b1.ReasonClusterReachable, msgReachable, t0, t0},
			),
		},
		{
			name: "malformed first observation has Ready only", obs: malformed(errors.New("bad")), adopted: true,
			want: toConds(
				cond{fedv1b1.ClusterReady, corev1.ConditionFalse, fedv1b1.ReasonClusterNotReady, "malformed cluster config: bad", t1, t1},
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := fedv1b1.KubeFedClusterStatus{Conditions: tc.old}
			before := old.DeepCopy()
			got := nextConditions(tc.old, tc.obs, tc.adopted, metav1.NewTime(t1))
			if d := diffConds(got, tc.want); d != "" {
				t.Error(d)
			}
			if d := diffConds(old.Conditions, before.Conditions); d != "" {
				t.Errorf("the old conditions were modified: %s", d)
			}
		})
	}
}

func diffConds(got, want []fedv1b1.ClusterCondition) string {
	render := func(cs []fedv1b1.ClusterCondition) string {
		var b strings.Builder
		for _, c := range cs {
			tt := "nil"
			if c.LastTransitionTime != nil {
				tt = c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(&b, "\n  %s=%s reason=%s message=%q probe=%s transition=%s", c.Type, c.Status, deref(c.Reason), deref(c.Message),
				c.LastProbeTime.UTC().Format(time.RFC3339), tt)
		}
		return b.String()
	}
	if g, w := render(got), render(want); g != w {
		return fmt.Sprintf("conditions differ\ngot:%s\nwant:%s", g, w)
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestReportedHealth(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		name  string
		conds []fedv1b1.ClusterCondition
		want  Health
	}{
		{name: "none", want: HealthUnknown},
		{name: "ready", conds: toConds(cond{typ: fedv1b1.ClusterReady, status: corev1.ConditionTrue, probe: t0}), want: HealthReady},
		{name: "not ready, reachable", conds: toConds(
			cond{typ: fedv1b1.ClusterReady, status: corev1.ConditionFalse},
			cond{typ: fedv1b1.ClusterOffline, status: corev1.ConditionFalse}), want: HealthNotReady},
		{name: "not ready, offline", conds: toConds(
			cond{typ: fedv1b1.ClusterReady, status: corev1.ConditionFalse},
			cond{typ: fedv1b1.ClusterOffline, status: corev1.ConditionTrue}), want: HealthOffline},
		{name: "KubeFed offline without Ready", conds: toConds(cond{typ: fedv1b1.ClusterOffline, status: corev1.ConditionTrue}), want: HealthOffline},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reportedHealth(tc.conds); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNeedsWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := fedv1b1.KubeFedClusterStatus{Conditions: toConds(
		cond{fedv1b1.ClusterReady, corev1.ConditionTrue, fedv1b1.ReasonClusterReady, msgHealthy, t0, t0},
	)}
	probed := func(at time.Time) *fedv1b1.KubeFedClusterStatus {
		s := base.DeepCopy()
		s.Conditions[0].LastProbeTime = metav1.NewTime(at)
		return s
	}
	tests := []struct {
		name string
		next *fedv1b1.KubeFedClusterStatus
		now  time.Time
		want bool
	}{
		{name: "probe time only, recent", next: probed(t0.Add(30 * time.Second)), now: t0.Add(30 * time.Second), want: false},
		{name: "probe time only, interval passed", next: probed(t0.Add(time.Minute)), now: t0.Add(time.Minute), want: true},
		{name: "version changed", next: func() *fedv1b1.KubeFedClusterStatus {
			s := probed(t0.Add(time.Second))
			s.KubernetesVersion = "v1.37.2"
			return s
		}(), now: t0.Add(time.Second), want: true},
		{name: "message changed", next: func() *fedv1b1.KubeFedClusterStatus {
			s := probed(t0.Add(time.Second))
			m := "other"
			s.Conditions[0].Message = &m
			return s
		}(), now: t0.Add(time.Second), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsWrite(&base, tc.next, tc.now, time.Minute); got != tc.want {
				t.Errorf("needsWrite = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEventFor(t *testing.T) {
	tests := []struct {
		name       string
		obs        observation
		wantReason string
		wantNote   string
	}{
		{name: "healthy", obs: observation{health: HealthReady}},
		{name: "malformed", obs: malformed(errors.New(`Secret ns/s does not exist`)),
			wantReason: EventMalformedClusterConfig, wantNote: "malformed cluster config: Secret ns/s does not exist"},
		{name: "offline", obs: observation{health: HealthOffline, message: "cluster is not reachable: refused"},
			wantReason: EventRetrievingClusterHealthFailed, wantNote: "cluster health check failed: cluster is not reachable: refused"},
		{name: "not ready", obs: observation{health: HealthNotReady, message: "/readyz responded with 401 Unauthorized"},
			wantReason: EventRetrievingClusterHealthFailed, wantNote: "cluster health check failed: /readyz responded with 401 Unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, note, key := eventFor(tc.obs)
			if reason != tc.wantReason || note != tc.wantNote {
				t.Errorf("got %q %q, want %q %q", reason, note, tc.wantReason, tc.wantNote)
			}
			if (key == "") != (reason == "") {
				t.Errorf("key %q must be empty exactly when no event is due", key)
			}
		})
	}
	// The same problem twice has the same key, a different one another.
	_, _, k1 := eventFor(observation{health: HealthOffline, message: "a"})
	_, _, k2 := eventFor(observation{health: HealthOffline, message: "a"})
	_, _, k3 := eventFor(observation{health: HealthNotReady, message: "b"})
	if k1 != k2 || k1 == k3 {
		t.Errorf("keys %q %q %q: want the first two equal and the third different", k1, k2, k3)
	}
}

func TestSummaryDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := observation{health: HealthReady}
	tests := []struct {
		name     string
		obs      observation
		reported Health
		last     time.Time
		now      time.Time
		want     bool
	}{
		{name: "never collected", obs: ready, reported: HealthReady, now: t0, want: true},
		{name: "collected recently", obs: ready, reported: HealthReady, last: t0, now: t0.Add(30 * time.Second), want: false},
		{name: "period passed", obs: ready, reported: HealthReady, last: t0, now: t0.Add(time.Minute), want: true},
		{name: "becoming ready", obs: ready, reported: HealthOffline, last: t0, now: t0.Add(time.Second), want: true},
		{name: "not answering ok", obs: observation{health: HealthNotReady}, reported: HealthReady, now: t0, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := summaryDue(tc.obs, tc.reported, tc.last, tc.now, time.Minute); got != tc.want {
				t.Errorf("summaryDue = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMetricState(t *testing.T) {
	for h, want := range map[Health]string{
		HealthReady:    metrics.ClusterStateReady,
		HealthNotReady: metrics.ClusterStateNotReady,
		HealthOffline:  metrics.ClusterStateOffline,
		HealthUnknown:  metrics.ClusterStateNotReady,
	} {
		if got := metricState(h); got != want {
			t.Errorf("metricState(%v) = %q, want %q", h, got, want)
		}
	}
}

func TestOptionsFromConfig(t *testing.T) {
	period, timeout := metav1.Duration{Duration: 5 * time.Second}, metav1.Duration{Duration: time.Second}
	f, s := int64(4), int64(2)
	o, err := OptionsFromConfig("ns", &fedv1b1.ClusterHealthCheckConfig{
		Period: &period, Timeout: &timeout, FailureThreshold: &f, SuccessThreshold: &s,
	}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Period != 5*time.Second || o.Timeout != time.Second || o.FailureThreshold != 4 || o.SuccessThreshold != 2 {
		t.Errorf("got %+v", o)
	}
	if o.ProbeTimeWriteInterval != DefaultProbeTimeWriteInterval || o.SummaryPeriod != DefaultSummaryPeriod {
		t.Errorf("defaults not applied: %+v", o)
	}

	o, err = OptionsFromConfig("ns", nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Period != DefaultPeriod || o.Timeout != DefaultTimeout || o.FailureThreshold != 3 || o.SuccessThreshold != 1 {
		t.Errorf("KubeFed defaults not applied: %+v", o)
	}

	slow, _ := Options{Namespace: "ns", Period: 5 * time.Minute}.withDefaults()
	if slow.ProbeTimeWriteInterval != 5*time.Minute {
		t.Errorf("ProbeTimeWriteInterval = %v, want it raised to the 5m period", slow.ProbeTimeWriteInterval)
	}
	if _, err := (Options{}).withDefaults(); err == nil {
		t.Error("an empty namespace must be refused")
	}
}
