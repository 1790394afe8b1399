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

func TestProxy_BlackholeCutBlackholesAndHealRestores(t *testing.T) {
	// Registered first, so it runs after every other cleanup.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	p, err := Start(echoServer(t), Blackhole)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	live, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if got, err := roundTrip(live, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}

	p.Cut()
	// The live connection is closed by the cut.
	if _, err := roundTrip(live, 5*time.Second); err == nil {
		t.Fatal("a connection survived the cut")
	}
	// A new connection is accepted but never answered.
	hole, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	_, err = roundTrip(hole, 300*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection during the cut got %v, want a timeout (blackhole)", err)
	}

	p.Heal()
	// The blackholed connection is closed at the heal, and new ones work.
	_ = hole.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := hole.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed connection after the heal: %v, want closed", err)
	}
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := roundTrip(again, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}
}

func TestProxy_RefuseCutClosesAndHealRestores(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	target := echoServer(t)
	p, err := Start(target, Refuse)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Target() != target {
		t.Fatalf("Target() = %s, want %s", p.Target(), target)
	}

	live, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if got, err := roundTrip(live, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	if n := p.Carried(); n != 1 {
		t.Fatalf("Carried() = %d after one connection, want 1", n)
	}

	p.Cut()
	if _, err := roundTrip(live, 5*time.Second); err == nil {
		t.Fatal("a connection survived the cut")
	}
	// A new connection is closed at once, not left hanging.
	refused, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if _, err := roundTrip(refused, 5*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection during the cut got %v, want closed", err)
	}
	if n := p.Carried(); n != 1 {
		t.Fatalf("Carried() = %d after a refused connection, want still 1", n)
	}

	p.Heal()
	again, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := roundTrip(again, 5*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}
	if n := p.Carried(); n != 2 {
		t.Fatalf("Carried() = %d after the heal, want 2", n)
	}
}
