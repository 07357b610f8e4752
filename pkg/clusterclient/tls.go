package clusterclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// maxRetimes bounds how often chainVerifier moves the verification time into
// a certificate's validity window; chains to a member are short.
const maxRetimes = 4

// chainVerifier verifies a server's certificate chain against roots, with the
// host name and validity period checks individually switchable.
type chainVerifier struct {
	// roots are the trusted CAs; nil means the system roots.
	roots *x509.CertPool
	// serverName is the host the certificate must be issued for.
	serverName    string
	checkName     bool
	checkValidity bool
	now           func() time.Time
}

// verify is a tls.Config.VerifyConnection. Go's x509 verification has no
// switch for the validity period, so when it is to be skipped the check is
// run at a time inside the offending certificate's validity window instead;
// every other property of the chain is still verified.
func (v chainVerifier) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         v.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   v.now(),
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if v.checkName {
		opts.DNSName = v.serverName
	}
	_, err := leaf.Verify(opts)
	for i := 0; err != nil && !v.checkValidity && i < maxRetimes; i++ {
		var invalid x509.CertificateInvalidError
		if !errors.As(err, &invalid) || invalid.Reason != x509.Expired || invalid.Cert == nil {
			break
		}
		opts.CurrentTime = clampToValidity(opts.CurrentTime, invalid.Cert)
		_, err = leaf.Verify(opts)
	}
	if err != nil {
		return fmt.Errorf("tls: verifying the certificate of %s: %w", v.serverName, err)
	}
	return nil
}

func clampToValidity(t time.Time, c *x509.Certificate) time.Time {
	if t.Before(c.NotBefore) {
		return c.NotBefore
	}
	if t.After(c.NotAfter) {
		return c.NotAfter
	}
	return t
}

// partialVerifyTransport returns a transport whose TLS verification is done
// by v alone, with client-go's defaults otherwise (HTTP/2 with connection
// health checks, and the proxy from the environment when proxy is nil).
func partialVerifyTransport(v chainVerifier, proxy func(*http.Request) (*url.URL, error)) *http.Transport {
	t := &http.Transport{
		Proxy: proxy,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			// Go's own verification cannot skip a single check, so it is
			// switched off and replaced by VerifyConnection, which still
			// verifies the chain; this is not an insecure configuration.
			InsecureSkipVerify: true, //nolint:gosec // see above
			VerifyConnection:   v.verify,
		},
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConnsPerHost: 25,
	}
	return utilnet.SetTransportDefaults(t)
}
