package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/keywatch"
)

const (
	// queueLen is the request channel's buffer: callers rarely block on
	// the send, and the loop finds a batch waiting when it comes back.
	queueLen = 512
	// maxBatch bounds one batch so replies are never held back long.
	maxBatch = 512
)

// loop is what the two engines share: one goroutine owns the lock table
// and serves the requests callers send it. Engine (live: time from a
// clock, grants expire by themselves) and Replicated (time and every
// change from the raft log) are this loop with their own calls; only the
// live one has a clock.
type loop struct {
	// Read by callers, written once by start.
	cfg    Config
	clock  *liveClock    // nil in a Replicated engine: time comes from the log
	reqc   chan *request // never closed: senders also watch done
	signal chan struct{} // wakes the loop for the timer or for Close
	done   chan struct{} // closed by the loop: it processes nothing more
	exited chan struct{} // closed by the loop as it returns
	once   sync.Once

	// Written often: kept off the cache line the callers read.
	_        [64]byte
	stopping atomic.Bool // tells a signal from Close apart from the timer's
	keys     atomic.Int64
	waiting  atomic.Int64

	changes keywatch.Set // a live engine's watchers of keys (Engine.Changed)

	// Owned by the loop goroutine.
	t        *table
	replies  []*request // answers of the current batch, sent after it
	handoffs []outcome
}

// liveClock is a live engine's time: the clock, and the timer that wakes
// the loop at the earliest deadline.
type liveClock struct {
	now     func() int64 // unix nanoseconds
	timer   Timer
	armed   bool // owned by the loop
	armedAt int64
}

// start validates cfg, fills in e and starts its goroutine; live gives
// it a clock. It copies cfg; the caller's struct is never written.
func (e *loop) start(cfg Config, live bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	e.cfg = cfg
	e.reqc = make(chan *request, queueLen)
	e.signal = make(chan struct{}, 1)
	e.done = make(chan struct{})
	e.exited = make(chan struct{})
	e.t = newTable(cfg.MaxKeys, cfg.MaxWaitersPerKey)
	e.t.maxHolders = cfg.holderCap()
	if live {
		clock := cfg.Clock
		if clock == nil {
			clock = SystemClock()
		}
		c := &liveClock{now: func() int64 { return clock.Now().UnixNano() }}
		if u, ok := clock.(unixNanoClock); ok {
			c.now = u.UnixNano
		}
		c.timer = clock.AfterFunc(time.Hour, e.poke)
		c.timer.Stop()
		e.t.advance(c.now())
		e.t.changed = e.changes.Notify
		e.clock = c
	}
	go e.run()
	return nil
}

// poke nudges the loop without ever blocking; it runs on the timer's
// goroutine or in Close. A pending nudge is enough for both.
func (e *loop) poke() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// signalled handles a nudge; it reports whether the loop must stop.
func (e *loop) signalled() bool {
	if e.stopping.Load() {
		e.shutdown()
		return true
	}
	if e.clock != nil {
		e.clock.armed = false
		e.process(nil)
	}
	return false
}

// run is the loop: the only goroutine that touches the table. It exits
// when Close is called. While requests keep coming it receives without
// a blocking select, and checks the timer and Close with a cheap
// non-blocking receive after each batch.
func (e *loop) run() {
	defer close(e.exited)
	batch := make([]*request, 0, maxBatch)
	for {
		var r *request
		select {
		case r = <-e.reqc:
		default:
			select {
			case r = <-e.reqc:
			case <-e.signal:
				if e.signalled() {
					return
				}
				continue
			}
		}
		batch = append(batch[:0], r)
		batch = e.drain(batch)
		if len(batch) == 1 {
			// Alone. The sender that woke the loop handed it its own
			// processor, so callers woken by the last batch are likely
			// runnable but not yet run: let them send, then take them
			// all in one batch instead of one round trip each. With
			// nobody else runnable this costs well under a microsecond.
			runtime.Gosched()
			batch = e.drain(batch)
		}
		e.process(batch)
		clear(batch)
		select {
		case <-e.signal:
			if e.signalled() {
				return
			}
		default:
		}
	}
}

