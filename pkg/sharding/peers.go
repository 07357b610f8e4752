package sharding

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
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
)

// Annotations of a membership Lease by which the replicas reach each other.
const (
	// PeerAddressAnnotation is the host:port a replica's peer server
	// listens on.
	PeerAddressAnnotation = "kubefed.io/peer-address"
	// PeerCertificateAnnotation is the replica's peer certificate (DER,
	// base64): the only certificate its peer server presents and its
	// client offers. The Lease is the trust root: a replica talks only to
	// a live replica, through the certificate that replica published.
	PeerCertificateAnnotation = "kubefed.io/peer-certificate"
)

// peerServerName is the name in every peer certificate, checked as the
// server's name; which replica answers is told by the certificate itself.
const peerServerName = "kubefed-replica"

// MaxPeerMessage bounds a message a peer server reads; senders split
// larger ones.
const MaxPeerMessage = 16 << 20

// peerTimeout bounds one message to a peer.
const peerTimeout = 5 * time.Second

// lookUpRate and lookUpBurst bound how often a peer server reads a
// replica's Lease for a certificate its Shard does not show (trusts).
const (
	lookUpRate  = rate.Limit(5)
	lookUpBurst = 10
)

// Peers is the channel between the live replicas: each has a key made at
// start, publishes its certificate and address on its membership Lease
// (Annotations), serves messages from the other live replicas (mutual TLS,
// each side pinned to the certificate the other published) and sends to
// them (Send). Only replicas whose membership Lease is live, as the Shard
// last read them, are trusted either way; a server reads the Lease of a
// client its Shard does not show yet (trusts).
type Peers struct {
	identity string
	cert     tls.Certificate
	der      []byte
	ln       net.Listener
	address  string
	log      logr.Logger

	mu      sync.Mutex
	shard   *Shard
	handler func(from string, body []byte) error
	clients map[string]*peerClient
	// lookUps bounds the Lease reads of certificates the Shard does not
	// show, which anyone reaching the port can ask for.
	lookUps *rate.Limiter
}

type peerClient struct {
	der    []byte
	client *http.Client
}

