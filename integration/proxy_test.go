package integration

import (
	"errors"
	"io"
	"net"
	"sync"
)

// linkProxy forwards TCP connections from one node to one address of
// another node (one direction of one link). Cut closes every live
// connection and blackholes new ones (accepted, read and discarded, never
// answered), as a partitioned network does; Heal closes the blackholed
// connections, so both ends notice at once, and forwards again.
type linkProxy struct {
	name   string
	target string
	ln     net.Listener

	mu     sync.Mutex
	cut    bool
	closed bool
	conns  map[net.Conn]struct{} // live forwarded connections, both halves
	holes  map[net.Conn]struct{} // blackholed connections
	wg     sync.WaitGroup
}

// newLinkProxy listens on a free loopback port and forwards to target.
func newLinkProxy(name, target string) (*linkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &linkProxy{name: name, target: target, ln: ln,
		conns: map[net.Conn]struct{}{}, holes: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is where the source node dials instead of target.
func (p *linkProxy) Addr() string { return p.ln.Addr().String() }

func (p *linkProxy) acceptLoop() {
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
		case p.closed:
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

// blackhole swallows what c sends until the link heals or closes.
func (p *linkProxy) blackhole(c net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(io.Discard, c)
	p.mu.Lock()
	delete(p.holes, c)
	p.mu.Unlock()
	_ = c.Close()
}

// forward joins c to a new connection to the target until either side
// ends or the link is cut.
func (p *linkProxy) forward(c net.Conn) {
	defer p.wg.Done()
	up, err := net.Dial("tcp", p.target)
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

// Cut partitions the link: live connections close, new ones hang.
func (p *linkProxy) Cut() {
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

// Heal ends the partition: blackholed connections close (their dialer
// reconnects) and new connections are forwarded again.
func (p *linkProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for c := range p.holes {
		_ = c.Close()
	}
}

// Close stops the proxy and waits for all its goroutines.
func (p *linkProxy) Close() {
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
