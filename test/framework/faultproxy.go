package framework

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
)

// FaultProxy is an HTTPS reverse proxy on loopback in front of a member's
// API server, for faults a TCP proxy cannot make: it answers a create with
// a server error after the member made the object (as an API server does
// when etcd is slow to confirm a write), and it holds the events of every
// watch while told to (a control plane whose cache lags behind the
// member). It records the requests that name an object, so that a test can
// tell which writes reached the member. It serves its own certificate:
// point a KubeFedCluster at URL with CABundle.
type FaultProxy struct {
	server *httptest.Server

	mu         sync.Mutex
	cond       *sync.Cond
	hold       bool
	unhealthy  bool
	closed     bool
	failCreate map[string]bool
	requests   map[string][]string
	pending    map[string]pendingRequest
	watches    map[string]int
	served     int
}

// StartFaultProxy starts a proxy to the API server at target (its URL),
// verified with caPEM; the clients' own credentials pass through.
func StartFaultProxy(target string, caPEM []byte) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	p := &FaultProxy{failCreate: map[string]bool{}, requests: map[string][]string{}, pending: map[string]pendingRequest{}, watches: map[string]int{}}
	p.cond = sync.NewCond(&p.mu)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		// Answers are read here: let the transport undo any compression.
		r.Header.Del("Accept-Encoding")
		p.record(r)
	}
	rp.FlushInterval = -1
	rp.ModifyResponse = p.modify
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if healthPaths[r.URL.Path] {
			p.mu.Lock()
			unhealthy := p.unhealthy
			p.mu.Unlock()
			if unhealthy {
				http.Error(w, "made unhealthy by the test's fault proxy", http.StatusServiceUnavailable)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	p.server.EnableHTTP2 = true
	p.server.StartTLS()
	return p, nil
}

// URL is the proxy's https URL.
func (p *FaultProxy) URL() string { return p.server.URL }

// CABundle is the PEM certificate that verifies the proxy.
func (p *FaultProxy) CABundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
}

// FailNextCreate makes the next create of resource/name (the plural, such
// as "configmaps") reach the member and then be answered 500.
func (p *FaultProxy) FailNextCreate(resource, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failCreate[resource+"/"+name] = true
}

// healthPaths are the API server's health checks, which SetHealthy fails.
var healthPaths = map[string]bool{"/healthz": true, "/readyz": true, "/livez": true}

// SetHealthy makes the member's health checks (/readyz, /healthz, /livez)
// answer 503 (false) or pass through again (true), so that the control
// plane takes the member for not Ready while it serves every other request.
func (p *FaultProxy) SetHealthy(healthy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unhealthy = !healthy
}

// HoldWatches stops (true) or resumes (false) passing on watch events;
// events held are passed on, in order, when resumed.
func (p *FaultProxy) HoldWatches(hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = hold
	p.cond.Broadcast()
}

// Requests returns the requests that named resource/name, in the order
// they were sent, each as its method and the member's answer code (what
// the client got may differ: see FailNextCreate), such as "PUT 409"; the
// code is 0 for one not answered.
func (p *FaultProxy) Requests(resource, name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests[resource+"/"+name]...)
}

// Watches is how many watches of resource the proxy has answered.
func (p *FaultProxy) Watches(resource string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watches[resource]
}

// Served is how many requests the proxy has passed on.
func (p *FaultProxy) Served() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Close releases held watches and stops the proxy.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.server.CloseClientConnections()
	p.server.Close()
}

// record notes a request that names an object; a create names it in its
// body, which is read and put back.
func (p *FaultProxy) record(r *http.Request) {
	p.mu.Lock()
	p.served++
	id := strconv.Itoa(p.served)
	p.mu.Unlock()
	resource, name := resourceAndName(r.URL.Path)
	if r.Method == http.MethodPost && name == "" && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return
		}
		name = createdName(body)
	}
	if name == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := resource + "/" + name
	// The answer names its request by a header (its number among those
	// served): the transport may pass on a copy of the request it was
	// given.
	r.Header.Set(requestIDHeader, id)
	p.pending[id] = pendingRequest{key: key, index: len(p.requests[key])}
	p.requests[key] = append(p.requests[key], r.Method+" 0")
}

// requestIDHeader carries the proxy's number of a recorded request.
const requestIDHeader = "X-Kubefed-Test-Fault-Proxy-Request"

// pendingRequest is where a request's answer code is to be recorded.
type pendingRequest struct {
	key   string
	index int
}

// answered records the member's answer code of a recorded request.
func (p *FaultProxy) answered(resp *http.Response) {
	id := resp.Request.Header.Get(requestIDHeader)
	pr, ok := p.pending[id]
	if !ok {
		return
	}
	delete(p.pending, id)
	p.requests[pr.key][pr.index] = resp.Request.Method + " " + strconv.Itoa(resp.StatusCode)
}

// modify applies the faults to the member's answers.
func (p *FaultProxy) modify(resp *http.Response) error {
	req := resp.Request
	resource, name := resourceAndName(req.URL.Path)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answered(resp)
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		p.watches[resource]++
		resp.Body = &heldBody{ReadCloser: resp.Body, p: p}
		return nil
	}
	if req.Method != http.MethodPost || name != "" || resp.StatusCode != http.StatusCreated || len(p.failCreate) == 0 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	if key := resource + "/" + createdName(body); p.failCreate[key] {
		delete(p.failCreate, key)
		body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test's fault proxy after the object was made","reason":"InternalError","code":500}`)
		resp.StatusCode, resp.Status = http.StatusInternalServerError, "500 Internal Server Error"
		resp.Header.Set("Content-Type", "application/json")
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// heldBody passes on a watch's bytes only while the proxy does not hold.
type heldBody struct {
	io.ReadCloser
	p *FaultProxy
}

func (b *heldBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.p.mu.Lock()
	for b.p.hold && !b.p.closed {
		b.p.cond.Wait()
	}
	b.p.mu.Unlock()
	return n, err
}

// resourceAndName reads the resource and object name of an API path:
// /api/v1/namespaces/ns/configmaps/name or /apis/g/v/namespaces/ns/r/name.
func resourceAndName(p string) (string, string) {
	parts := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	switch len(parts) {
	case 1:
		return parts[0], ""
	case 0:
		return "", ""
	default:
		return parts[0], parts[1]
	}
}

// createdName reads metadata.name from a JSON object; "" when absent or
// not JSON.
func createdName(body []byte) string {
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	return obj.Metadata.Name
}
