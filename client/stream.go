package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api/stream"
)

// Timings of the stream transport.
const (
	// streamIdle closes a stream that carried nothing for this long,
	// before the node's own idle timeout (2 minutes) can close it under a
	// request on its way.
	streamIdle = 90 * time.Second
	// streamHandshake bounds the dial and the upgrade of a new stream.
	streamHandshake = 5 * time.Second
	// noStreamFor is how long a node that refused the upgrade (an older
	// version, a proxy in between) is spoken to in plain HTTP before the
	// stream is tried again.
	noStreamFor = time.Minute
	// redialAfter spaces out the dials of a stream to a node that could
	// not be reached.
	redialAfter = time.Second
)

// errNoStream: no stream to the node (yet, or it does not serve one); use
// plain HTTP. errStreamGone: the stream ended before a request went on it.
var (
	errNoStream   = errors.New("client: no API stream to the node")
	errStreamGone = errors.New("client: the API stream ended before the request was sent")
)

// streamTransport carries the client's requests to plain-http nodes over
// the API stream (package api/stream): one connection per node, every
// request a frame, every frame that is ready written at once. Requests it
// does not carry (https, other methods) and nodes without the stream go
// through plain, the HTTP/1.1 transport. To the client it is an
// http.RoundTripper like any other: the answer of a frame is the answer
// of the same plain request.
type streamTransport struct {
	plain *http.Transport
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	// ctx ends with Close, and with it any upgrade in progress.
	ctx    context.Context
	cancel context.CancelFunc
	// silent is how long a stream may send nothing while a request given
	// up waited on it before the stream itself is taken to be dead: the
	// client's AttemptTimeout.
	silent time.Duration
	opened atomic.Int64 // streams opened, for tests

	mu       sync.Mutex
	conns    map[string]*streamConn
	dialing  map[string]bool
	noStream map[string]time.Time
	closed   atomic.Bool // Close was called: streams close once idle
}

func newStreamTransport(plain *http.Transport, silent time.Duration) *streamTransport {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamTransport{
		ctx:      ctx,
		cancel:   cancel,
		silent:   silent,
		plain:    plain,
		dial:     plain.DialContext,
		conns:    map[string]*streamConn{},
		dialing:  map[string]bool{},
		noStream: map[string]time.Time{},
	}
}

