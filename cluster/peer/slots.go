package peer

import (
	"net"
	"net/netip"
)

// handshakeSlots are the inbound connections in their handshake, by
// source. They are not held first come, first served: a silent
// connection would then keep its slot for HandshakeTimeout while a peer's
// dial is refused, and a stranger with no credential that redials as it
// is cut holds every slot for as long as it likes (a few dozen
// connections a second). Instead a new connection always gets a slot, and
// the oldest connection of the source holding the most gives way to it:
//
//   - one source (an IPv4 address, an IPv6 /64) holds at most
//     MaxHandshakesPerSource slots; its next connection replaces its own
//     oldest, so a stranger on a peer's host cannot refuse that peer either;
//   - once all MaxHandshakes are taken, the oldest connection among the
//     sources that hold the most gives way.
//
// A peer's handshake completes in two round trips. To cut it, a stranger
// must open enough new connections in that time to make the peer's the
// oldest of a source that holds the most: MaxHandshakesPerSource from the
// peer's own address, or, from addresses of its own that each hold no
// more than the peer's (MaxHandshakes addresses against a peer's single
// dial), as many as it takes to age out every connection older than the
// peer's. With fewer addresses it cannot reach a peer's connection at
// all. Silent connections held open gain it nothing.
type handshakeSlots struct {
	byConn   map[net.Conn]slot
	bySource map[string]int
	seq      uint64 // arrivals so far: a slot's age
}

type slot struct {
	source string
	seq    uint64
}

func newHandshakeSlots() *handshakeSlots {
	return &handshakeSlots{byConn: map[net.Conn]slot{}, bySource: map[string]int{}}
}

// take gives c a slot, when at most limit may be taken, and returns the
// connection that gave way to it (nil: none), whose slot is already free.
func (h *handshakeSlots) take(c net.Conn, limit int) (gaveWay net.Conn) {
	src := sourceOf(c.RemoteAddr())
	switch {
	case h.bySource[src] >= MaxHandshakesPerSource:
		gaveWay = h.oldest(func(s slot) bool { return s.source == src })
	case len(h.byConn) >= limit:
		most := 0
		for _, n := range h.bySource {
			most = max(most, n)
		}
		gaveWay = h.oldest(func(s slot) bool { return h.bySource[s.source] == most })
	}
	if gaveWay != nil {
		h.leave(gaveWay)
	}
	h.seq++
	h.byConn[c] = slot{source: src, seq: h.seq}
	h.bySource[src]++
	return gaveWay
}

// oldest is the earliest arrival among the slots that match, or nil.
func (h *handshakeSlots) oldest(match func(slot) bool) net.Conn {
	var (
		found net.Conn
		first uint64
	)
	for c, s := range h.byConn {
		if match(s) && (found == nil || s.seq < first) {
			found, first = c, s.seq
		}
	}
	return found
}

// leave frees c's slot and reports whether it held one (false: it gave
// way to a newer connection already).
func (h *handshakeSlots) leave(c net.Conn) bool {
	s, ok := h.byConn[c]
	if !ok {
		return false
	}
	delete(h.byConn, c)
	if h.bySource[s.source]--; h.bySource[s.source] == 0 {
		delete(h.bySource, s.source)
	}
	return true
}

func (h *handshakeSlots) len() int { return len(h.byConn) }

// sourceOf is the source a connection's slots are counted by: its IPv4
// address, or the /64 of its IPv6 address (what one host is usually
// given, so that a host cannot pass for 2^64 sources).
func sourceOf(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return a.String()
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}
