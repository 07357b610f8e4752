package sharding

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

type inbox struct {
	mu   sync.Mutex
	from []string
	body []string
}

func (b *inbox) take(from string, body []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.from = append(b.from, from)
	b.body = append(b.body, string(body))
	return nil
}

func (b *inbox) got() ([]string, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.from...), append([]string(nil), b.body...)
}

// peerFleet is a fleet whose replicas each serve their peers.
func peerFleet(t *testing.T, replicas ...string) (*testFleet, map[string]*Peers, map[string]*inbox) {
	t.Helper()
	f := newFleet(t, []string{"a", "b"})
	peers, inboxes := map[string]*Peers{}, map[string]*inbox{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, r := range replicas {
		peers[r], inboxes[r] = startPeer(t, ctx, f, r)
	}
	f.tick()
	f.tick()
	return f, peers, inboxes
}

// startPeer adds a replica serving its peers to f; it takes no step.
func startPeer(t *testing.T, ctx context.Context, f *testFleet, identity string) (*Peers, *inbox) {
	t.Helper()
	p, err := NewPeers(identity, "127.0.0.1:0", "", logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	s := f.add(identity)
	s.o.Annotations = p.Annotations()
	p.SetShard(s)
	in := &inbox{}
	p.Handle(in.take)
	go func() { _ = p.Start(ctx) }()
	return p, in
}

func TestPeersReachEachOtherThroughTheCertificatesTheirLeasesPublish(t *testing.T) {
	f, peers, inboxes := peerFleet(t, "r1", "r2")
	ctx := context.Background()
	if err := send(ctx, peers["r1"], "r2", "hello"); err != nil {
		t.Fatal(err)
	}
	if err := send(ctx, peers["r2"], "r1", "back"); err != nil {
		t.Fatal(err)
	}
	from, body := inboxes["r2"].got()
	if len(from) != 1 || from[0] != "r1" || body[0] != "hello" {
		t.Fatalf("r2 got %v %v, want hello from r1", from, body)
	}
	from, body = inboxes["r1"].got()
	if len(from) != 1 || from[0] != "r2" || body[0] != "back" {
		t.Fatalf("r1 got %v %v, want back from r2", from, body)
	}

	// A replica that is not live is neither sent to nor heard.
	f.stopped["r2"] = true
	for range 10 {
		f.tick()
	}
	if peers["r1"].Reachable("r2") {
		t.Fatal("r2's Lease expired, yet r1 would send to it")
	}
	if err := send(ctx, peers["r1"], "r2", "late"); err == nil || !strings.Contains(err.Error(), "not live") {
		t.Fatalf("sending to an expired replica: %v", err)
	}
	// r2 still sees r1 live (it took no step since): r1 refuses it, as
	// r1's view of the live replicas no longer holds r2's certificate.
	if err := send(ctx, peers["r2"], "r1", "from the dead"); err == nil {
		t.Fatal("r1 took a message from a replica whose Lease expired")
	}
	if from, _ := inboxes["r1"].got(); len(from) != 1 {
		t.Fatalf("r1 got %v", from)
	}
}

// A replica that just started sees the others at its first step, and
// sends at once; the others hear it before their next step shows it, from
// its Lease, and still refuse a certificate no Lease published.
func TestPeersHearAReplicaThatStartedSinceTheirLastStep(t *testing.T) {
	f, peers, inboxes := peerFleet(t, "r1", "r2")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r3, _ := startPeer(t, ctx, f, "r3")
	f.shards["r3"].step(ctx)
	if !r3.Reachable("r1") {
		t.Fatal("r3 does not see r1 after its first step")
	}
	if peers["r1"].Reachable("r3") {
		t.Fatal("r1 shows r3 already; the test needs a step r1 has not taken")
	}
	if err := send(ctx, r3, "r1", "new here"); err != nil {
		t.Fatalf("r1 refused the first message of a replica that started since its last step: %v", err)
	}
	if from, body := inboxes["r1"].got(); len(from) != 1 || from[0] != "r3" || body[0] != "new here" {
		t.Fatalf("r1 got %v %v, want one message from r3", from, body)
	}

	// A certificate with a name no Lease holds is refused, looked up or not.
	stranger, err := NewPeers("r9", "127.0.0.1:0", "", logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	stranger.SetShard(f.shards["r3"])
	if err := send(ctx, stranger, "r1", "let me in"); err == nil {
		t.Fatal("r1 took a message from a replica with no Lease")
	}
	// r2's Lease expires where r1 sees it: r1 refuses r2 though a Lease
	// with r2's certificate is still there to read.
	f.stopped["r2"] = true
	for range 10 {
		f.tick()
	}
	if err := send(ctx, peers["r2"], "r1", "from the dead"); err == nil {
		t.Fatal("r1 took a message from a replica whose Lease it saw expire")
	}
	if from, _ := inboxes["r1"].got(); len(from) != 1 {
		t.Fatalf("r1 got %v, want r3's message alone", from)
	}
}

func TestPeersRefuseACertificateNoLiveReplicaPublished(t *testing.T) {
	_, peers, inboxes := peerFleet(t, "r1", "r2")
	// An impostor with r1's name and address but a key of its own: r2
	// pins r1's published certificate, and r1 refuses the impostor's.
	impostor, err := NewPeers("r1", "127.0.0.1:0", "", logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	impostor.SetShard(peers["r1"].shard)
	if err := send(context.Background(), impostor, "r2", "forged"); err == nil {
		t.Fatal("r2 took a message from a certificate no live replica published")
	}
	if from, _ := inboxes["r2"].got(); len(from) != 0 {
		t.Fatalf("r2 got %v", from)
	}
}

func TestPeersNeedAnAddressTheOthersCanReach(t *testing.T) {
	if _, err := NewPeers("r1", "0.0.0.0:0", "", logr.Discard()); err == nil || !strings.Contains(err.Error(), "--peer-advertise-host") {
		t.Fatalf("listening on every interface without an advertised host: %v", err)
	}
	p, err := NewPeers("r1", "0.0.0.0:0", "10.1.2.3", logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Address(), "10.1.2.3:") {
		t.Fatalf("address %s", p.Address())
	}
	_ = p.ln.Close()
}

func send(ctx context.Context, p *Peers, to, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return p.Send(ctx, to, []byte(body))
}

// A replica keeps clients of live peers only: each restart of a peer is a
// new identity, and its old client goes once a new one is made.
func TestPeersForgetTheClientsOfReplicasGone(t *testing.T) {
	f, peers, _ := peerFleet(t, "r1", "r2")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := send(ctx, peers["r1"], "r2", "hello"); err != nil {
		t.Fatal(err)
	}
	f.stopped["r2"] = true
	startPeer(t, ctx, f, "r3")
	for range 10 {
		f.tick()
	}
	if err := send(ctx, peers["r1"], "r3", "hello"); err != nil {
		t.Fatal(err)
	}
	peers["r1"].mu.Lock()
	defer peers["r1"].mu.Unlock()
	if _, ok := peers["r1"].clients["r2"]; ok || len(peers["r1"].clients) != 1 {
		t.Errorf("r1 keeps clients of %v, want r3's alone", slices.Collect(maps.Keys(peers["r1"].clients)))
	}
}

// What a replica last read of the others is trusted for a Lease duration
// at most: while the Leases cannot be listed, a replica whose Lease
// expired meanwhile would otherwise still be sent to and heard.
func TestPeersTrustTheLastReadOfTheLeasesForALeaseDuration(t *testing.T) {
	f, peers, _ := peerFleet(t, "r1", "r2")
	if !peers["r1"].Reachable("r2") {
		t.Fatal("r1 does not see r2")
	}
	f.store.refuseLists(true)
	f.tick()
	if !peers["r1"].Reachable("r2") {
		t.Fatal("one failed list, and r1 no longer sees r2")
	}
	for range 8 { // 16 s
		f.tick()
	}
	if peers["r1"].Reachable("r2") {
		t.Fatal("r1 still sends to r2 on a read of the Leases older than their duration")
	}
	f.store.refuseLists(false)
	f.tick()
	if !peers["r1"].Reachable("r2") {
		t.Fatal("the Leases read again, and r1 does not see r2")
	}
}