// RoundTrip sends req over the node's stream, or through plain HTTP.
func (t *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || (req.Method != http.MethodGet && req.Method != http.MethodPost) {
		return t.plain.RoundTrip(req)
	}
	sc, err := t.conn(req)
	if err != nil {
		return t.plainOnce(req) // errNoStream: the only error conn returns
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		body, err = io.ReadAll(io.LimitReader(req.Body, stream.MaxFrame+1))
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	resp, err := sc.roundTrip(req, body)
	if errors.Is(err, errStreamGone) {
		// The stream ended before this request went on it (closed while
		// idle, or broken by another request): nothing was sent, so plain
		// HTTP carries it instead of failing a call that never left.
		plain := req.Clone(req.Context())
		plain.Body = io.NopCloser(bytes.NewReader(body))
		plain.ContentLength = int64(len(body))
		return t.plain.RoundTrip(plain)
	}
	return resp, err
}

// Close closes the streams that carry no request now, and every other
// once its last request is answered; no new stream is opened.
func (t *streamTransport) Close() {
	t.closed.Store(true)
	t.cancel()
	t.CloseIdleConnections()
}

// CloseIdleConnections closes the streams that carry no request, and the
// plain transport's idle connections.
func (t *streamTransport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*streamConn
	for _, sc := range t.conns {
		idle = append(idle, sc)
	}
	t.mu.Unlock()
	for _, sc := range idle {
		sc.closeIfIdle()
	}
	t.plain.CloseIdleConnections()
}

// streamKey names a stream: its node and the headers its upgrade carried,
// which every request on it is served with.
func streamKey(req *http.Request) string {
	key := req.URL.Host
	for _, k := range stream.Headers {
		key += "\x00" + req.Header.Get(k)
	}
	return key
}

// conn returns the stream for req's node. Until it is open, requests go
// through plain HTTP (errNoStream) while it is dialled in the background:
// a request never waits for an upgrade, so a node that accepts
// connections but does not answer is met exactly as plain HTTP meets it.
func (t *streamTransport) conn(req *http.Request) (*streamConn, error) {
	if t.closed.Load() {
		return nil, errNoStream
	}
	key := streamKey(req)
	t.mu.Lock()
	defer t.mu.Unlock()
	if sc := t.conns[key]; sc != nil {
		return sc, nil
	}
	if until, ok := t.noStream[key]; ok {
		if time.Now().Before(until) {
			return nil, errNoStream
		}
		delete(t.noStream, key)
	}
	if !t.dialing[key] {
		t.dialing[key] = true
		go t.open(key, req.URL.Host, req.Header.Clone())
	}
	return nil, errNoStream
}

// open dials and upgrades a stream for key. A node that refuses the
// upgrade is spoken to in plain HTTP for noStreamFor; one that cannot be
// reached or does not answer it, for redialAfter.
func (t *streamTransport) open(key, host string, h http.Header) {
	sc, err := t.handshake(host, h)
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.dialing, key)
	switch {
	case errors.Is(err, errNoStream):
		t.noStream[key] = time.Now().Add(noStreamFor)
	case err != nil:
		t.noStream[key] = time.Now().Add(redialAfter)
	case t.closed.Load():
		sc.fail(errors.New("client: closed"))
	default:
		sc.key, sc.t = key, t
		t.conns[key] = sc
		t.opened.Add(1)
		go sc.read()
		// The stream carries the node's requests from now on: the plain
		// connections that carried them meanwhile would only sit idle,
		// one more descriptor on the node per client.
		go t.plain.CloseIdleConnections()
	}
}

// plainOnce sends req through plain HTTP while the node's stream is being
// dialled: once the answer is read, and the stream is up by then, the
// connection it came on is closed rather than kept idle beside the
// stream (a node with ten thousand clients would otherwise hold twenty
// thousand connections).
func (t *streamTransport) plainOnce(req *http.Request) (*http.Response, error) {
	resp, err := t.plain.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &afterClose{ReadCloser: resp.Body, f: func() {
		t.mu.Lock()
		up := t.conns[streamKey(req)] != nil
		t.mu.Unlock()
		if up {
			t.plain.CloseIdleConnections()
		}
	}}
	return resp, nil
}

// afterClose calls f once its body has been closed.
type afterClose struct {
	io.ReadCloser
	once sync.Once
	f    func()
}

func (b *afterClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.f)
	return err
}

// handshake dials host and asks for the stream with the upgrade.
func (t *streamTransport) handshake(host string, h http.Header) (*streamConn, error) {
	ctx, cancel := context.WithTimeout(t.ctx, streamHandshake)
	defer cancel()
	conn, err := t.dial(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n", stream.Path, host, stream.Protocol)
	for _, k := range stream.Headers {
		if v := h.Get(k); v != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		_ = conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 32<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), stream.Protocol) {
		// An older node, or one that refuses these headers: plain HTTP
		// gives the same answer the way the client knows how to read.
		_ = conn.Close()
		return nil, errNoStream
	}
	if !stop() {
		_ = conn.Close()
		return nil, ctx.Err()
	}
	_ = conn.SetDeadline(time.Time{})
	sc := &streamConn{conn: conn, br: br, pending: map[uint64]*streamCall{}, kick: make(chan struct{}, 1), dead: make(chan struct{}), lastRead: time.Now()}
	sc.idle = time.AfterFunc(streamIdle, sc.closeIfIdle)
	go sc.write()
	return sc, nil
}

// drop forgets sc once it has failed, so the next request dials anew.
func (t *streamTransport) drop(sc *streamConn) {
	t.mu.Lock()
	if t.conns[sc.key] == sc {
		delete(t.conns, sc.key)
	}
	t.mu.Unlock()
}

