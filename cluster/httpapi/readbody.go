package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
)

// What a client may hold on the HTTP API before it has proved anything:
// every limit here applies before the token is checked.
//
//   - headers: the read timeout from the connection's first byte
//     (http.Server.ReadHeaderTimeout, which also bounds a TLS handshake),
//     at most MaxHeaderBytes;
//   - body: Options.ReadTimeout from the end of the headers (readBody);
//   - idle keep-alive connections: IdleTimeout;
//   - connections: a cap (LimitListener).
//
// The handler New builds sets the body's; the server that serves it sets
// the others (package cluster does, from its Config).
//
// The server has no WriteTimeout and no ReadTimeout, on purpose. A waiting
// acquire (wait_ms up to MaxWait) runs in its handler after its body is
// read, and answers at its end. WriteTimeout runs from the end of the
// headers: the answer of every wait longer than it would fail
// (cluster's TestHTTP_TricklingClientsAreCut sees it). ReadTimeout runs from the
// request's first byte and stays on the connection while the handler runs;
// only an undocumented step of today's net/http (the background read it
// starts once the body is consumed clears the deadline) keeps it from
// failing that read and cancelling the request's context mid-wait. So
// readBody sets a read deadline for the body alone, and lifts it itself
// once the whole body is in, through http.ResponseController: a long wait
// does not depend on net/http's internals.

// MaxHeaderBytes caps a request's header block (http.Server.MaxHeaderBytes):
// the API's headers are a bearer token, a cluster ID and a few standard
// ones. (net/http allows 4 KiB more than this before answering 431.)
const MaxHeaderBytes = 16 << 10

// IdleTimeout closes keep-alive connections that carry no request
// (http.Server.IdleTimeout): each one holds a slot of the connection cap.
const IdleTimeout = 2 * time.Minute

// readBody reads the request body, at most MaxBodyBytes+1 of it, within
// timeout, before any handler (or the token check) runs. A client that
// trickles its body is answered 408 and disconnected at the deadline,
// whatever it has sent. The handler then decodes the same bytes from
// memory and gives the answers for a bad or oversized body. timeout 0:
// no deadline.
func readBody(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// ErrNotSupported: not a server connection (Handler in a test).
		bounded := timeout > 0 && rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
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
		if bounded && len(raw) <= MaxBodyBytes {
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