// NewPeers makes this replica's key and certificate and listens on bind
// (host:port; port 0 picks a free one). The address published is
// advertiseHost (or bind's host, when it is not unspecified) with the port
// listened on.
func NewPeers(identity, bind, advertiseHost string, log logr.Logger) (*Peers, error) {
	if identity == "" {
		return nil, errors.New("peers need a replica identity")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("peer key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: identity},
		DNSNames:              []string{peerServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("peer certificate: %w", err)
	}
	host, _, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("peer bind address %q: %w", bind, err)
	}
	if advertiseHost == "" {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("peer bind address %q listens on every interface: give the address the other replicas reach this one at (--peer-advertise-host, such as the Pod's IP)", bind)
		}
		advertiseHost = host
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("peer listener: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return &Peers{
		identity: identity,
		cert:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		der:      der,
		ln:       ln,
		address:  net.JoinHostPort(advertiseHost, strconv.Itoa(port)),
		log:      log,
		clients:  map[string]*peerClient{},
		lookUps:  rate.NewLimiter(lookUpRate, lookUpBurst),
	}, nil
}

// Identity is this replica's name.
func (p *Peers) Identity() string { return p.identity }

// OwnerOf is the live replica that rendezvous hashing names for name, as
// the shard last read them, or "".
func (p *Peers) OwnerOf(name string) string {
	p.mu.Lock()
	s := p.shard
	p.mu.Unlock()
	if s == nil {
		return ""
	}
	return s.OwnerOf(name)
}

// Address is where the other replicas reach this one.
func (p *Peers) Address() string { return p.address }

// Annotations are what this replica's membership Lease publishes.
func (p *Peers) Annotations() map[string]string {
	return map[string]string{
		PeerAddressAnnotation:     p.address,
		PeerCertificateAnnotation: base64.StdEncoding.EncodeToString(p.der),
	}
}

// SetShard sets the shard whose live replicas are the peers.
func (p *Peers) SetShard(s *Shard) {
	p.mu.Lock()
	p.shard = s
	p.mu.Unlock()
}

// Handle sets what receives the other replicas' messages; nil refuses them.
func (p *Peers) Handle(h func(from string, body []byte) error) {
	p.mu.Lock()
	p.handler = h
	p.mu.Unlock()
}

// peer is a live replica's published address and certificate.
func (p *Peers) peer(identity string) (string, []byte, bool) {
	p.mu.Lock()
	s := p.shard
	p.mu.Unlock()
	if s == nil {
		return "", nil, false
	}
	ann := s.liveAnnotations(identity)
	addr := ann[PeerAddressAnnotation]
	der, ok := publishedCertificate(ann)
	if addr == "" || !ok {
		return "", nil, false
	}
	return addr, der, true
}

// publishedCertificate is the peer certificate a membership Lease's
// annotations publish.
func publishedCertificate(ann map[string]string) ([]byte, bool) {
	der, err := base64.StdEncoding.DecodeString(ann[PeerCertificateAnnotation])
	return der, err == nil && len(der) > 0
}

// Reachable reports whether identity is a live replica that published
// where to reach it.
func (p *Peers) Reachable(identity string) bool {
	_, _, ok := p.peer(identity)
	return ok
}

// Send delivers body to the live replica identity and returns once it
// took it.
func (p *Peers) Send(ctx context.Context, identity string, body []byte) error {
	addr, der, ok := p.peer(identity)
	if !ok {
		return fmt.Errorf("replica %q is not live or publishes no peer address", identity)
	}
	c, err := p.clientFor(identity, der)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("send to replica %q: %w", identity, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("replica %q answered %s", identity, resp.Status)
	}
	return nil
}

// clientFor is a client that trusts only der as identity's server.
func (p *Peers) clientFor(identity string, der []byte) (*http.Client, error) {
	p.mu.Lock()
	if c, ok := p.clients[identity]; ok && bytes.Equal(c.der, der) {
		p.mu.Unlock()
		return c.client, nil
	}
	s := p.shard
	p.mu.Unlock()
	// A new client: those of replicas no longer live go, or every restart
	// of a peer (a new identity) would leave one behind.
	var live []string
	if s != nil {
		live = s.Replicas()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.clients {
		if id != identity && !slices.Contains(live, id) {
			c.client.CloseIdleConnections()
			delete(p.clients, id)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("replica %q's peer certificate: %w", identity, err)
	}
	if cert.Subject.CommonName != identity {
		return nil, fmt.Errorf("replica %q published a peer certificate for %q", identity, cert.Subject.CommonName)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	if old, ok := p.clients[identity]; ok {
		old.client.CloseIdleConnections()
	}
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			RootCAs:      pool,
			ServerName:   peerServerName,
			Certificates: []tls.Certificate{p.cert},
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute,
	}}
	p.clients[identity] = &peerClient{der: der, client: c}
	return c, nil
}

// NeedLeaderElection: every replica serves its peers.
func (p *Peers) NeedLeaderElection() bool { return false }

// Start serves the other replicas until ctx ends; it implements
// manager.Runnable.
func (p *Peers) Start(ctx context.Context) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: peerTimeout,
		ReadTimeout:       2 * peerTimeout,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{p.cert},
			// The client proves it holds the key of the certificate it
			// offers; which certificates are trusted is checked here, by
			// pinning, not by chains: every client then offers its own,
			// where with a list of acceptable issuers a replica this one
			// has not yet seen would offer none.
			ClientAuth: tls.RequireAnyClientCert,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return errors.New("a peer certificate is needed")
				}
				leaf := cs.PeerCertificates[0]
				if now := time.Now(); now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
					return fmt.Errorf("peer certificate of %q is not valid now", leaf.Subject.CommonName)
				}
				ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
				defer cancel()
				if !p.trusts(ctx, leaf.Subject.CommonName, leaf.Raw) {
					return fmt.Errorf("peer certificate of %q is not one a live replica published", leaf.Subject.CommonName)
				}
				return nil
			},
		},
		// The server's own errors (a handshake refused) go to this
		// replica's log as structured lines, not to standard error.
		ErrorLog: log.New(serverErrors{p.log}, "", 0),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(p.ln, "", "") }()
	p.log.Info("serving the other replicas", "address", p.address)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("peer server: %w", err)
	}
}

// trusts reports whether der is the certificate the live replica identity
// published. A certificate this replica's Shard does not show is looked
// up in identity's Lease (at most lookUpRate times a second, whoever
// asks): a replica that started since this one's last step is heard at
// once, rather than refused until then.
func (p *Peers) trusts(ctx context.Context, identity string, der []byte) bool {
	if _, published, ok := p.peer(identity); ok && bytes.Equal(published, der) {
		return true
	}
	p.mu.Lock()
	s := p.shard
	p.mu.Unlock()
	if s == nil || identity == p.identity || !p.lookUps.Allow() {
		return false
	}
	ann, ok := s.lookUp(ctx, identity)
	if !ok {
		return false
	}
	published, ok := publishedCertificate(ann)
	return ok && bytes.Equal(published, der)
}

func (p *Peers) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(rw, "not found", http.StatusNotFound)
		return
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		http.Error(rw, "a peer certificate is needed", http.StatusUnauthorized)
		return
	}
	leaf := r.TLS.PeerCertificates[0]
	from := leaf.Subject.CommonName
	// Again for each message: a connection outlives its replica's Lease.
	if !p.trusts(r.Context(), from, leaf.Raw) {
		// Its replica's Lease expired since the handshake, or names
		// another certificate now.
		http.Error(rw, "not a live replica's certificate", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPeerMessage+1))
	if err != nil {
		http.Error(rw, "reading the message: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > MaxPeerMessage {
		http.Error(rw, "message too large", http.StatusRequestEntityTooLarge)
		return
	}
	p.mu.Lock()
	h := p.handler
	p.mu.Unlock()
	if h == nil {
		http.Error(rw, "not ready for messages", http.StatusServiceUnavailable)
		return
	}
	if err := h(from, body); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	rw.WriteHeader(http.StatusNoContent)
}

// serverErrors writes the peer server's error lines to a logr.Logger.
type serverErrors struct{ log logr.Logger }

func (w serverErrors) Write(b []byte) (int, error) {
	w.log.Info("peer server", "error", strings.TrimSpace(string(b)))
	return len(b), nil
}
