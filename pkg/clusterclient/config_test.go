package clusterclient

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const (
	testNamespace = "kube-federation-system"
	testToken     = "s3cr3t-t0ken-value"
)

func testCluster(endpoint string, mutate ...func(*fedv1b1.KubeFedCluster)) *fedv1b1.KubeFedCluster {
	c := &fedv1b1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", Namespace: testNamespace},
		Spec: fedv1b1.KubeFedClusterSpec{
			APIEndpoint: endpoint,
			SecretRef:   fedv1b1.LocalSecretReference{Name: "member1-secret"},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func testSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member1-secret", Namespace: testNamespace},
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestRESTConfig(t *testing.T) {
	caPEM := string(newTestCA(t).certPEM)
	otherCAPEM := string(newTestCA(t).certPEM)
	withToken := map[string]string{TokenKey: testToken}

	tests := []struct {
		name    string
		cluster *fedv1b1.KubeFedCluster
		secret  *corev1.Secret
		opts    ConfigOptions
		// wantErr lists substrings of the expected ConfigError.
		wantErr []string
		check   func(t *testing.T, cfg *rest.Config)
	}{
		{
			name:    "bare host gets https",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				wantEq(t, "host", cfg.Host, "https://member.example.com")
				wantEq(t, "token", cfg.BearerToken, testToken)
			},
		},
		{
			name:    "host:port gets https",
			cluster: testCluster("10.0.0.1:6443"),
			secret:  testSecret(withToken),
			check:   func(t *testing.T, cfg *rest.Config) { wantEq(t, "host", cfg.Host, "https://10.0.0.1:6443") },
		},
		{
			name:    "https URL with a path prefix is kept, trailing slash dropped",
			cluster: testCluster("https://proxy.example.com:8443/k8s/clusters/c1/"),
			secret:  testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				wantEq(t, "host", cfg.Host, "https://proxy.example.com:8443/k8s/clusters/c1")
			},
		},
		{
			name:    "IPv6 host:port",
			cluster: testCluster("[fd00::1]:6443"),
			secret:  testSecret(withToken),
			check:   func(t *testing.T, cfg *rest.Config) { wantEq(t, "host", cfg.Host, "https://[fd00::1]:6443") },
		},
		{
			name:    "token is trimmed of the newline a file-created Secret has",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: testToken + "\n"}),
			check:   func(t *testing.T, cfg *rest.Config) { wantEq(t, "token", cfg.BearerToken, testToken) },
		},
		{
			name:    "http endpoint is refused",
			cluster: testCluster("http://member.example.com"),
			secret:  testSecret(withToken),
			wantErr: []string{"apiEndpoint", "must use https"},
		},
		{
			name:    "empty endpoint",
			cluster: testCluster(" "),
			secret:  testSecret(withToken),
			wantErr: []string{"apiEndpoint is empty"},
		},
		{
			name:    "non-numeric port",
			cluster: testCluster("member.example.com:api"),
			secret:  testSecret(withToken),
			wantErr: []string{`apiEndpoint "member.example.com:api"`},
		},
		{
			name:    "endpoint with credentials is refused without echoing them",
			cluster: testCluster("https://admin:hunter2@member.example.com"),
			secret:  testSecret(withToken),
			wantErr: []string{"must not contain user information"},
		},
		{
			name:    "missing Secret names the Secret",
			cluster: testCluster("member.example.com"),
			secret:  nil,
			wantErr: []string{"Secret kube-federation-system/member1-secret", "does not exist"},
		},
		{
			name:    "Secret without token names the Secret and the key",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{"tokn": testToken}),
			wantErr: []string{"Secret kube-federation-system/member1-secret", `"token"`},
		},
		{
			name:    "empty token counts as missing",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: " \n"}),
			wantErr: []string{`no "token" key`},
		},
		{
			name:    "line-wrapped token is refused naming the Secret and key",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: testToken[:9] + "\r\n" + testToken[9:] + "\n"}),
			wantErr: []string{`key "token" of Secret kube-federation-system/member1-secret`, "control character"},
		},
		{
			name:    "token with a tab inside is refused",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: testToken[:9] + "\t" + testToken[9:]}),
			wantErr: []string{`key "token" of Secret kube-federation-system/member1-secret`, "control character"},
		},
		{
			name: "spec.caBundle wins over the Secret's ca.crt",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.CABundle = []byte(caPEM)
			}),
			secret: testSecret(map[string]string{TokenKey: testToken, CAKey: otherCAPEM}),
			check:  func(t *testing.T, cfg *rest.Config) { wantEq(t, "CA", string(cfg.CAData), caPEM) },
		},
		{
			name:    "ca.crt of the Secret is used without spec.caBundle",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: testToken, CAKey: otherCAPEM}),
			check:   func(t *testing.T, cfg *rest.Config) { wantEq(t, "CA", string(cfg.CAData), otherCAPEM) },
		},
		{
			name:    "no CA anywhere means the system roots",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				if cfg.CAData != nil || cfg.Insecure || cfg.Transport != nil {
					t.Errorf("want plain verification against system roots, got CAData=%d bytes Insecure=%v Transport=%T", len(cfg.CAData), cfg.Insecure, cfg.Transport)
				}
			},
		},
		{
			name: "caBundle that is not PEM",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.CABundle = []byte("not a certificate")
			}),
			secret:  testSecret(withToken),
			wantErr: []string{"spec.caBundle of KubeFedCluster member1 holds no PEM-encoded certificate"},
		},
		{
			name:    "ca.crt that is not PEM names the Secret key",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(map[string]string{TokenKey: testToken, CAKey: "garbage"}),
			wantErr: []string{`key "ca.crt" of Secret kube-federation-system/member1-secret`},
		},
		{
			name: "* disables verification and drops the CA client-go would reject",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.CABundle = []byte(caPEM)
				c.Spec.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSAll}
			}),
			secret: testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				if !cfg.Insecure || cfg.CAData != nil {
					t.Errorf("want Insecure without CA, got Insecure=%v CAData=%d bytes", cfg.Insecure, len(cfg.CAData))
				}
			},
		},
		{
			name: "SubjectName uses a verifying transport, never Insecure",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.CABundle = []byte(caPEM)
				c.Spec.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}
			}),
			secret: testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				tr, ok := cfg.Transport.(*http.Transport)
				if !ok || tr.TLSClientConfig.VerifyConnection == nil {
					t.Fatalf("want an *http.Transport with VerifyConnection, got %T", cfg.Transport)
				}
				if cfg.Insecure || cfg.CAData != nil {
					t.Errorf("TLSClientConfig must stay empty next to a custom transport")
				}
				if _, err := rest.HTTPClientFor(cfg); err != nil {
					t.Errorf("client-go rejects the config: %v", err)
				}
			},
		},
		{
			name: "unknown TLS validation",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.DisabledTLSValidations = []fedv1b1.TLSValidation{"Hostname"}
			}),
			secret:  testSecret(withToken),
			wantErr: []string{`unknown value "Hostname"`},
		},
		{
			name: "socks5 proxy",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.ProxyURL = "socks5://proxy.example.com:1080"
			}),
			secret: testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				wantProxy(t, cfg.Proxy, "socks5://proxy.example.com:1080")
			},
		},
		{
			name: "https proxy on the partially verifying transport",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.ProxyURL = "https://proxy.example.com:3128"
				c.Spec.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSValidityPeriod}
			}),
			secret: testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				wantProxy(t, cfg.Transport.(*http.Transport).Proxy, "https://proxy.example.com:3128")
			},
		},
		{
			name: "ftp proxy is refused without echoing its password",
			cluster: testCluster("member.example.com", func(c *fedv1b1.KubeFedCluster) {
				c.Spec.ProxyURL = "ftp://user:pr0xypass@proxy.example.com"
			}),
			secret:  testSecret(withToken),
			wantErr: []string{"must use http, https or socks5"},
		},
		{
			name:    "defaults",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(withToken),
			check: func(t *testing.T, cfg *rest.Config) {
				if cfg.QPS != DefaultQPS || cfg.Burst != DefaultBurst || cfg.Timeout != DefaultTimeout || cfg.UserAgent != DefaultUserAgent {
					t.Errorf("got QPS=%v Burst=%d Timeout=%v UserAgent=%q", cfg.QPS, cfg.Burst, cfg.Timeout, cfg.UserAgent)
				}
			},
		},
		{
			name:    "overrides",
			cluster: testCluster("member.example.com"),
			secret:  testSecret(withToken),
			opts:    ConfigOptions{QPS: 7, Burst: 9, Timeout: time.Second, UserAgent: "probe"},
			check: func(t *testing.T, cfg *rest.Config) {
				if cfg.QPS != 7 || cfg.Burst != 9 || cfg.Timeout != time.Second || cfg.UserAgent != "probe" {
					t.Errorf("got QPS=%v Burst=%d Timeout=%v UserAgent=%q", cfg.QPS, cfg.Burst, cfg.Timeout, cfg.UserAgent)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := RESTConfig(tc.cluster, tc.secret, tc.opts)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want an error containing %q, got none", tc.wantErr)
				}
				if !IsConfigError(err) {
					t.Errorf("want a ConfigError, got %T: %v", err, err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				for _, secret := range []string{testToken, testToken[:9], testToken[9:], "hunter2", "pr0xypass"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q leaks a secret", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			tc.check(t, cfg)
		})
	}
}

func wantEq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func wantProxy(t *testing.T, proxy func(*http.Request) (*url.URL, error), want string) {
	t.Helper()
	if proxy == nil {
		t.Fatalf("no proxy configured, want %s", want)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://member.example.com/readyz", nil)
	u, err := proxy(req)
	if err != nil || u == nil || u.String() != want {
		t.Errorf("proxy for the member = %v (err %v), want %s", u, err, want)
	}
}
