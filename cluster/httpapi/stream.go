package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
)

// MaxStreamRequests caps the requests in progress on one stream, from
// their frame to the write of their answer; one more is answered 429 at
// once. Waiting acquires are capped apart (the wait cap), so this only
// bounds what one connection may hold: as many workers, bodies and
// answers.
const MaxStreamRequests = 4096

// MaxStreamRunning caps the requests of one stream whose handlers run at
// once, a waiting acquire's wait excepted (it gives its slot back as it
// starts to wait: the wait cap bounds those). Past it the stream's reader
// waits for a slot before it reads the next frame. It bounds what one
// stream's answers in the making may hold (a list answer is up to about
// a megabyte, /metrics tens of kilobytes), which the queued-bytes bounds
// below cannot see until they are made.
const MaxStreamRunning = 256

// answerRoom is the room of a stream's queue of answers on their way to
// its writer, which takes every answer ready at each write. It bounds
// nothing (MaxStreamRequests and the queued-bytes bounds below do): a
// handler whose answer finds it full waits for the writer, as the reader
// does. It was MaxStreamRequests, 196 KB per stream that filled as the
// ring turned: 10 k clients refreshing a lock each held 778 MB on the node.
const answerRoom = 64

// The bounds of what answers waiting to be written may hold. A client
// that sends frames and stops reading would otherwise make the node hold
// every answer: past either bound the stream is closed (its requests are
// cancelled, and the client sees the connection end), as it is when one
// write of answers takes longer than Options.WriteTimeout.
const (
	// MaxStreamQueuedBytes bounds the answers queued on one stream.
	MaxStreamQueuedBytes = 4 << 20
	// MaxQueuedBytes bounds the answers queued on all the streams of one
	// node. Past it, a stream is closed when it has more than
	// fairQueuedBytes of its own queued: one that reads its answers is
	// never cut for the others' backlog.
	MaxQueuedBytes  = 64 << 20
	fairQueuedBytes = 256 << 10
)

// answerOverhead is what an answer costs beside its body, for the queued
// bytes: the frame's header and the Answer itself.
const answerOverhead = 64

// serveStream upgrades the connection to the API stream (see package
// api/stream) once auth has checked the token and cluster ID, then serves
// every frame with root, the handler of plain HTTP requests, until the
// client closes the stream, breaks its framing, or the node shuts down
// (the request's context ends).
func (h *handler) serveStream(root http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !headerHasToken(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), stream.Protocol) {
			writeJSON(w, http.StatusUpgradeRequired, api.ErrorBody{Code: api.CodeInvalid, Message: fmt.Sprintf(
				"cluster: %s is the API stream: send Connection: Upgrade and Upgrade: %s", stream.Path, stream.Protocol)})
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			writeError(w, fmt.Errorf("cluster: cannot take over the connection for the stream: %w", err))
			return
		}
		if h.opts.Streams != nil {
			h.opts.Streams.Add(1)
			defer h.opts.Streams.Done()
		}
		s := &streamConn{
			root: root, conn: conn, frameTimeout: h.opts.ReadTimeout, idle: IdleTimeout,
			writeTimeout: h.opts.WriteTimeout, nodeQueued: &h.queued,
			header:   streamHeader(r.Header),
			remote:   r.RemoteAddr,
			tls:      r.TLS,
			inflight: map[uint64]context.CancelFunc{},
			answers:  make(chan queuedAnswer, answerRoom),
			slots:    make(chan struct{}, MaxStreamRunning),
			jobs:     make(chan func()),
			left:     make(chan struct{}, 1),
			done:     make(chan struct{}),
		}
		_ = conn.SetDeadline(time.Time{}) // the server's header deadline; serve sets its own
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + stream.Protocol + "\r\n\r\n")
		if err := brw.Flush(); err != nil {
			_ = conn.Close()
			return
		}
		s.serve(r.Context(), brw.Reader)
	}
}

