package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zerotal/lock/api"
)

// What a client may hold on the HTTP API before it has proved anything:
// every limit here applies before the token is checked.
//
//   - headers: Config.HTTPReadTimeout from the connection's first byte
//     (http.Server.ReadHeaderTimeout, which also bounds a TLS handshake),
//     at most maxHeaderBytes;
//   - body: Config.HTTPReadTimeout from the end of the headers (readBody);
//   - idle keep-alive connections: httpIdleTimeout;
//   - connections: Config.MaxConns (limitListener).
//
// The server has no WriteTimeout and no ReadTimeout, on purpose. A waiting
// acquire (wait_ms up to MaxWait) runs in its handler after its body is
// read, and answers at its end. WriteTimeout runs from the end of the
// headers: the answer of every wait longer than it would fail
// (TestHTTP_TricklingClientsAreCut sees it). ReadTimeout runs from the
// request's first byte and stays on the connection while the handler runs;
// only an undocumented step of today's net/http (the background read it
// starts once the body is consumed clears the deadline) keeps it from
// failing that read and cancelling the request's context mid-wait. So
// readBody sets a read deadline for the body alone, and lifts it itself
// once the whole body is in, through http.ResponseController: a long wait
// does not depend on net/http's internals.

// maxHeaderBytes caps a request's header block: the API's headers are a
// bearer token, a cluster ID and a few standard ones. (net/http allows
// 4 KiB more than this before answering 431.)
const maxHeaderBytes = 16 << 10

// httpIdleTimeout closes keep-alive connections that carry no request:
// each one holds a slot of MaxConns.
const httpIdleTimeout = 2 * time.Minute

// readBody reads the request body, at most maxBodyBytes+1 of it, within
// Config.HTTPReadTimeout, before any handler (or the token check) runs. A
// client that trickles its body is answered 408 and disconnected at the
// deadline, whatever it has sent. The handler then reads the same bytes
// from memory and gives the answers for a bad or oversized body as before.
func (n *Node) readBody(h http.Handler) http.Handler {
	timeout := n.cfg.HTTPReadTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// ErrNotSupported: not a server connection (Handler in a test).
		bounded := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
		if err != nil {
			w.Header().Set("Connection", "close")
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				writeJSON(w, http.StatusRequestTimeout, api.ErrorBody{Code: api.CodeInvalid,
					Message: fmt.Sprintf("cluster: request body not received within %s", timeout)})
				return
			}
			writeError(w, invalidf("body", "cannot read the request body: %v", err))
			return
		}
		if bounded && len(raw) <= maxBodyBytes {
			// The whole body is in: lift the deadline, so that the wait
			// in the handler and the server's watch for a client that
			// goes away run unbounded. A body over the limit keeps it:
			// the handler answers 413, and the server's discarding of the
			// rest must not wait on the client for ever.
			_ = rc.SetReadDeadline(time.Time{})
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
		h.ServeHTTP(w, r)
	})
}

// limitListener accepts at most cap connections at once: Accept waits
// until one of them is closed. A refused client would only retry; a
// waiting one is served as soon as a slot frees (the read timeouts free
// those of slow clients).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
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
