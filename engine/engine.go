package engine

import (
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
	cfg     Config
	reqc    chan *request // never closed: senders also watch done
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	keys    atomic.Int64

	// Owned by the loop goroutine.
	t        *table
	timer    Timer         // live mode only
	wake     chan struct{} // the timer's signal; nil in replicated mode
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
		cfg:     cfg,
		reqc:    make(chan *request, queueLen),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		t:       newTable(cfg.MaxKeys, cfg.MaxWaitersPerKey),
	}
	if !cfg.Replicated {
		e.wake = make(chan struct{}, 1)
		e.timer = cfg.Clock.AfterFunc(time.Hour, e.onTimer)
		e.timer.Stop()
		e.t.advance(cfg.Clock.Now().UnixNano())
	}
	go e.run()
	return e, nil
}

// Close stops the engine. Every command still queued and every blocked
// AcquireWait is answered with drivers.ErrClosed; later calls return it
// too. Close is idempotent and returns once the loop has exited.
func (e *Engine) Close() error {
	e.once.Do(func() { close(e.closing) })
	<-e.done
	return nil
}

// Len returns the number of keys in the table as of the last batch. It is
// cheap (an atomic load), for metrics.
func (e *Engine) Len() int { return int(e.keys.Load()) }

// onTimer runs on the timer's goroutine; it only nudges the loop.
func (e *Engine) onTimer() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// run is the loop: the only goroutine that touches the table. It exits
// when Close is called.
func (e *Engine) run() {
	batch := make([]*request, 0, maxBatch)
	for {
		select {
		case r := <-e.reqc:
			batch = append(batch[:0], r)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-e.reqc:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			e.process(batch)
			clear(batch)
		case <-e.wake:
			e.armed = false
			e.process(nil)
		case <-e.closing:
			e.shutdown()
			close(e.done)
			return
		}
	}
}

// process applies one batch. In live mode it first reads the clock once
// and ends every grant that is due, so all commands of the batch see the
// same instant and never an expired holder. Answers go out after the
// expiry timer is re-armed, so a caller that moves a fake clock right
// after its call returns always finds the timer in place.
func (e *Engine) process(batch []*request) {
	t := e.t
	if !e.cfg.Replicated {
		t.advance(e.cfg.Clock.Now().UnixNano())
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
	e.keys.Store(int64(len(e.t.entries)))
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
// for an earlier moment is left alone: it fires early, finds nothing due
// and re-arms, which is cheaper than resetting it on every release.
func (e *Engine) rearm() {
	d, ok := e.t.nextDeadline()
	if !ok {
		if e.armed {
			e.timer.Stop()
			e.armed = false
		}
		return
	}
	if e.armed && e.armedAt <= d {
		return
	}
	e.armed = true
	e.armedAt = d
	e.timer.Reset(time.Duration(d - e.t.now))
}

// shutdown answers everything that is waiting with ErrClosed.
func (e *Engine) shutdown() {
	if e.timer != nil {
		e.timer.Stop()
	}
	for {
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