// streamHeader is what every request of a stream carries: the headers of
// its upgrade that the API reads (the token, the cluster ID). Each frame
// goes through the same checks as a plain request.
func streamHeader(in http.Header) http.Header {
	out := http.Header{}
	for _, k := range stream.Headers {
		if v := in.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// headerHasToken reports whether a comma-separated header names token.
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// streamConn serves one stream: a reader (serve) that starts a goroutine
// per request frame, and a writer that sends every answer ready in one
// write.
type streamConn struct {
	root         http.Handler
	conn         net.Conn
	header       http.Header
	remote       string
	tls          *tls.ConnectionState // the connection's: a client certificate is a credential
	frameTimeout time.Duration        // from a frame's first byte to its last; 0: none
	idle         time.Duration        // with no request in progress
	writeTimeout time.Duration        // one write of answers; 0: none

	// pending counts the requests from their frame to the write of their
	// answer (MaxStreamRequests); queued the bytes of answers not yet
	// written, here and (nodeQueued) on every stream of the node.
	pending    atomic.Int64
	queued     atomic.Int64
	nodeQueued *atomic.Int64

	mu       sync.Mutex
	inflight map[uint64]context.CancelFunc
	reading  bool // a frame is being read: its deadline stands

	handlers sync.WaitGroup // requests in progress
	// Requests run on workers that stay while requests keep coming: a
	// fresh goroutine per request grows its stack anew each time (a tenth
	// of a busy leader's CPU went to that). An idle one leaves after
	// streamWorkerIdle.
	jobs    chan func()   // to an idle worker
	done    chan struct{} // closed once the stream ended: workers exit
	workers sync.WaitGroup
	alive   atomic.Int64      // workers, at most MaxStreamRequests (run)
	left    chan struct{}     // a worker left: room for another (run)
	answers chan queuedAnswer // room for answerRoom
	slots   chan struct{}     // MaxStreamRunning
	// running counts the requests whose answers are not yet queued: while
	// some are, the writer lets them run before it writes (see write).
	running atomic.Int32
}

// serve reads frames until the stream ends, then cancels what is in
// progress, waits for it and closes the connection.
func (s *streamConn) serve(parent context.Context, br *bufio.Reader) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(ctx, func() { _ = s.conn.Close() }) // node shutdown: unblock the read
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		s.write()
	}()
	defer func() {
		cancel()
		stop()
		_ = s.conn.Close()
		s.handlers.Wait()
		close(s.done)
		s.workers.Wait()
		close(s.answers)
		<-wrote
	}()
	var buf []byte
	s.armIdle()
	for {
		frame, err := stream.ReadFrame(br, buf, stream.MaxFrame, s.frameStarted)
		if err != nil {
			return // closed, cut, too slow or malformed: nothing to answer on
		}
		buf = frame[:0]
		req, err := stream.ParseRequest(frame)
		if err != nil {
			return
		}
		if req.Cancel {
			s.cancel(req.ID)
		} else if !s.start(ctx, req) {
			return // an id reused while in progress: the client is broken
		}
		s.frameDone()
	}
}

// frameStarted bounds the time the rest of a frame may take, once its
// first byte is in: a client that trickles a frame is cut, as a plain
// request that trickles its body is.
func (s *streamConn) frameStarted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading = true
	if s.frameTimeout > 0 {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.frameTimeout))
	} else {
		_ = s.conn.SetReadDeadline(time.Time{})
	}
}

// armIdle sets the read deadline between frames: none while a request is
// in progress (a waiting acquire may take minutes), the idle timeout once
// none is, as for an idle keep-alive connection.
func (s *streamConn) armIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armIdleLocked()
}

// frameDone ends a frame's deadline once the frame is taken (its request
// started, or cancelled), for the deadline between frames.
func (s *streamConn) frameDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reading = false
	s.armIdleLocked()
}

func (s *streamConn) armIdleLocked() {
	if s.reading {
		return
	}
	if len(s.inflight) == 0 && s.idle > 0 {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.idle))
	} else {
		_ = s.conn.SetReadDeadline(time.Time{})
	}
}

func (s *streamConn) cancel(id uint64) {
	s.mu.Lock()
	c := s.inflight[id]
	s.mu.Unlock()
	if c != nil {
		c()
	}
}