// drain appends the requests already waiting, without blocking.
func (e *loop) drain(batch []*request) []*request {
	for len(batch) < maxBatch {
		select {
		case r := <-e.reqc:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// process applies one batch. A live engine first reads the clock once
// and ends every grant that is due, so all commands of the batch see the
// same instant and never an expired holder. Answers go out after the
// expiry timer is re-armed, so a caller that moves a fake clock right
// after its call returns always finds the timer in place.
func (e *loop) process(batch []*request) {
	t := e.t
	if e.clock != nil {
		t.advance(e.clock.now())
		e.handoffs = t.expireDue(e.handoffs[:0])
		for i := range e.handoffs {
			e.deliver(&e.handoffs[i])
			e.handoffs[i] = outcome{}
		}
	}
	for _, r := range batch {
		e.handle(r)
	}
	if e.clock != nil {
		e.rearm()
	}
	if n := int64(len(e.t.entries)); n != e.keys.Load() {
		e.keys.Store(n)
	}
	if n := int64(e.t.waiting); n != e.waiting.Load() {
		e.waiting.Store(n)
	}
	for i, r := range e.replies {
		r.reply <- struct{}{}
		e.replies[i] = nil
	}
	e.replies = e.replies[:0]
}

// queueReply queues r's reply for the end of the batch.
func (e *loop) queueReply(r *request) { e.replies = append(e.replies, r) }

// deliver answers the blocked AcquireWait that a hand-off granted.
func (e *loop) deliver(o *outcome) {
	if !o.handoff {
		return
	}
	e.answerWaiter(o.nextTag, o.next)
	for _, h := range o.more {
		e.answerWaiter(h.tag, h.g)
	}
}

// answerWaiter records the grant g handed to the wait w, and answers w
// once it holds every key, with the grants as they stand (the last
// hand-off set every deadline).
func (e *loop) answerWaiter(w *request, g Grant) {
	if w == nil {
		return
	}
	for i, k := range w.keys {
		if k == g.Key {
			w.grants[i] = g
		}
	}
	if w.group != nil {
		if w.group.pending > 0 {
			return
		}
		w.group = nil
		for i, k := range w.keys {
			en := e.t.entries[k]
			j := -1
			if en != nil {
				j = en.findHolder(w.owner)
			}
			if j < 0 {
				// A key taken while the set waited was forced free
				// meanwhile: the set cannot be had. It lets go of the
				// others.
				e.releaseSet(w)
				w.err = &drivers.NotAcquiredError{Key: k}
				e.queueReply(w)
				return
			}
			w.grants[i] = en.holder(j).grant(k)
		}
	}
	w.ok = true
	e.queueReply(w)
}

// releaseSet releases every key the wait w holds (those granted to it
// with the fence it recorded), handing each on.
func (e *loop) releaseSet(w *request) {
	t := e.t
	for i, k := range w.keys {
		en := t.entries[k]
		if en == nil || i >= len(w.grants) || w.grants[i].Fence == 0 {
			continue
		}
		if j := en.findHolder(w.owner); j >= 0 && en.holder(j).fence == w.grants[i].Fence {
			var ho outcome
			t.end(en, j, 0, &ho)
			e.deliver(&ho)
		}
	}
}

// rearm points the timer at the earliest deadline. A timer already armed
// for an earlier moment is left alone, and so is a timer whose table
// emptied: it fires early, finds nothing due and re-arms. That is cheaper
// than resetting the timer on every release.
func (e *loop) rearm() {
	c := e.clock
	d, ok := e.t.nextDeadline()
	if !ok || (c.armed && c.armedAt <= d) {
		return
	}
	c.armed = true
	c.armedAt = d
	c.timer.Reset(time.Duration(d - e.t.now))
}

// shutdown stops the loop for good. done is closed FIRST, then the
// request channel is drained: a caller that sent before done closed is
// answered here, and a caller that sends later sees done closed right
// after its send (see await). Blocked waiters are answered too.
func (e *loop) shutdown() {
	if e.clock != nil {
		e.clock.timer.Stop()
	}
	close(e.done)
	// Everything sent before done closed is in the buffer now, at most
	// cap(reqc) requests; later senders notice done themselves. Bounding
	// the drain means callers that keep sending cannot hold the loop.
	for range cap(e.reqc) {
		select {
		case r := <-e.reqc:
			r.err = drivers.ErrClosed
			r.reply <- struct{}{}
			continue
		default:
		}
		break
	}
	e.failWaiters(e.t, drivers.ErrClosed)
}

// failWaiters answers every blocked AcquireWait queued in t with err.
func (e *loop) failWaiters(t *table, err error) {
	for _, en := range t.entries {
		if en.queue == nil {
			continue
		}
		for w := range en.queue.line.all() {
			// A wait for several keys is queued for each: answered once.
			if r := w.tag; r != nil && r.err == nil {
				r.err = err
				r.reply <- struct{}{}
			}
			w.tag = nil
		}
	}
}
