// Package tcpproxy is a loopback TCP forwarder for tests: it stands
// between two programs as a NAT, a proxy or a network link would, and
// can be cut and healed to partition them.
package tcpproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// CutMode is what a cut proxy does with a connection accepted while cut.
type CutMode int

const (
	// Refuse closes each connection accepted while cut at once, as a
	// stopped proxy or a resetting firewall would.
	Refuse CutMode = iota
	// Blackhole keeps each connection accepted while cut open, reads and
	// discards what it sends and never answers, as a partitioned network
	// does; Heal closes them, so both ends notice at once.
	Blackhole
)

// dialTimeout bounds the dial of the target for one connection.
const dialTimeout = 5 * time.Second

// Proxy accepts TCP connections on a loopback port and copies each to
// and from a new connection to its target. Cut closes every live
// connection and treats new ones by the proxy's CutMode until Heal.
type Proxy struct {
	target  string
	mode    CutMode
	ln      net.Listener
	carried atomic.Int64
	live    atomic.Int64

	mu     sync.Mutex
	cut    bool
	closed bool
	conns  map[net.Conn]struct{} // live forwarded connections, both halves
	holes  map[net.Conn]struct{} // blackholed connections
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and forwards what it accepts
// there to target until Close. mode says what a cut does with new
// connections.
func Start(target string, mode CutMode) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, mode: mode, ln: ln,
		conns: map[net.Conn]struct{}{}, holes: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's address, where a client dials instead of the
// target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Carried is the number of connections carried to the target so far:
// accepted while not cut and joined to a connection to the target.
func (p *Proxy) Carried() int64 { return p.carried.Load() }

// Live is the number of connections carried to the target and still
// open.
func (p *Proxy) Live() int64 { return p.live.Load() }

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		switch {
		case p.closed || (p.cut && p.mode == Refuse):
			p.mu.Unlock()
			_ = c.Close()
			continue
		case p.cut:
			p.holes[c] = struct{}{}
			p.wg.Add(1)
			p.mu.Unlock()
			go p.blackhole(c)
			continue
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

// blackhole swallows what c sends until the proxy heals or closes.
func (p *Proxy) blackhole(c net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(io.Discard, c)
	p.mu.Lock()
	delete(p.holes, c)
	p.mu.Unlock()
	_ = c.Close()
}

// forward joins c to a new connection to the target until either side
// ends or the proxy is cut.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, dialTimeout)
	p.mu.Lock()
	if err != nil || p.cut || p.closed {
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	p.carried.Add(1)
	p.live.Add(1)
	defer p.live.Add(-1)
	var both sync.WaitGroup
	both.Add(2)
	pipe := func(dst, src net.Conn) {
		defer both.Done()
		_, _ = io.Copy(dst, src)
		// One direction ended: end the other too, as a real close would.
		_ = dst.Close()
		_ = src.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
	both.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut partitions the link: live connections close, and new ones are
// refused or blackholed, by the proxy's CutMode, until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal ends a cut: blackholed connections close (their dialer
// reconnects) and new connections are forwarded again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for c := range p.holes {
		_ = c.Close()
	}
}

// Close stops the proxy, closes every connection it holds and waits for
// all its goroutines. It may be called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	for c := range p.holes {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
