package httpapi

import (
	"net"
	"sync"
)

// limitListener accepts at most limit connections at once: Accept waits
// until one of them is closed. A refused client would only retry; a
// waiting one is served as soon as a slot frees (the read timeouts free
// those of slow clients).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// LimitListener wraps l so that it holds at most limit connections open
// at once (limit > 0): Accept waits for a slot, and Close wakes it.
func LimitListener(l net.Listener, limit int) net.Listener {
	return newLimitListener(l, limit)
}

func newLimitListener(l net.Listener, limit int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, limit), done: make(chan struct{})}
}

// Accept takes a slot, then a connection; the slot is given back when the
// connection is closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, free: func() { <-l.slots }}, nil
}

// Close stops the listener and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