// start serves req in its own goroutine; false if its id is in progress.
func (s *streamConn) start(parent context.Context, req stream.Request) bool {
	s.mu.Lock()
	if _, dup := s.inflight[req.ID]; dup {
		s.mu.Unlock()
		return false
	}
	if s.pending.Load() >= MaxStreamRequests {
		s.mu.Unlock()
		s.queue(answerOf(req.ID, http.StatusTooManyRequests, api.ErrorBody{Code: api.CodeFull,
			Message: fmt.Sprintf("cluster: %d requests in progress on this stream, the most it carries (answers not yet read count)", MaxStreamRequests)}), false)
		return true
	}
	s.mu.Unlock()
	// The slot first, so that a stream that ends meanwhile has nothing to
	// undo; only this reader registers requests, so the checks above hold.
	slot := s.takeSlot(parent)
	if slot == nil {
		return false // the stream ends
	}
	ctx, cancel := context.WithCancel(parent)
	s.mu.Lock()
	s.inflight[req.ID] = cancel
	s.handlers.Add(1)
	s.running.Add(1)
	s.pending.Add(1)
	s.mu.Unlock()

	body := bytes.Clone(req.Body) // the frame buffer is reused for the next frame
	ctx = context.WithValue(ctx, runSlotKey{}, slot)
	s.run(func() {
		defer s.handlers.Done()
		a := s.handle(ctx, req, body)
		slot.release()
		s.mu.Lock()
		delete(s.inflight, req.ID)
		s.mu.Unlock()
		cancel()
		s.running.Add(-1) // before the send: the writer counts the others
		s.queue(a, true)
		s.armIdle()
	})
	return true
}

// runSlot is one of a stream's MaxStreamRunning slots, held by a request
// while its handler runs.
type runSlot struct {
	once  sync.Once
	slots chan struct{}
}

// runSlotKey carries a stream request's slot in its context.
type runSlotKey struct{}

// takeSlot waits for a free slot (the reader: no frame is read
// meanwhile), or for the stream's end (nil).
func (s *streamConn) takeSlot(ctx context.Context) *runSlot {
	select {
	case s.slots <- struct{}{}:
		return &runSlot{slots: s.slots}
	case <-ctx.Done():
		return nil
	}
}

func (r *runSlot) release() { r.once.Do(func() { <-r.slots }) }

// releaseRunSlot gives back the stream slot of a request that is about to
// wait (a waiting acquire); a plain request has none.
func releaseRunSlot(ctx context.Context) {
	if r, ok := ctx.Value(runSlotKey{}).(*runSlot); ok {
		r.release()
	}
}

// queuedAnswer is an answer on its way to the writer; pending: it
// counts against MaxStreamRequests until written.
type queuedAnswer struct {
	stream.Answer
	pending bool
}

// queue hands a to the writer, counting its bytes; past a bound of the
// queued bytes it closes the stream: the client is not reading. A full
// queue blocks the stream's reader, so that a client that does not read
// stops being read too.
func (s *streamConn) queue(a stream.Answer, pending bool) {
	n := int64(len(a.Body) + answerOverhead)
	mine, all := s.queued.Add(n), s.nodeQueued.Add(n)
	if mine > MaxStreamQueuedBytes || (all > MaxQueuedBytes && mine > fairQueuedBytes) {
		// Before the send, which blocks while the queue is full: the
		// answers that wait to be queued count too.
		_ = s.conn.Close()
	}
	s.answers <- queuedAnswer{a, pending}
}

// written settles the accounts of an answer the writer took.
func (s *streamConn) written(a queuedAnswer) {
	n := int64(len(a.Body) + answerOverhead)
	s.queued.Add(-n)
	s.nodeQueued.Add(-n)
	if a.pending {
		s.pending.Add(-1)
	}
}

// run hands job to an idle worker, or to a new one when none is idle.
//
// A stream has at most MaxStreamRequests workers: a worker that has just
// finished a job is not yet idle, so under a flood new ones would be
// started beside it, beyond the requests in progress. At the cap one is
// about to be free (this job is a pending request, and pending is under
// the cap, so some worker's job has ended), and run waits for it to take
// the job, or to leave (its idle time over), which makes room for a new
// one. Only the stream's reader calls run.
func (s *streamConn) run(job func()) {
	for {
		select {
		case s.jobs <- job:
			return
		default:
		}
		if s.alive.Load() < MaxStreamRequests {
			s.alive.Add(1)
			s.workers.Add(1)
			go s.worker(job)
			return
		}
		if h := streamAtCap.Load(); h != nil {
			(*h)()
		}
		select {
		case s.jobs <- job:
			return
		case <-s.left:
		}
	}
}

// streamAtCap and streamAfterJob, nil outside tests, run where run finds
// every worker busy at the cap, and where a worker has done a job and is
// about to wait for the next: a test orders the two with them.
var streamAtCap, streamAfterJob atomic.Pointer[func()]

