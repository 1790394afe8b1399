package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
)

// A node is silent when it answers nothing at all: its process is stopped
// (SIGSTOP, a long pause of its host) or it is cut off with its
// connections left open. Its kernel may still accept connections and
// requests, so nothing fails fast; only time tells. A slow node is another
// matter: a commit may take a while, and a waiting acquire is held by
// design, yet the node answers a status request at once. So when a request
// has gone unanswered for half of Config.AttemptTimeout (a tenth, on a
// node other than the presumed leader: see watchRequest), the client asks
// the same node for its status, and abandons the request when that gets
// no answer within half an AttemptTimeout.
//
// A follower that answers its status may still hold the request for a
// leader that went silent (it forwards writes), so the watch also looks at
// the leader the follower names, and at the term: a term that moved on
// while the request was out means a new leader, and the request may be
// stuck with the old one.

// Why an unanswered request is abandoned; the causes of its context.
var (
	errSilent        = errors.New("no answer, not even to a status request, within the attempt timeout")
	errLeaderSilent  = errors.New("the node forwards to a leader that does not answer")
	errLeaderChanged = errors.New("the leadership changed while the request was out")
)

// probe is one status request to one node, shared by every caller that
// asks about that node while it is recent.
type probe struct {
	base  string
	start time.Time
	done  chan struct{} // closed once the fields below are set
	end   time.Time
	// silent: no answer in time (or no connection at all).
	silent bool
	// st is the node's status; nil when it answered something else, or
	// when the Client was closed first.
	st *Status
}

// ended reports whether p has its outcome.
func (p *probe) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// health is what a Client has learnt about its nodes, shared by all calls.
type health struct {
	ctx    context.Context // ends at Close: probes stop
	cancel context.CancelFunc

	mu      sync.Mutex
	probes  map[string]*probe   // the latest probe of each node
	suspect map[string]struct{} // nodes silent since they last answered
	changed chan struct{}       // closed and replaced when a probe ends
	closed  bool
	running sync.WaitGroup // probes in flight
	// nSuspect is len(suspect), read without the lock on every answer.
	nSuspect atomic.Int32
	// noLeader is the last leader look-up's verdict when it found no
	// leader and no quorum to elect one (noleader.go); nil otherwise.
	noLeader atomic.Pointer[noLeader]
}

func (h *health) init() {
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.probes = map[string]*probe{}
	h.suspect = map[string]struct{}{}
	h.changed = make(chan struct{})
}

// close stops the probes in flight and waits for them; later probes end
// at once.
func (h *health) close() {
	h.cancel()
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.running.Wait()
}

// changes returns a channel closed when the next probe ends.
func (h *health) changes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// probe returns a status request to base that started less than half an
// AttemptTimeout ago, and not before notBefore, or starts one bounded by
// half an AttemptTimeout. Its outcome marks base suspect (no answer) or
// clears it (any answer).
func (c *Client) probe(base string, notBefore time.Time) *probe {
	h := &c.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.probes[base]; p != nil && time.Since(p.start) < c.cfg.AttemptTimeout/2 && !p.start.Before(notBefore) {
		return p
	}
	p := &probe{base: base, start: time.Now(), done: make(chan struct{})}
	if h.closed {
		p.end = p.start
		close(p.done)
		return p
	}
	h.probes[base] = p
	h.running.Add(1)
	go c.runProbe(p)
	return p
}