// streamConn is one open stream: requests in progress by id, the frames
// waiting to be written, and its reader and writer goroutines.
type streamConn struct {
	t    *streamTransport
	key  string
	conn net.Conn
	br   *bufio.Reader
	kick chan struct{} // the writer has frames to send
	dead chan struct{} // closed once the stream failed

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]*streamCall
	out      []byte        // frames not yet written
	queued   []queuedFrame // the requests among them, in order
	err      error         // set once the stream failed: every later call fails
	lastRead time.Time
	idle     *time.Timer
}

// queuedFrame is a request frame in streamConn.out, at out[start:end],
// that the writer has not taken yet: a request given up now is cut out and
// never sent. wrote is its WroteRequest hook (nil without a trace), called
// as the writer takes the frame, under the stream's lock, so that a caller
// that gives up afterwards already sees its request as sent.
type queuedFrame struct {
	id         uint64
	start, end int
	wrote      func()
}

// streamCall is a request waiting for its answer.
type streamCall struct {
	done   chan struct{}
	status int
	body   []byte
	err    error
}

// roundTrip sends req, with body, as a frame and waits for its answer or
// for the request's context to end.
func (sc *streamConn) roundTrip(req *http.Request, body []byte) (*http.Response, error) {
	target := req.URL.RequestURI()
	trace := httptrace.ContextClientTrace(req.Context())
	call := &streamCall{done: make(chan struct{})}

	sc.mu.Lock()
	if sc.err != nil {
		sc.mu.Unlock()
		return nil, errStreamGone
	}
	sc.nextID++
	id := sc.nextID
	start := len(sc.out)
	out, err := stream.AppendRequest(sc.out, stream.Request{ID: id, Method: req.Method, Target: target, Body: body})
	if err != nil {
		sc.mu.Unlock()
		return nil, err
	}
	sc.out = out
	q := queuedFrame{id: id, start: start, end: len(out)}
	if trace != nil && trace.WroteRequest != nil {
		q.wrote = func() { trace.WroteRequest(httptrace.WroteRequestInfo{}) }
	}
	sc.queued = append(sc.queued, q)
	sc.pending[id] = call
	sc.idle.Stop()
	sent := time.Now()
	sc.mu.Unlock()
	sc.signal()

	select {
	case <-call.done:
	case <-req.Context().Done():
		sc.abandon(id, sent)
		return nil, req.Context().Err()
	}
	if call.err != nil {
		return nil, call.err
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", call.status, http.StatusText(call.status)), StatusCode: call.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(call.body)),
		ContentLength: int64(len(call.body)),
		Request:       req,
	}, nil
}

// abandon gives up request id. A plain HTTP client closes the connection
// of a request it gives up, which ends the request on the node; here a
// cancel frame does, and the stream carries on. Only when the node has
// sent nothing on the stream for as long as the client lets a node stay
// silent (AttemptTimeout), all the while this request waited, is the
// stream itself taken to be dead and closed, as plain HTTP would close
// the connection, so that the next request dials anew. (Closing it for
// any request given up would fail every other request on it.)
func (sc *streamConn) abandon(id uint64, sent time.Time) {
	sc.mu.Lock()
	if _, ok := sc.pending[id]; !ok || sc.err != nil {
		sc.mu.Unlock()
		return
	}
	delete(sc.pending, id)
	if sc.unqueueLocked(id) {
		// Its frame was still waiting to be written: it never leaves,
		// as its caller is told (its WroteRequest was not called).
		sc.armIdleLocked()
		sc.mu.Unlock()
		return
	}
	silent := !sc.lastRead.After(sent) && time.Since(sent) >= sc.t.silent
	if !silent {
		sc.out, _ = stream.AppendRequest(sc.out, stream.Request{ID: id, Cancel: true})
	}
	sc.armIdleLocked()
	sc.mu.Unlock()
	if silent {
		sc.fail(fmt.Errorf("client: stream to %s: request abandoned with no answer from the node", sc.conn.RemoteAddr()))
		return
	}
	sc.signal()
}

