package httpapi

import (
	"errors"
	"net"
	"testing"
	"time"
)

// The connection cap: Accept hands out at most limit connections at once,
// waits for one to close before the next, and is woken by Close.
func TestHTTP_ConnectionCap(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(raw, 2)
	accepted := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	defer second.Close()
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a third connection was accepted while two were open (limit 2)")
	case <-time.After(200 * time.Millisecond): // bounded check that nothing happens
	}
	_ = first.Close()
	third := <-accepted // the freed slot lets the queued connection in
	defer third.Close()
	_ = first.Close() // a second Close gives back nothing more
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-acceptErr; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if n := len(ln.slots); n != 2 {
		t.Fatalf("%d slots taken with two connections open, want 2", n)
	}
}
