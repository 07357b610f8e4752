//go:build integration

package webhook_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const ns = corev1beta1.DefaultKubeFedNamespace

var (
	configMaps = federatedtype.Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}
	widget     = federatedtype.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}
)

// TestWebhooksOnTheAPIServer runs the controller-manager with
// --webhook-port, registers the chart's ValidatingWebhookConfiguration
// (pointed at it by URL instead of the in-cluster Service) with a
// self-signed CA, and writes through a real kube-apiserver.
func TestWebhooksOnTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fed.Stop() }()
	c, err := client.New(fed.Host().RESTConfig(), client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := framework.ReadCRDs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	crds = append(crds, federatedCRD(t, configMaps))
	if err := framework.InstallCRDs(ctx, c, crds); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
		t.Fatal(err)
	}

	pki := newServingPKI(t)
	ctrl.SetLogger(zap.New())
	o := controllermanager.DefaultOptions()
	o.Kubeconfig, o.Context = fed.KubeconfigPath, "host"
	o.LeaderElect, o.MetricsAddr, o.HealthAddr = false, "0", "0"
	o.WebhookPort, o.WebhookCertDir = freePort(t), pki.dir
	managerCtx, stopManager := context.WithCancel(ctx)
	defer stopManager()
	stopped := make(chan error, 1)
	go func() { stopped <- controllermanager.Run(managerCtx, o) }()

	vwc := chartWebhookConfiguration(t, root, pki.caPEM)
	pointAt(t, vwc, o.WebhookPort)
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	// The API server loads the configuration asynchronously, and the
	// controller-manager takes a moment to serve.
	eventually(t, "the webhook denies a FederatedTypeConfig that declares a served type's scope wrongly", func() error {
		err := c.Create(ctx, typeConfig(configMaps, clusterScoped), client.DryRunAll)
		if err == nil {
			return errors.New("admitted")
		}
		if !strings.Contains(err.Error(), "denied the request") {
			return err
		}
		return nil
	})
	// warned is a client whose requests' warnings are kept.
	warnings := &warningRecorder{}
	warnedConfig := rest.CopyConfig(fed.Host().RESTConfig())
	warnedConfig.WarningHandler = warnings
	warned, err := client.New(warnedConfig, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("FederatedTypeConfig of a served type in another scope is denied", func(t *testing.T) {
		err := c.Create(ctx, typeConfig(configMaps, clusterScoped))
		want := `admission webhook "federatedtypeconfigs.core.kubefed.io" denied the request: FederatedTypeConfig.core.kubefed.io "configmaps" is invalid: ` +
			`spec.targetType.scope: Invalid value: "Cluster": v1, Kind=ConfigMap is Namespaced`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v\nwant Invalid: %s", err, want)
		}
		assertAbsent(ctx, t, c, &corev1beta1.FederatedTypeConfig{}, "configmaps")
	})

	t.Run("FederatedTypeConfig of a type the host does not serve yet is admitted with warnings", func(t *testing.T) {
		if err := warned.Create(ctx, typeConfig(widget)); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"spec.targetType: the host cluster does not serve example.com/v1, Kind=Widget; the FederatedTypeConfig is admitted and reports TargetTypeNotFound until the type is installed",
			"spec.federatedType: the host cluster does not serve types.kubefed.io/v1beta1, Kind=FederatedWidget; the FederatedTypeConfig is admitted and reports FederatedTypeNotFound until its CRD is installed (kubefedctl enable does both)",
		}
		if got := warnings.take(); !slices.Equal(got, want) {
			t.Fatalf("warnings\n got: %q\nwant: %q", got, want)
		}
	})

	t.Run("FederatedTypeConfig of served types is admitted", func(t *testing.T) {
		if err := warned.Create(ctx, typeConfig(configMaps)); err != nil {
			t.Fatal(err)
		}
		if got := warnings.take(); len(got) != 0 {
			t.Fatalf("warnings %q", got)
		}
	})

	t.Run("FederatedTypeConfig is checked once its CRDs are installed", func(t *testing.T) {
		// The same discovery-backed mapper missed this type a moment ago;
		// it must not remember the miss.
		if err := framework.InstallCRDs(ctx, c, []*apiextensionsv1.CustomResourceDefinition{widgetCRD(), federatedCRD(t, widget)}); err != nil {
			t.Fatal(err)
		}
		err := c.Create(ctx, typeConfig(widget, clusterScoped), client.DryRunAll)
		want := `admission webhook "federatedtypeconfigs.core.kubefed.io" denied the request: FederatedTypeConfig.core.kubefed.io "widgets.example.com" is invalid: ` +
			`spec.targetType.scope: Invalid value: "Cluster": example.com/v1, Kind=Widget is Namespaced`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v\nwant Invalid: %s", err, want)
		}
	})

	t.Run("KubeFedCluster before its Secret is admitted with a warning", func(t *testing.T) {
		if err := warned.Create(ctx, kubeFedCluster("member1", "member1-creds")); err != nil {
			t.Fatal(err)
		}
		want := []string{`spec.secretRef.name: no Secret "member1-creds" in namespace "kube-federation-system"; ` +
			`the KubeFedCluster is admitted and reports Ready=False (malformed cluster config) until the Secret, with the member's token, exists`}
		if got := warnings.take(); !slices.Equal(got, want) {
			t.Fatalf("warnings\n got: %q\nwant: %q", got, want)
		}
	})

	t.Run("KubeFedCluster created after its Secret is admitted", func(t *testing.T) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member2-creds"}, StringData: map[string]string{"token": "t"}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, kubeFedCluster("member2", "member2-creds")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("controller-manager stopped: writes are admitted", func(t *testing.T) {
		stopManager()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("controller-manager: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the controller-manager did not stop")
		}
		// The configuration that denied this change above (as a dry-run
		// create) is unchanged; the API server's call is refused.
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "widgets.example.com"}, ftc); err != nil {
			t.Fatal(err)
		}
		clusterScoped(ftc)
		if err := c.Update(ctx, ftc); err != nil {
			t.Fatalf("FederatedTypeConfig refused while the webhook is down: %v", err)
		}
	})

	t.Run("webhook hangs: writes are admitted after the timeout", func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		hung := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			calls.Add(1)
			<-release
		}))
		hung.TLS = &tls.Config{Certificates: []tls.Certificate{pki.cert}}
		hung.StartTLS()
		defer hung.Close()
		defer close(release)
		port := hung.Listener.Addr().(*net.TCPAddr).Port
		live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), live); err != nil {
			t.Fatal(err)
		}
		pointAt(t, live, port)
		if err := c.Update(ctx, live); err != nil {
			t.Fatal(err)
		}
		// Until the API server loads the new configuration its calls are
		// refused at once; then one call waits out timeoutSeconds.
		eventually(t, "a write admitted after the webhook timed out", func() error {
			start := time.Now()
			err := c.Create(ctx, kubeFedCluster("member4", "member4-creds"), client.DryRunAll)
			took := time.Since(start)
			if err != nil {
				return fmt.Errorf("refused after %s: %w", took, err)
			}
			if calls.Load() == 0 {
				return fmt.Errorf("admitted after %s without calling the hanging webhook", took)
			}
			if took < 4*time.Second {
				return fmt.Errorf("admitted after %s, before the 5s timeout", took)
			}
			return nil
		})
	})
}

