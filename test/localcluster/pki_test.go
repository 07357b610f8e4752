package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func parseCertPEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", data)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	return cert
}

func TestServingCertVerifiesForLoopbackNames(t *testing.T) {
	now := time.Now()
	ca, err := newAuthority("test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	caCert := parseCertPEM(t, ca.certPEM)
	if !caCert.IsCA || caCert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Fatalf("CA certificate cannot sign: IsCA=%v usage=%v", caCert.IsCA, caCert.KeyUsage)
	}
	kp, err := ca.apiServerServingCert("host", now)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseCertPEM(t, kp.certPEM)
	if cert.IsCA {
		t.Error("serving certificate must not be a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	for _, name := range []string{"127.0.0.1", "localhost", "::1", "kubernetes.default.svc"} {
		_, err := cert.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       roots,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			CurrentTime: now,
		})
		if err != nil {
			t.Errorf("certificate does not verify for %s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots}); err == nil {
		t.Error("certificate unexpectedly verifies for example.com")
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: x509.NewCertPool()}); err == nil {
		t.Error("certificate verifies without the CA")
	}
}

// TestServingCertTLSHandshake proves the PEM files work as a real server
// key pair, the way kube-apiserver loads them.
func TestServingCertTLSHandshake(t *testing.T) {
	ca, err := newAuthority("test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.apiServerServingCert("host", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
	if err != nil {
		t.Fatalf("loading key pair: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.certPEM) {
		t.Fatal("CA PEM not accepted")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		resp, err := client.Get("https://" + net.JoinHostPort(host, port))
		if err != nil {
			t.Errorf("GET via %s: %v", host, err)
			continue
		}
		resp.Body.Close()
	}
}

func TestServiceAccountKeyPair(t *testing.T) {
	kp, err := newServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	pubBlock, _ := pem.Decode(kp.certPEM)
	if pubBlock == nil || pubBlock.Type != "PUBLIC KEY" {
		t.Fatalf("public key PEM: %q", kp.certPEM)
	}
	pub, err := x509.ParsePKIXPublicKey(pubBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	keyBlock, _ := pem.Decode(kp.keyPEM)
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !key.PublicKey.Equal(pub) {
		t.Error("public key does not match private key")
	}
}

func TestTokens(t *testing.T) {
	a, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	if a == b || len(a) < 40 {
		t.Errorf("tokens not random or too short: len %d", len(a))
	}
	if strings.ContainsAny(a, ",\"\n ") {
		t.Error("token contains characters that break the CSV token file")
	}
	line := string(tokenFile(a))
	want := a + `,admin,localcluster-admin,"system:masters"` + "\n"
	if line != want {
		// Do not print the token itself.
		t.Errorf("token file line has the wrong shape (len %d, want len %d)", len(line), len(want))
	}
}
