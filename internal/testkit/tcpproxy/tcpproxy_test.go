package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// echoServer answers every line with the same line until closed.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// roundTrip sends a line over c and reads the answer, within d.
func roundTrip(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// startProxy starts a proxy in mode to an echo server, checked for
// leaked goroutines once every cleanup has run.
func startProxy(t *testing.T, mode CutMode) (*Proxy, string) {
	t.Helper()
	// Registered first, so it runs after every other cleanup.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	target := echoServer(t)
	p, err := Start(target, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, target
}

// dial connects to the proxy, closed at the end of the test.
func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// mustEcho requires a round trip over c to be answered.
func mustEcho(t *testing.T, c net.Conn, when string) {
	t.Helper()
	if got, err := roundTrip(c, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("%s: %q, %v", when, got, err)
	}
}

func TestProxy_BlackholeCutBlackholesAndHealRestores(t *testing.T) {
	p, _ := startProxy(t, Blackhole)
	live := dial(t, p)
	mustEcho(t, live, "through the proxy")

	p.Cut()
	// The live connection is closed by the cut.
	if _, err := roundTrip(live, 5*time.Second); err == nil {
		t.Fatal("a connection survived the cut")
	}
	// A new connection is accepted but never answered.
	hole := dial(t, p)
	if _, err := roundTrip(hole, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection during the cut got %v, want a timeout (blackhole)", err)
	}

	p.Heal()
	// The blackholed connection is closed at the heal, and new ones work.
	_ = hole.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := hole.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection after the heal: %v, want closed", err)
	}
	mustEcho(t, dial(t, p), "after the heal")
}

func TestProxy_RefuseCutClosesAndHealRestores(t *testing.T) {
	p, target := startProxy(t, Refuse)
	if p.Target() != target {
		t.Fatalf("Target() = %s, want %s", p.Target(), target)
	}
	carried := func(want int64, when string) {
		t.Helper()
		if n := p.Carried(); n != want {
			t.Fatalf("Carried() = %d %s, want %d", n, when, want)
		}
	}
	live := dial(t, p)
	mustEcho(t, live, "through the proxy")
	carried(1, "after one connection")

	p.Cut()
	if _, err := roundTrip(live, 5*time.Second); err == nil {
		t.Fatal("a connection survived the cut")
	}
	// A new connection is closed at once, not left hanging.
	if _, err := roundTrip(dial(t, p), 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection during the cut got %v, want closed", err)
	}
	carried(1, "after a refused connection")

	p.Heal()
	mustEcho(t, dial(t, p), "after the heal")
	carried(2, "after the heal")
}
