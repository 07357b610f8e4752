package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const ns = fedv1b1.DefaultKubeFedNamespace

// memberMode is how a fakeMember answers /readyz.
type memberMode int32

const (
	modeHealthy memberMode = iota
	modeUnhealthy
	modeHang
	// modeAnswer answers with what fakeMember.answer holds.
	modeAnswer
	// modeSlow answers ok after slowAnswer.
	modeSlow
)

// slowAnswer is how long a fakeMember in modeSlow takes to answer.
const slowAnswer = 300 * time.Millisecond

// memberAnswer is a fakeMember's answer in modeAnswer.
type memberAnswer struct {
	code int
	body string
}

// fakeMember is a TLS server that answers health probes like a member's
// kube-apiserver, for the bearer token it was given.
type fakeMember struct {
	srv      *httptest.Server
	token    string
	mode     atomic.Int32
	requests atomic.Int32
	release  chan struct{}
	answer   atomic.Pointer[memberAnswer]
}

// newFakeMember starts a member serving cert, or httptest's own certificate
// when none is given.
func newFakeMember(t *testing.T, token string, cert ...tls.Certificate) *fakeMember {
	t.Helper()
	m := &fakeMember{token: token, release: make(chan struct{})}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(m.serve))
	m.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if len(cert) > 0 {
		m.srv.TLS = &tls.Config{Certificates: cert}
	}
	m.srv.StartTLS()
	t.Cleanup(m.srv.Close)
	// Registered after Close, so it runs before it: hung handlers return
	// and Close does not wait for them.
	t.Cleanup(func() { close(m.release) })
	return m
}

func (m *fakeMember) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/readyz" {
		http.NotFound(w, r)
		return
	}
	m.requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+m.token {
		http.Error(w, `{"kind":"Status","message":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	switch memberMode(m.mode.Load()) {
	case modeHang:
		// Hung for good, until the test ends: a handler that returned when
		// the request's context ended answered 200 with no body, which a
		// client could still read (CI saw "/readyz responded without ok"
		// once where a timeout was due).
		<-m.release
	case modeUnhealthy:
		http.Error(w, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
	case modeSlow:
		time.Sleep(slowAnswer)
		_, _ = w.Write([]byte("ok"))
	case modeAnswer:
		a := m.answer.Load()
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	default:
		_, _ = w.Write([]byte("ok"))
	}
}

func (m *fakeMember) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: m.srv.Certificate().Raw})
}

// objects returns the KubeFedCluster and Secret that join m as name.
func (m *fakeMember) objects(name, token string) (*fedv1b1.KubeFedCluster, *corev1.Secret) {
	return &fedv1b1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1},
			Spec: fedv1b1.KubeFedClusterSpec{
				APIEndpoint: m.srv.URL,
				CABundle:    m.caPEM(),
				SecretRef:   fedv1b1.LocalSecretReference{Name: name + "-secret"},
			},
		}, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-secret", Namespace: ns},
			Data:       map[string][]byte{"token": []byte(token)},
		}
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := regarding.(client.Object).GetName()
	r.events = append(r.events, fmt.Sprintf("%s %s %s %s: %s", name, eventtype, reason, action, fmt.Sprintf(note, args...)))
}

func (r *recorder) matching(substr string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if strings.Contains(e, substr) {
			out = append(out, e)
		}
	}
	return out
}

// harness runs a Reconciler against a fake host API.
type harness struct {
	t      *testing.T
	r      *Reconciler
	client client.Client
	events *recorder
	ctx    context.Context
	stop   func()
	// clock is the controller's now; zero means the wall clock.
	clockMu sync.Mutex
	clock   time.Time
}

func newHarness(t *testing.T, opts Options, objs ...client.Object) *harness {
	t.Helper()
	return newHarnessFor(t, &Reconciler{}, opts, objs...)
}

// newHarnessFor runs r, which may hold a Registry and ReadinessTracker from
// an earlier run.
func newHarnessFor(t *testing.T, r *Reconciler, opts Options, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := fedv1b1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().
		WithScheme(scheme).
		WithStatusSubresource(&fedv1b1.KubeFedCluster{}).
		WithIndex(&fedv1b1.KubeFedCluster{}, secretRefIndex, indexSecretRef).
		WithObjects(objs...).
		Build()
	opts.Namespace = ns
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, client: c, events: &recorder{}}
	h.r = r
	h.r.now = h.now
	h.r.setup(opts, c, c, c, h.events, testr.New(t))
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = h.r.Start(ctx)
	}()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(h.stop)
	<-h.r.started
	return h
}

func (h *harness) now() time.Time {
	h.clockMu.Lock()
	defer h.clockMu.Unlock()
	if h.clock.IsZero() {
		return time.Now()
	}
	return h.clock
}

func (h *harness) setClock(t time.Time) {
	h.clockMu.Lock()
	defer h.clockMu.Unlock()
	h.clock = t
}

func (h *harness) reconcile(name string) {
	h.t.Helper()
	if _, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
		h.t.Fatalf("Reconcile %s: %v", name, err)
	}
}

// probeAt runs one cycle of w with the clock at at and says whether it
// wrote the cluster's status.
func (h *harness) probeAt(w *worker, at time.Time) (wrote bool) {
	h.t.Helper()
	before := h.cluster(w.name).ResourceVersion
	h.setClock(at)
	w.cycle(h.ctx)
	return h.cluster(w.name).ResourceVersion != before
}

// readinessChanges records what listeners of tr hear; the function it
// returns renders it as "[name=ready ...]".
func readinessChanges(tr *ReadinessTracker) func() string {
	var mu sync.Mutex
	var changes []string
	tr.AddListener(ReadinessListenerFunc(func(name string, ready bool) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, fmt.Sprintf("%s=%v", name, ready))
	}))
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(changes)
	}
}

// manualWorker registers a worker whose cycles the test drives.
func (h *harness) manualWorker(name string) *worker {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	w := newWorker(h.r, name, func() {})
	h.r.workers[name] = w
	return w
}

func (h *harness) cluster(name string) *fedv1b1.KubeFedCluster {
	h.t.Helper()
	var c fedv1b1.KubeFedCluster
	if err := h.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &c); err != nil {
		h.t.Fatalf("get KubeFedCluster %s: %v", name, err)
	}
	return &c
}

// condition returns "Status/Reason" of a condition, or "" when absent.
func (h *harness) condition(name string, t fedv1b1.ClusterConditionType) string {
	c := findCondition(h.cluster(name).Status.Conditions, t)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + deref(c.Reason)
}

func (h *harness) message(name string, t fedv1b1.ClusterConditionType) string {
	c := findCondition(h.cluster(name).Status.Conditions, t)
	if c == nil {
		return ""
	}
	return deref(c.Message)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expiredCert returns a self-signed serving certificate for 127.0.0.1 that
// expired a day ago, and the certificate itself.
func expiredCert(t *testing.T) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "expired-member"},
		NotBefore:             notAfter.Add(-24 * time.Hour),
		NotAfter:              notAfter,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert
}
