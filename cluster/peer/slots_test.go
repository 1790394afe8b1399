package peer

import (
	"net"
	"testing"
)

// fakeConn is a connection that only has a source address.
type fakeConn struct {
	net.Conn
	from *net.TCPAddr
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.from }

func from(ip string) *fakeConn { return &fakeConn{from: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}} }

// The slot rules: a source at its cap replaces its own oldest; a full
// pool takes the oldest slot of the source holding the most; an IPv6 /64
// is one source, an IPv4-mapped address its IPv4 one.
func TestHandshakeSlots_WhoGivesWay(t *testing.T) {
	h := newHandshakeSlots()
	first := from("10.0.0.1")
	if gave := h.take(first, 4); gave != nil {
		t.Fatalf("a free slot: %v gave way", gave)
	}
	for range MaxHandshakesPerSource - 1 {
		h.take(from("10.0.0.1"), 100)
	}
	if gave := h.take(from("::ffff:10.0.0.1"), 100); gave != first {
		t.Fatalf("the 9th from one source: %v gave way, want its own oldest", gave)
	}
	h = newHandshakeSlots()
	a1, a2, b1 := from("2001:db8::1"), from("2001:db8::2"), from("2001:db8:0:1::1")
	h.take(b1, 3)
	h.take(a1, 3)
	h.take(a2, 3) // a's /64 holds 2, b's 1
	if gave := h.take(from("192.0.2.7"), 3); gave != a1 {
		t.Fatalf("a full pool: %v gave way, want the oldest of the /64 holding the most", gave)
	}
	if h.len() != 3 || h.bySource["2001:db8::/64"] != 1 {
		t.Fatalf("after: %d slots, %v", h.len(), h.bySource)
	}
	if h.leave(a1) || !h.leave(a2) {
		t.Fatal("leave: a connection that gave way still held a slot, or one that held one did not")
	}
}
