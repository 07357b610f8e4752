package clusterclient

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// Keys of the Secret a KubeFedCluster references, as kubefedctl join writes them.
const (
	// TokenKey holds the bearer token that authenticates to the member.
	TokenKey = "token"
	// CAKey holds the member's CA bundle when spec.caBundle is empty.
	CAKey = "ca.crt"
)

// Defaults of ConfigOptions.
const (
	// DefaultQPS is well above client-go's 5 because one client serves
	// every controller that talks to the member.
	DefaultQPS float32 = 50
	// DefaultBurst lets a resync of many objects start without waiting.
	DefaultBurst = 100
	// DefaultTimeout bounds every request so that a hung member cannot
	// hold a worker forever.
	DefaultTimeout = 30 * time.Second
	// DefaultUserAgent identifies the control plane in member audit logs.
	DefaultUserAgent = "kubefed-controller-manager"
)

// ConfigOptions tunes the rest.Config built for a member; zero fields take
// the defaults.
type ConfigOptions struct {
	// QPS is the client-side rate limit of requests to the member.
	QPS float32
	// Burst is the number of requests allowed above QPS in a burst.
	Burst int
	// Timeout bounds each request. It becomes http.Client.Timeout, which
	// also ends watches, so informers must copy the config and set 0.
	Timeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

func (o ConfigOptions) withDefaults() ConfigOptions {
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	return o
}

// ConfigError reports a KubeFedCluster or Secret that cannot be turned into
// a client configuration. Retrying does not help until one of them changes,
// which is why callers report it differently from a failed request.
type ConfigError struct {
	msg string
}

// Error describes the problem; it never contains a token.
func (e *ConfigError) Error() string { return e.msg }

// IsConfigError says whether err, or an error it wraps, is a ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

func configErrorf(format string, args ...any) error {
	return &ConfigError{msg: fmt.Sprintf(format, args...)}
}

// RESTConfig builds the configuration that reaches cluster's kube-apiserver
// with the credentials of secret, the Secret named by cluster.Spec.SecretRef
// (nil when it does not exist). It does no I/O.
//
// TLS is always verified except for what spec.disabledTLSValidations names:
// `*` skips verification entirely, SubjectName skips only the host name
// check and ValidityPeriod only the expiry check, while the chain is still
// verified against the CA.
func RESTConfig(cluster *fedv1b1.KubeFedCluster, secret *corev1.Secret, o ConfigOptions) (*rest.Config, error) {
	o = o.withDefaults()
	secretName := cluster.Namespace + "/" + cluster.Spec.SecretRef.Name
	if secret == nil {
		return nil, configErrorf("Secret %s referenced by KubeFedCluster %s does not exist", secretName, cluster.Name)
	}

	endpoint, err := endpointURL(cluster.Spec.APIEndpoint)
	if err != nil {
		return nil, err
	}

	token := strings.TrimSpace(string(secret.Data[TokenKey]))
	if token == "" {
		return nil, configErrorf("Secret %s has no %q key with a bearer token", secretName, TokenKey)
	}
	if strings.ContainsFunc(token, unicode.IsControl) {
		// net/http would refuse every request with it, which would read as
		// an unreachable member. The token itself is never echoed.
		return nil, configErrorf("key %q of Secret %s holds a bearer token with a control character inside (a line break?); a token is one line", TokenKey, secretName)
	}

	caData, caSource := cluster.Spec.CABundle, "spec.caBundle"
	if len(caData) == 0 {
		caData, caSource = secret.Data[CAKey], fmt.Sprintf("key %q of Secret %s", CAKey, secretName)
	}
	var roots *x509.CertPool
	if len(caData) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caData) {
			return nil, configErrorf("%s of KubeFedCluster %s holds no PEM-encoded certificate", caSource, cluster.Name)
		}
	}

	skip, err := parseDisabledValidations(cluster.Spec.DisabledTLSValidations)
	if err != nil {
		return nil, err
	}

	proxy, err := proxyFunc(cluster.Spec.ProxyURL)
	if err != nil {
		return nil, err
	}

	cfg := &rest.Config{
		Host:        endpoint.String(),
		BearerToken: token,
		QPS:         o.QPS,
		Burst:       o.Burst,
		Timeout:     o.Timeout,
		UserAgent:   o.UserAgent,
	}
	switch {
	case skip.all:
		// client-go refuses a CA together with Insecure.
		cfg.Insecure = true
		cfg.Proxy = proxy
	case skip.subjectName || skip.validityPeriod:
		// rest.TLSClientConfig can only verify everything or nothing, so
		// the partial verification needs a transport of our own; the bearer
		// token is still added by client-go's wrappers around it.
		cfg.Transport = partialVerifyTransport(chainVerifier{
			roots:         roots,
			serverName:    endpoint.Hostname(),
			checkName:     !skip.subjectName,
			checkValidity: !skip.validityPeriod,
			now:           time.Now,
		}, proxy)
	default:
		cfg.CAData = caData
		cfg.Proxy = proxy
	}
	return cfg, nil
}

// endpointURL accepts what KubeFed accepted in spec.apiEndpoint: a host,
// host:port or https URL.
func endpointURL(endpoint string) (*url.URL, error) {
	endpoint = strings.TrimSpace(endpoint)
	if endpoint == "" {
		return nil, configErrorf("apiEndpoint is empty")
	}
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, configErrorf("apiEndpoint %q is not a host, host:port or https URL: %v", endpoint, errors.Unwrap(err))
	}
	switch {
	case u.Scheme != "https":
		return nil, configErrorf("apiEndpoint %q must use https, not %s", endpoint, u.Scheme)
	case u.Hostname() == "":
		return nil, configErrorf("apiEndpoint %q has no host", endpoint)
	case u.User != nil:
		// Credentials in the URL would end up in logs and events.
		return nil, configErrorf("apiEndpoint of the cluster must not contain user information")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, configErrorf("apiEndpoint %q must not have a query or fragment", endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

type skippedValidations struct {
	all, subjectName, validityPeriod bool
}

func parseDisabledValidations(vs []fedv1b1.TLSValidation) (skippedValidations, error) {
	var s skippedValidations
	for _, v := range vs {
		switch v {
		case fedv1b1.TLSAll:
			s.all = true
		case fedv1b1.TLSSubjectName:
			s.subjectName = true
		case fedv1b1.TLSValidityPeriod:
			s.validityPeriod = true
		default:
			return s, configErrorf("disabledTLSValidations has unknown value %q; allowed are %q, %q and %q",
				v, fedv1b1.TLSAll, fedv1b1.TLSSubjectName, fedv1b1.TLSValidityPeriod)
		}
	}
	return s, nil
}

// proxyFunc returns nil for an empty proxyURL, leaving client-go's default
// of honouring the HTTPS_PROXY and NO_PROXY environment variables.
func proxyFunc(proxyURL string) (func(*http.Request) (*url.URL, error), error) {
	if proxyURL == "" {
		return nil, nil
	}
	u, err := url.Parse(proxyURL)
	if err != nil {
		// The URL may carry proxy credentials, so it is not echoed.
		return nil, configErrorf("proxyURL is not a valid URL")
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, configErrorf("proxyURL %s must use http, https or socks5", u.Redacted())
	}
	if u.Host == "" {
		return nil, configErrorf("proxyURL %s has no host", u.Redacted())
	}
	return http.ProxyURL(u), nil
}