// streamWorkerIdle is how long a stream's worker waits for its next job
// before it leaves (a variable, atomic, for the tests). A worker's stack has grown
// to what a handler needs (8–16 KB): one parked for the stream's life
// held it for every client that sends a request now and then (a refresh
// every 10 s: 10 k such clients pinned 180 MB of stacks on the leader).
// A worker busy within the second stays, so the cost of growing a fresh
// stack is paid once per burst, not per request.
var streamWorkerIdle atomic.Int64 // a time.Duration

func init() { streamWorkerIdle.Store(int64(time.Second)) }

// streamWorkers counts the stream workers alive in this process.
var streamWorkers atomic.Int64

// worker runs job, then the jobs it is handed, until the stream ends or
// none comes for streamWorkerIdle.
func (s *streamConn) worker(job func()) {
	streamWorkers.Add(1)
	defer streamWorkers.Add(-1)
	defer s.workers.Done()
	defer func() {
		s.alive.Add(-1)
		select {
		case s.left <- struct{}{}:
		default: // run is told already
		}
	}()
	wait := time.Duration(streamWorkerIdle.Load())
	idle := time.NewTimer(wait)
	defer idle.Stop()
	for {
		job()
		if h := streamAfterJob.Load(); h != nil {
			(*h)()
		}
		idle.Reset(wait)
		select {
		case job = <-s.jobs:
		case <-idle.C:
			return
		case <-s.done:
			return
		}
	}
}

// handle serves one request frame with the plain-HTTP handler.
func (s *streamConn) handle(ctx context.Context, f stream.Request, body []byte) stream.Answer {
	req, err := http.NewRequestWithContext(ctx, f.Method, f.Target, bytes.NewReader(body))
	if err != nil {
		return answerOf(f.ID, http.StatusBadRequest, api.ErrorBody{Code: api.CodeInvalid,
			Message: fmt.Sprintf("cluster: stream request target %q: %v", f.Target, err)})
	}
	req.RequestURI, req.RemoteAddr, req.TLS = f.Target, s.remote, s.tls
	req.Header = s.header.Clone()
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	w := &answerWriter{header: http.Header{}}
	s.root.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return stream.Answer{ID: f.ID, Status: w.status, Body: w.body.Bytes()}
}

// write sends the answers as they come, every one that is ready in one
// write, until answers is closed. After a failed write it drains the
// rest: the reader sees the connection fail too.
//
// One commit answers many requests at once, and their handlers wake one
// after another: while other requests are in progress, the writer yields
// once before it gathers, so that those answering now join the same write
// rather than one write (and one wake-up of the client) each. A lone
// request is written at once. It pays with many workers and costs nothing
// measurable with one (docs/PERFORMANCE.md, "Each lever, measured on its own").
func (s *streamConn) write() {
	var buf []byte
	var batch []queuedAnswer
	failed := false
	for a := range s.answers {
		buf, batch = buf[:0], append(batch[:0], a)
		buf = appendAnswer(buf, a.Answer)
		if s.running.Load() > 0 {
			runtime.Gosched()
		}
	more:
		for len(buf) < 64<<10 {
			select {
			case a, ok := <-s.answers:
				if !ok {
					break more
				}
				buf = appendAnswer(buf, a.Answer)
				batch = append(batch, a)
			default:
				break more
			}
		}
		if !failed {
			if s.writeTimeout > 0 {
				_ = s.conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
			}
			if _, err := s.conn.Write(buf); err != nil {
				failed = true
				_ = s.conn.Close()
			}
		}
		for _, a := range batch {
			s.written(a)
		}
	}
}

// appendAnswer frames a, or a 500 in its place should it not fit.
func appendAnswer(buf []byte, a stream.Answer) []byte {
	out, err := stream.AppendAnswer(buf, a)
	if err != nil {
		out, _ = stream.AppendAnswer(buf, answerOf(a.ID, http.StatusInternalServerError,
			api.ErrorBody{Code: api.CodeInternal, Message: err.Error()}))
	}
	return out
}

func answerOf(id uint64, status int, body api.ErrorBody) stream.Answer {
	w := &answerWriter{header: http.Header{}}
	writeJSON(w, status, body)
	return stream.Answer{ID: id, Status: w.status, Body: w.body.Bytes()}
}

// answerWriter collects what a handler answers to a stream request.
type answerWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *answerWriter) Header() http.Header { return w.header }

func (w *answerWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *answerWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