func typeConfig(t federatedtype.Target, edit ...func(*corev1beta1.FederatedTypeConfig)) *corev1beta1.FederatedTypeConfig {
	ftc := federatedtype.TypeConfig(t, federatedtype.Options{})
	for _, e := range edit {
		e(ftc)
	}
	return ftc
}

// clusterScoped declares the target type cluster-scoped.
func clusterScoped(ftc *corev1beta1.FederatedTypeConfig) {
	ftc.Spec.TargetType.Scope = corev1beta1.ClusterScope
}

// warningRecorder keeps the warnings of the API server's answers.
type warningRecorder struct {
	mu  sync.Mutex
	got []string
}

// HandleWarningHeader keeps a warning.
func (w *warningRecorder) HandleWarningHeader(code int, _, text string) {
	if code != 299 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

// take returns the warnings kept since the last take.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.got
	w.got = nil
	return got
}

func federatedCRD(t *testing.T, target federatedtype.Target) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := federatedtype.CRD(target, federatedtype.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func kubeFedCluster(name, secret string) *corev1beta1.KubeFedCluster {
	return &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1beta1.KubeFedClusterSpec{
			APIEndpoint: "https://127.0.0.1:1",
			SecretRef:   corev1beta1.LocalSecretReference{Name: secret},
		},
	}
}

func assertAbsent(ctx context.Context, t *testing.T, c client.Client, obj client.Object, name string) {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); !apierrors.IsNotFound(err) {
		t.Errorf("%s was stored (get: %v)", name, err)
	}
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, err := localcluster.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// chartWebhookConfiguration renders the chart's ValidatingWebhookConfiguration
// for namespace ns with bin/helm.
func chartWebhookConfiguration(t *testing.T, root string, caPEM []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing; build it with hack/build-helm.sh", helm)
	}
	home := t.TempDir()
	cmd := exec.Command(helm, "template", "kubefed", filepath.Join(root, "charts", "kubefed"), "--namespace", ns,
		"--set", "webhook.enabled=true", "--set", "webhook.caBundle="+base64.StdEncoding.EncodeToString(caPEM),
		"--show-only", "templates/webhook.yaml")
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(out, vwc); err != nil {
		t.Fatalf("decode the chart's ValidatingWebhookConfiguration: %v\n%s", err, out)
	}
	if len(vwc.Webhooks) != 2 {
		t.Fatalf("the chart renders %d webhooks, want 2", len(vwc.Webhooks))
	}
	return vwc
}

// pointAt makes the webhooks call 127.0.0.1:port at their Service's path,
// which is all that differs from the in-cluster configuration.
func pointAt(t *testing.T, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, port int) {
	t.Helper()
	for i := range vwc.Webhooks {
		cc := &vwc.Webhooks[i].ClientConfig
		var path string
		if cc.Service != nil {
			path = ptr.Deref(cc.Service.Path, "")
		} else {
			u, err := url.Parse(ptr.Deref(cc.URL, ""))
			if err != nil {
				t.Fatal(err)
			}
			path = u.Path
		}
		cc.Service, cc.URL = nil, ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
	}
}

// servingPKI is a self-signed CA and a certificate it signed for 127.0.0.1,
// written as tls.crt and tls.key into dir.
type servingPKI struct {
	caPEM []byte
	cert  tls.Certificate
	dir   string
}

func newServingPKI(t *testing.T) *servingPKI {
	t.Helper()
	now := time.Now()
	issue := func(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	ca, caKey, caPEM := issue(&x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubefed-webhook-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, nil, nil)
	_, key, certPEM := issue(&x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}, ca, caKey)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &servingPKI{caPEM: caPEM, cert: cert, dir: dir}
}
