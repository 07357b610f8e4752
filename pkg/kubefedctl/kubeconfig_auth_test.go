package kubefedctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A member answers the token check with what its API server would: 401
// for a token it does not authenticate, and otherwise whatever the request
// meets after authentication. Only the 401 means the token is not
// accepted; a member before Kubernetes 1.28, without the v1
// SelfSubjectReview API, answers 404 and has accepted it.
func TestATokenIsAcceptedUnlessTheMemberAnswersUnauthorized(t *testing.T) {
	for _, tc := range []struct {
		code     int
		reason   string
		accepted bool
	}{
		{http.StatusCreated, "", true},
		{http.StatusForbidden, "Forbidden", true},
		{http.StatusNotFound, "NotFound", true},
		{http.StatusMethodNotAllowed, "MethodNotAllowed", true},
		{http.StatusUnauthorized, "Unauthorized", false},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			var gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth = r.Header.Get("Authorization")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				if tc.code == http.StatusCreated {
					fmt.Fprint(w, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","status":{"userInfo":{"username":"system:serviceaccount:kube-federation-system:m"}}}`)
					return
				}
				fmt.Fprintf(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":%q,"code":%d}`, tc.reason, tc.code)
			}))
			defer srv.Close()
			c := &cluster{context: "member1", authenticate: func(ctx context.Context, token []byte) error {
				return authenticateWith(ctx, &rest.Config{Host: srv.URL, BearerToken: "the user's own"}, token)
			}}
			accepted, err := tokenAccepted(context.Background(), c, []byte("new-token"))
			if err != nil {
				t.Fatalf("%d: %v", tc.code, err)
			}
			if accepted != tc.accepted {
				t.Errorf("answered %d: accepted %v, want %v", tc.code, accepted, tc.accepted)
			}
			if gotAuth != "Bearer new-token" {
				t.Errorf("the check sent %q, want the new token alone", gotAuth)
			}
		})
	}
	// Anything else is an error that names the cluster.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := &cluster{context: "member1", authenticate: func(ctx context.Context, token []byte) error {
		return authenticateWith(ctx, &rest.Config{Host: srv.URL}, token)
	}}
	if _, err := tokenAccepted(context.Background(), c, []byte("t")); err == nil || !strings.Contains(err.Error(), `"member1"`) {
		t.Errorf("a 500 answer: %v, want an error naming the cluster", err)
	}
}

// The agent reaches the host as the user's kubeconfig does: a
// tls-server-name there (a server reached by IP or through a tunnel whose
// certificate names another host) goes into the agent's kubeconfig, which
// otherwise fails verification against the server's address.
func TestAgentKubeconfigKeepsTheTLSServerName(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	path := filepath.Join(t.TempDir(), "kubeconfig")
	raw := `apiVersion: v1
kind: Config
clusters:
- name: host
  cluster:
    server: https://10.0.0.1:6443
    tls-server-name: api.host.example
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(ca) + `
users:
- name: admin
  user:
    token: the-users-own
contexts:
- name: host
  context: {cluster: host, user: admin}
current-context: host
`
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := newKubeconfigConnector(&globalOptions{kubeconfig: path}, IOStreams{Out: io.Discard, ErrOut: io.Discard})
	host, err := conn.connect("host")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := agentKubeconfig(host, []byte("agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" || cfg.ServerName != "api.host.example" || !bytes.Equal(cfg.CAData, ca) || cfg.Insecure {
		t.Errorf("agent reaches %s as server name %q (CA %d bytes, insecure %v), want https://10.0.0.1:6443 as api.host.example",
			cfg.Host, cfg.ServerName, len(cfg.CAData), cfg.Insecure)
	}
	if cfg.BearerToken != "agent-token" {
		t.Error("the agent's kubeconfig does not carry the agent's token alone")
	}
}
