package framework

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func TestDelayProxyDelaysEveryRequestWithoutCappingThroughput(t *testing.T) {
	echo := serveLines(t, func(c net.Conn, line string) bool {
		_, err := c.Write([]byte(line))
		return err == nil
	})

	const delay = 300 * time.Millisecond
	p, c := dialThroughProxy(t, echo.Addr().String(), delay)
	r := bufio.NewReader(c)

	start := time.Now()
	for _, msg := range []string{"one\n", "two\n", "three\n"} {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"one\n", "two\n", "three\n"} {
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("got %q, want %q: the proxy reordered or lost data", got, want)
		}
	}
	elapsed := time.Since(start)
	if elapsed < delay {
		t.Errorf("three requests answered after %v, before the delay of %v", elapsed, delay)
	}
	// Delayed one after the other, three requests would take 3×delay.
	if elapsed >= 3*delay {
		t.Errorf("three requests took %v: the delay was serialized, capping throughput", elapsed)
	}
	if p.Connections() != 1 || p.Chunks() < 3 {
		t.Errorf("connections=%d chunks=%d, want 1 and at least 3", p.Connections(), p.Chunks())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("a connection survived Close")
	}
}

func TestDelayProxyHeldPassesNothingEitherWayUntilReleased(t *testing.T) {
	received := make(chan string, 10)
	push := make(chan struct{})
	server := serveLines(t, func(c net.Conn, line string) bool {
		received <- line
		if line == "push\n" {
			// Sent by the server on its own, as a watch event is.
			<-push
			if _, err := c.Write([]byte("pushed\n")); err != nil {
				return false
			}
		}
		return true
	})

	p, c := dialThroughProxy(t, server.Addr().String(), 0)
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("push\n")); err != nil {
		t.Fatal(err)
	}
	if got := <-received; got != "push\n" {
		t.Fatalf("server received %q", got)
	}

	// Held: the server's answer stops at the proxy.
	p.SetHeld(true)
	close(push)
	waitHolding(t, p, 1)
	// And so does what the client sends.
	if _, err := c.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	waitHolding(t, p, 2)
	select {
	case got := <-received:
		t.Fatalf("the server received %q while the proxy was held", got)
	default:
	}

	p.SetHeld(false)
	if got, err := r.ReadString('\n'); err != nil || got != "pushed\n" {
		t.Fatalf("after the release the client read %q, %v; want the held answer", got, err)
	}
	if got := <-received; got != "two\n" {
		t.Fatalf("after the release the server received %q; want the held request", got)
	}
	if p.Holding() != 0 {
		t.Errorf("holding %d chunks after the release", p.Holding())
	}

	// Close ends a proxy that is held.
	p.SetHeld(true)
	if _, err := c.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	waitHolding(t, p, 1)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitHolding waits until p holds n chunks.
func waitHolding(t *testing.T, p *DelayProxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Holding() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d chunks, want %d", p.Holding(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dialThroughProxy starts a proxy to target with delay and connects to it;
// both are closed when the test ends.
func dialThroughProxy(t *testing.T, target string, delay time.Duration) (*DelayProxy, net.Conn) {
	t.Helper()
	p, err := StartDelayProxy(target, delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return p, c
}

// serveLines listens on loopback and hands every line a connection sends
// to handle, until handle returns false; it stops when the test ends.
func serveLines(t *testing.T, handle func(c net.Conn, line string) bool) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || !handle(c, line) {
						return
					}
				}
			}()
		}
	}()
	return l
}