// unqueueLocked cuts request id's frame out of the frames not yet written,
// and reports whether it was there. sc.mu must be held.
func (sc *streamConn) unqueueLocked(id uint64) bool {
	for i, q := range sc.queued {
		if q.id != id {
			continue
		}
		n := q.end - q.start
		sc.out = append(sc.out[:q.start], sc.out[q.end:]...)
		for j := i + 1; j < len(sc.queued); j++ {
			sc.queued[j].start -= n
			sc.queued[j].end -= n
		}
		sc.queued = append(sc.queued[:i], sc.queued[i+1:]...)
		return true
	}
	return false
}

func (sc *streamConn) signal() {
	select {
	case sc.kick <- struct{}{}:
	default:
	}
}

// write sends the frames queued, all that are ready in one write, until
// the stream fails.
func (sc *streamConn) write() {
	var buf []byte
	for {
		select {
		case <-sc.kick:
		case <-sc.dead:
			return
		}
		sc.mu.Lock()
		if sc.err != nil {
			sc.mu.Unlock()
			return
		}
		buf, sc.out = sc.out, buf[:0]
		// Before the write, and before a caller can give up on a frame
		// taken here: a write that fails part way may still have
		// delivered whole frames, and a request that may have reached the
		// node must never be reported as never sent.
		for _, q := range sc.queued {
			if q.wrote != nil {
				q.wrote()
			}
		}
		sc.queued = sc.queued[:0]
		sc.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		if _, err := sc.conn.Write(buf); err != nil {
			sc.fail(fmt.Errorf("client: stream to %s: write: %w", sc.conn.RemoteAddr(), err))
			return
		}
	}
}

// read delivers answers until the stream fails.
func (sc *streamConn) read() {
	var buf []byte
	for {
		frame, err := stream.ReadFrame(sc.br, buf, stream.MaxAnswer, nil)
		if err != nil {
			sc.fail(fmt.Errorf("client: stream to %s: read: %w", sc.conn.RemoteAddr(), err))
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame[:0] // reused; a rare large answer's buffer is not kept
		} else {
			buf = nil
		}
		a, err := stream.ParseAnswer(frame)
		if err != nil {
			sc.fail(fmt.Errorf("client: stream to %s: %w", sc.conn.RemoteAddr(), err))
			return
		}
		sc.mu.Lock()
		sc.lastRead = time.Now()
		call := sc.pending[a.ID]
		delete(sc.pending, a.ID)
		sc.armIdleLocked()
		sc.mu.Unlock()
		if call != nil { // nil: an answer to a request given up
			call.status, call.body = a.Status, bytes.Clone(a.Body)
			close(call.done)
		}
	}
}

// armIdleLocked starts the idle timer once nothing is in progress: at
// once when the client is closed.
func (sc *streamConn) armIdleLocked() {
	if len(sc.pending) == 0 && sc.err == nil {
		d := streamIdle
		if sc.t != nil && sc.t.closed.Load() {
			d = 0
		}
		sc.idle.Reset(d)
	}
}

// closeIfIdle closes the stream when nothing is in progress on it.
func (sc *streamConn) closeIfIdle() {
	sc.mu.Lock()
	idle := len(sc.pending) == 0
	sc.mu.Unlock()
	if idle {
		sc.fail(errors.New("client: stream closed while idle"))
	}
}

// fail ends the stream: the connection is closed and every request in
// progress fails with err, a transport error the client retries as it
// would a broken connection.
func (sc *streamConn) fail(err error) {
	sc.mu.Lock()
	if sc.err != nil {
		sc.mu.Unlock()
		return
	}
	sc.err = err
	calls := sc.pending
	sc.pending = nil
	sc.idle.Stop()
	sc.mu.Unlock()
	if sc.t != nil {
		sc.t.drop(sc)
	}
	_ = sc.conn.Close()
	close(sc.dead)
	for _, c := range calls {
		c.err = err
		close(c.done)
	}
}
