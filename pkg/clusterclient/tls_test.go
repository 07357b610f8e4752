package clusterclient

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// readyz GETs /readyz of the cluster through the client built from cfg and
// returns the error of the request, nil when the answer is "ok".
func readyz(t *testing.T, cfg *rest.Config) error {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("building HTTP client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("TLS succeeded but /readyz answered %s %q", resp.Status, body)
	}
	return nil
}

// TestTLSAgainstRealServer proves against real TLS handshakes that each
// disabled validation skips exactly its check and nothing else.
func TestTLSAgainstRealServer(t *testing.T) {
	ca := newTestCA(t)
	otherCA := newTestCA(t)
	now := time.Now()
	type server struct {
		ca             *testCA
		dns            []string
		ips            []net.IP
		notBefore, end time.Time
	}
	rightName := server{ca: ca, ips: loopback, notBefore: now.Add(-time.Hour), end: now.Add(time.Hour)}
	wrongName := server{ca: ca, dns: []string{"wrong.example.com"}, notBefore: now.Add(-time.Hour), end: now.Add(time.Hour)}
	wrongNameOtherCA := server{ca: otherCA, dns: []string{"wrong.example.com"}, notBefore: now.Add(-time.Hour), end: now.Add(time.Hour)}
	expired := server{ca: ca, ips: loopback, notBefore: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)}
	expiredWrongName := server{ca: ca, dns: []string{"wrong.example.com"}, notBefore: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)}
	notYetValid := server{ca: ca, ips: loopback, notBefore: now.Add(time.Hour), end: now.Add(2 * time.Hour)}

	tests := []struct {
		name     string
		server   server
		disabled []fedv1b1.TLSValidation
		// wantErr is a substring of the handshake error; empty means success.
		wantErr string
	}{
		{name: "valid certificate", server: rightName},
		{name: "wrong name fails without SubjectName", server: wrongName, wantErr: "cannot validate certificate for 127.0.0.1"},
		{name: "wrong name passes with SubjectName", server: wrongName, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}},
		{name: "SubjectName still verifies the chain", server: wrongNameOtherCA, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}, wantErr: "certificate signed by unknown authority"},
		{name: "ValidityPeriod does not skip the name", server: wrongName, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod}, wantErr: "cannot validate certificate for 127.0.0.1"},
		{name: "expired fails without ValidityPeriod", server: expired, wantErr: "expired"},
		{name: "expired passes with ValidityPeriod", server: expired, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod}},
		{name: "not yet valid passes with ValidityPeriod", server: notYetValid, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod}},
		{name: "ValidityPeriod still verifies the chain", server: server{ca: otherCA, ips: loopback, notBefore: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)}, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod}, wantErr: "unknown authority"},
		{name: "expired and wrong name need both", server: expiredWrongName, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}, wantErr: "expired"},
		{name: "expired and wrong name with both", server: expiredWrongName, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod}},
		{name: "* accepts an unknown CA", server: wrongNameOtherCA, disabled: []fedv1b1.TLSValidation{fedv1b1.TLSAll}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.server
			srv := fakeAPIServer(t, s.ca.serving(t, s.dns, s.ips, s.notBefore, s.end), testToken)
			cluster := testCluster(hostPort(srv.URL), func(c *fedv1b1.KubeFedCluster) {
				c.Spec.DisabledTLSValidations = tc.disabled
			})
			// The CA comes from the Secret, as kubefedctl join writes it.
			cfg, err := RESTConfig(cluster, testSecret(map[string]string{TokenKey: testToken, CAKey: string(ca.certPEM)}), ConfigOptions{})
			if err != nil {
				t.Fatalf("RESTConfig: %v", err)
			}
			err = readyz(t, cfg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want success, got %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("want an error containing %q, got success", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

// connectProxy is an HTTP proxy that tunnels CONNECT requests and counts
// them, to prove a client really went through it.
func connectProxy(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var tunnels atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		upstream, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		tunnels.Add(1)
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("proxy cannot hijack")
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() {
			defer upstream.Close()
			_, _ = io.Copy(upstream, bufio.NewReader(buf))
		}()
		go func() {
			defer conn.Close()
			_, _ = io.Copy(conn, upstream)
		}()
	}))
	t.Cleanup(srv.Close)
	return srv, &tunnels
}

func TestProxyURLIsUsed(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	srv := fakeAPIServer(t, ca.serving(t, []string{"wrong.example.com"}, loopback, now.Add(-time.Hour), now.Add(time.Hour)), testToken)

	for _, disabled := range [][]fedv1b1.TLSValidation{nil, {fedv1b1.TLSSubjectName}, {fedv1b1.TLSAll}} {
		t.Run(strings.Join(toStrings(disabled), ","), func(t *testing.T) {
			proxy, tunnels := connectProxy(t)
			cluster := testCluster(srv.URL, func(c *fedv1b1.KubeFedCluster) {
				c.Spec.CABundle = ca.certPEM
				c.Spec.ProxyURL = proxy.URL
				c.Spec.DisabledTLSValidations = disabled
			})
			cfg, err := RESTConfig(cluster, testSecret(map[string]string{TokenKey: testToken}), ConfigOptions{})
			if err != nil {
				t.Fatalf("RESTConfig: %v", err)
			}
			if err := readyz(t, cfg); err != nil {
				t.Fatalf("request through the proxy failed: %v", err)
			}
			if tunnels.Load() == 0 {
				t.Fatal("the request bypassed the proxy")
			}
		})
	}
}

func toStrings(vs []fedv1b1.TLSValidation) []string {
	out := []string{"verify-all"}
	for _, v := range vs {
		out = append(out, string(v))
	}
	return out
}
