package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
)

const (
	// queueLen is the request channel's buffer: callers rarely block on
	// the send, and the loop finds a batch waiting when it comes back.
	queueLen = 512
	// maxBatch bounds one batch so replies are never held back long.
	maxBatch = 512
)

// Engine is the embedded lock engine: one goroutine owns the lock table and
// serves the commands callers send it. It is safe for concurrent use.
type Engine struct {
	// Read by callers, written once by New.
	cfg    Config
	now    func() int64  // live mode: the clock in unix nanoseconds
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

	// Owned by the loop goroutine.
	t        *table
	timer    Timer // live mode only
	armed    bool
	armedAt  int64
	replies  []*request // answers of the current batch, sent after it
	handoffs []outcome
}

// New starts an engine. It copies cfg; the caller's struct is never
// written. Close it to stop its goroutine and timer.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:    cfg,
		reqc:   make(chan *request, queueLen),
		signal: make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		t:      newTable(cfg.MaxKeys, cfg.MaxWaitersPerKey),
	}
	if !cfg.Replicated {
		e.now = func() int64 { return cfg.Clock.Now().UnixNano() }
		if c, ok := cfg.Clock.(unixNanoClock); ok {
			e.now = c.UnixNano
		}
		e.timer = cfg.Clock.AfterFunc(time.Hour, e.poke)
		e.timer.Stop()
		e.t.advance(e.now())
	}
	go e.run()
	return e, nil
}

// Close stops the engine. Every command still queued and every blocked
// AcquireWait is answered with drivers.ErrClosed; later calls return it
// too. Close is idempotent and returns once the loop has exited.
func (e *Engine) Close() error {
	e.once.Do(func() {
		e.stopping.Store(true)
		e.poke()
	})
	<-e.exited
	return nil
}

// Len returns the number of keys in the table as of the last batch. It is
// cheap (an atomic load), for metrics.
func (e *Engine) Len() int { return int(e.keys.Load()) }

// WaiterCount is the number of queued waiters over all keys, as of the
// last batch the loop finished (no round trip: cheap enough for every
// request).
func (e *Engine) WaiterCount() int { return int(e.waiting.Load()) }

// poke nudges the loop without ever blocking; it runs on the timer's
// goroutine or in Close. A pending nudge is enough for both.
func (e *Engine) poke() {
	select {
	case e.signal <- struct{}{}:
	default:
	}
}

// signalled handles a nudge; it reports whether the loop must stop.
func (e *Engine) signalled() bool {
	if e.stopping.Load() {
		e.shutdown()
		return true
	}
	if !e.cfg.Replicated {
		e.armed = false
		e.process(nil)
	}
	return false
}

// run is the loop: the only goroutine that touches the table. It exits
// when Close is called. While requests keep coming it receives without
// a blocking select, and checks the timer and Close with a cheap
// non-blocking receive after each batch.
func (e *Engine) run() {
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
func (e *Engine) drain(batch []*request) []*request {
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

// process applies one batch. In live mode it first reads the clock once
// and ends every grant that is due, so all commands of the batch see the
// same instant and never an expired holder. Answers go out after the
// expiry timer is re-armed, so a caller that moves a fake clock right
// after its call returns always finds the timer in place.
func (e *Engine) process(batch []*request) {
	t := e.t
	if !e.cfg.Replicated {
		t.advance(e.now())
		e.handoffs = t.expireDue(e.handoffs[:0])
		for i := range e.handoffs {
			e.deliver(&e.handoffs[i])
			e.handoffs[i] = outcome{}
		}
	}
	for _, r := range batch {
		e.handle(r)
	}
	if !e.cfg.Replicated {
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

// answer queues r's reply for the end of the batch.
func (e *Engine) answer(r *request) { e.replies = append(e.replies, r) }

// deliver answers the blocked AcquireWait that a hand-off granted.
func (e *Engine) deliver(o *outcome) {
	if !o.handoff || o.nextTag == nil {
		return
	}
	w := o.nextTag
	w.ok = true
	w.grant = o.next
	e.answer(w)
}

// rearm points the timer at the earliest deadline. A timer already armed
// for an earlier moment is left alone, and so is a timer whose table
// emptied: it fires early, finds nothing due and re-arms. That is cheaper
// than resetting the timer on every release.
func (e *Engine) rearm() {
	d, ok := e.t.nextDeadline()
	if !ok || (e.armed && e.armedAt <= d) {
		return
	}
	e.armed = true
	e.armedAt = d
	e.timer.Reset(time.Duration(d - e.t.now))
}

// shutdown stops the loop for good. done is closed FIRST, then the
// request channel is drained: a caller that sent before done closed is
// answered here, and a caller that sends later sees done closed right
// after its send (see await). Blocked waiters are answered too.
func (e *Engine) shutdown() {
	if e.timer != nil {
		e.timer.Stop()
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
func (e *Engine) failWaiters(t *table, err error) {
	for _, en := range t.entries {
		if en.queue == nil {
			continue
		}
		for i := range en.queue.items {
			if w := en.queue.items[i].tag; w != nil {
				w.err = err
				w.reply <- struct{}{}
				en.queue.items[i].tag = nil
			}
		}
	}
}