func (c *Client) runProbe(p *probe) {
	defer c.health.running.Done()
	ctx, cancel := context.WithTimeout(c.health.ctx, c.cfg.AttemptTimeout/2)
	defer cancel()
	var st Status
	_, err := c.attempt(ctx, ctx, p.base, statusRequest, nil, &st, false)
	closed := c.health.ctx.Err() != nil
	var te *transportError
	switch {
	case err == nil:
		p.st = &st
		c.noteTerm(st.Term)
	case closed:
	case errors.As(err, &te):
		p.silent = true
	}
	p.end = time.Now()
	if p.silent {
		c.suspectNode(p.base)
	} else if !closed {
		c.clearSuspect(p.base)
	}
	h := &c.health
	h.mu.Lock()
	close(p.done)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// statusRequest is GET /v1/status.
var statusRequest = request{op: "status", method: http.MethodGet, path: api.PathStatus}

// suspectNode records that base did not answer: calls leave it out, and,
// when that is news, the next one asks the cluster who leads.
func (c *Client) suspectNode(base string) {
	h := &c.health
	h.mu.Lock()
	_, was := h.suspect[base]
	if !was {
		h.suspect[base] = struct{}{}
		h.nSuspect.Add(1)
	}
	h.mu.Unlock()
	if !was {
		c.log.Debug("node silent, trying others first", "node", base)
		c.stale.Store(true)
	}
}

// clearSuspect records that base answered.
func (c *Client) clearSuspect(base string) {
	h := &c.health
	if h.nSuspect.Load() == 0 {
		return
	}
	h.mu.Lock()
	if _, ok := h.suspect[base]; ok {
		delete(h.suspect, base)
		h.nSuspect.Add(-1)
		c.log.Debug("node answers again", "node", base)
	}
	h.mu.Unlock()
}

// isSuspect reports whether base has been silent since it last answered.
func (c *Client) isSuspect(base string) bool {
	h := &c.health
	if h.nSuspect.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.suspect[base]
	return ok
}

// noteTerm records the highest raft term seen; a higher one than before
// means a new election, so the next call asks who leads.
func (c *Client) noteTerm(term uint64) {
	for {
		old := c.term.Load()
		if term <= old {
			return
		}
		if c.term.CompareAndSwap(old, term) {
			if old != 0 {
				c.stale.Store(true)
			}
			return
		}
	}
}

// isLeader reports whether st is the status of the leader itself.
func isLeader(st *Status) bool { return strings.EqualFold(st.State, "leader") }

// watch is the liveness check of one unanswered request.
type watch struct {
	c      *Client
	base   string
	sent   time.Time
	term   uint64 // the term when the request was sent (0: unknown yet)
	cancel context.CancelCauseFunc

	timer *time.Timer
	stopc chan struct{}
	done  chan struct{} // closed when the check loop returned, once it started
	once  sync.Once
	// mu orders abandoning the request and the first byte of its answer:
	// an answer that has begun to arrive is read, not cut off.
	mu       sync.Mutex
	answered bool
	// heard is when the node last showed it was alive (UnixNano): the
	// send, then each status answer.
	heard atomic.Int64
}

// watchRequest starts watching a request just sent to base; cancel
// abandons it with the reason as cause. Call stop when the answer came.
//
// The first check comes after half an AttemptTimeout for the preferred
// node (the leader, as far as the client knows), and after a tenth of it
// for any other: that one is a follower, or a node tried during a
// failover, and a follower that has not yet noticed that its leader went
// silent forwards the request to it and holds it there.
func (c *Client) watchRequest(base string, cancel context.CancelCauseFunc) *watch {
	w := &watch{c: c, base: base, sent: time.Now(), term: c.term.Load(), cancel: cancel, stopc: make(chan struct{}), done: make(chan struct{})}
	w.heard.Store(w.sent.UnixNano())
	first := c.cfg.AttemptTimeout / 10
	if p := c.preferred.Load(); p != nil && *p == base {
		first = c.cfg.AttemptTimeout / 2
	}
	w.timer = time.AfterFunc(first, w.loop)
	return w
}

// stop ends the watch and waits for its check loop, if one is running.
func (w *watch) stop() {
	w.once.Do(func() {
		close(w.stopc)
		if !w.timer.Stop() {
			<-w.done
		}
	})
}

// gotAnswer records that the answer has begun to arrive.
func (w *watch) gotAnswer() {
	w.mu.Lock()
	w.answered = true
	w.mu.Unlock()
}

// abandon cancels the request with cause, unless its answer is arriving.
func (w *watch) abandon(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered {
		w.cancel(cause)
	}
}

// abandoned reports whether cause is the watch's.
func abandoned(cause error) bool {
	return cause == errSilent || cause == errLeaderSilent || cause == errLeaderChanged
}

// silentFor is how long the node has given no sign of life.
func (w *watch) silentFor() time.Duration { return time.Since(time.Unix(0, w.heard.Load())) }

func (w *watch) loop() {
	defer close(w.done)
	half := w.c.cfg.AttemptTimeout / 2
	for {
		if cause := w.check(); cause != nil {
			w.abandon(cause)
			return
		}
		t := time.NewTimer(half)
		select {
		case <-w.stopc:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// check returns why the request should be abandoned, or nil to keep
// waiting.
func (w *watch) check() error {
	p, ok := w.await(w.base, w.sent)
	if !ok {
		return nil
	}
	if p.silent {
		return errSilent
	}
	if p.st == nil {
		return nil // it answered, with an error: alive
	}
	w.heard.Store(p.end.UnixNano())
	if w.term == 0 {
		w.term = p.st.Term
	}
	if p.st.Term > w.term {
		return errLeaderChanged
	}
	if isLeader(p.st) {
		return nil
	}
	// A follower: it forwarded the request to the leader it knew.
	if p.st.LeaderHTTP == "" {
		return errLeaderChanged // an election is under way
	}
	leader, err := baseURLWith(p.st.LeaderHTTP, schemeOf(w.base))
	if err != nil {
		return nil
	}
	if w.c.isSuspect(leader) {
		return errLeaderSilent
	}
	lp, ok := w.await(leader, time.Time{})
	if ok && lp.silent {
		return errLeaderSilent
	}
	return nil
}

// await waits for a recent probe of base started not before notBefore;
// ok is false when the watch was stopped first.
func (w *watch) await(base string, notBefore time.Time) (*probe, bool) {
	p := w.c.probe(base, notBefore)
	select {
	case <-w.stopc:
		return nil, false
	case <-p.done:
		return p, true
	}
}
