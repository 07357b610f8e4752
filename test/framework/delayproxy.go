package framework

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy is a TCP proxy on loopback that holds every chunk a client
// sends for a fixed delay before passing it on, so that every request
// through it (TLS handshakes included) takes at least that long, as with a
// member in a far region or behind an overloaded link. Answers pass
// straight back. It sees only bytes: TLS goes through it end to end.
//
// Held (SetHeld), it passes nothing either way, on open connections and
// new ones alike, which a client cannot tell from a member whose API server
// hangs; but the member's processes go on running, so a test on one machine
// can make a member unreachable without the member's own stop and resumption
// competing for the machine. Released, what waited passes on in order.
type DelayProxy struct {
	listener net.Listener
	target   string
	delay    time.Duration

	connections atomic.Int64
	chunks      atomic.Int64
	holding     atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	held   bool
	// unheld is signalled when the proxy is released or closed.
	unheld *sync.Cond
	wg     sync.WaitGroup
}

// StartDelayProxy listens on a free loopback port and forwards to target
// (host:port) with delay added to every chunk the client sends.
func StartDelayProxy(target string, delay time.Duration) (*DelayProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{listener: l, target: target, delay: delay, conns: map[net.Conn]struct{}{}}
	p.unheld = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *DelayProxy) Addr() string { return p.listener.Addr().String() }

// Connections is how many client connections the proxy accepted.
func (p *DelayProxy) Connections() int64 { return p.connections.Load() }

// Chunks is how many delayed chunks the proxy passed on to the target.
func (p *DelayProxy) Chunks() int64 { return p.chunks.Load() }

// Holding is how many chunks, either way, the proxy holds right now.
func (p *DelayProxy) Holding() int64 { return p.holding.Load() }

// SetHeld holds (true) or releases (false) everything passing through the
// proxy.
func (p *DelayProxy) SetHeld(held bool) {
	p.mu.Lock()
	p.held = held
	p.mu.Unlock()
	if !held {
		p.unheld.Broadcast()
	}
}

// waitUnheld waits while the proxy is held; false once it is closed.
func (p *DelayProxy) waitUnheld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held && !p.closed {
		p.holding.Add(1)
		defer p.holding.Add(-1)
	}
	for p.held && !p.closed {
		p.unheld.Wait()
	}
	return !p.closed
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *DelayProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.unheld.Broadcast()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.listener.Close()
	p.wg.Wait()
	return err
}

func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *DelayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *DelayProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.connections.Add(1)
		p.wg.Go(func() { p.serve(client) })
	}
}

// chunk is client data and when it may go on.
type chunk struct {
	data []byte
	due  time.Time
}

func (p *DelayProxy) serve(client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	upstream, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		return
	}
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)

	// Reading and writing are apart so that the delay is latency, not a
	// cap on throughput: chunks read meanwhile wait out their own delay.
	pending := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(pending)
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				pending <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	})
	wg.Go(func() {
		for c := range pending {
			time.Sleep(time.Until(c.due))
			if !p.waitUnheld() {
				_ = client.Close()
				for range pending {
				}
				return
			}
			p.chunks.Add(1)
			if _, err := upstream.Write(c.data); err != nil {
				_ = client.Close()
				for range pending {
				}
				return
			}
		}
		if tc, ok := upstream.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	})
	err = p.copyBack(client, upstream)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		_ = upstream.Close()
	}
	_ = client.Close()
	wg.Wait()
}

// copyBack passes the target's answers back to the client, as they come
// unless the proxy is held.
func (p *DelayProxy) copyBack(client, upstream net.Conn) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := upstream.Read(buf)
		if n > 0 {
			if !p.waitUnheld() {
				return net.ErrClosed
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
