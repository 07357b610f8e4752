package framework

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func TestDelayProxyDelaysEveryRequestWithoutCappingThroughput(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()

	const delay = 300 * time.Millisecond
	p, err := StartDelayProxy(echo.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
