package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// reqKind is what a request asks of the loop: one of the live calls, a
// read, or kApply, which carries replicated Commands (those are named by
// their Op, the same numbers from the raft log to the table).
type reqKind uint8

const (
	kAcquire reqKind = iota + 1
	kCancelWait
	kRelease
	kExtend
	kForce
	kGet
	kList
	kSnapshot
	kRestore
	kApply
	kDue
	kNext
	kWaiters
	kIsWaiting
)

// request is one command to the loop. Its reply channel has room for one
// signal, so the loop never blocks on a caller that has gone away; the
// answer fields are written by the loop before it signals, and read by the
// caller after it receives.
type request struct {
	kind  reqKind
	claim Claim // kAcquire
	key   string
	keys  []string // kAcquire
	wait  bool     // kAcquire
	owner string
	ttl   time.Duration
	// maxHold is a kAcquire's cap on each grant's total hold time.
	maxHold time.Duration
	limit   int
	now     int64
	cmds    []Command
	table   *table   // kRestore: the decoded replacement
	target  *request // kCancelWait: the wait to withdraw
	group   *group   // kAcquire while it waits for some of several keys
	reply   chan struct{}
	// room is where an acquire's grants go until its caller copies them
	// out, kept with the request in the pool: an acquire allocates none.
	room []Grant
	answer
}

// answer is what the loop answers a request: each call reads the fields
// of its kind.
type answer struct {
	ok       bool
	grant    Grant
	info     Info
	infos    []Info
	frozen   *Frozen
	results  []Result
	grants   []Grant
	waiters  []Waiter
	deadline int64
	err      error
}

// Requests are pooled with their reply channels. A request goes back to
// the pool only when its reply channel is known to be empty and the loop
// holds no reference to it.
var reqPool = sync.Pool{New: func() any { return &request{reply: make(chan struct{}, 1)} }}

func getReq(kind reqKind) *request {
	r := reqPool.Get().(*request)
	r.kind = kind
	return r
}

// newReq is a pooled request of kind about key and owner.
func newReq(kind reqKind, key, owner string, ttl time.Duration) *request {
	r := getReq(kind)
	r.key, r.owner, r.ttl = key, owner, ttl
	return r
}

func putReq(r *request) {
	reply, room := r.reply, r.room
	clear(room[:cap(room)]) // no grant's strings kept alive by the pool
	*r = request{reply: reply, room: room[:0]}
	reqPool.Put(r)
}

var errDupWaiter = fmt.Errorf("engine: owner is already waiting for this key: %w", drivers.ErrInvalid)

// errRestored answers the waiters of a table replaced by Restore.
var errRestored = fmt.Errorf("engine: wait ended because the lock table was restored from a snapshot: %w", drivers.ErrUnavailable)

// send hands r to the loop. On failure r has not been sent and is back in
// the pool.
func (e *loop) send(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		putReq(r)
		return err
	}
	select {
	case <-e.done:
		putReq(r)
		return drivers.ErrClosed
	default:
	}
	select {
	case e.reqc <- r:
		return nil
	default:
	}
	select {
	case e.reqc <- r:
		return nil
	case <-ctx.Done():
		putReq(r)
		return ctx.Err()
	case <-e.done:
		putReq(r)
		return drivers.ErrClosed
	}
}

// sentAfterClose reports whether the loop may never see r, which was just
// sent: true when done is already closed. The loop answers every request
// it receives before closing done and drains the channel after closing
// it, so a request sent while done was open is always answered. This
// check spares callers from waiting on the shared done channel, which
// every caller would otherwise contend on.
func (e *loop) sentAfterClose() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// roundTrip sends r and waits for its answer. On a nil return the answer
// is in r and the caller puts r back; on an error the caller must not
// touch r (the loop may still answer it).
func (e *loop) roundTrip(ctx context.Context, r *request) error {
	if err := e.send(ctx, r); err != nil {
		return err
	}
	if e.sentAfterClose() {
		return e.closedReply(r)
	}
	done := ctx.Done()
	if done == nil {
		<-r.reply
		return nil
	}
	select {
	case <-r.reply:
		return nil
	case <-done:
		// The command may still take effect; the loop answers into the
		// buffered channel and nobody reads it.
		return ctx.Err()
	}
}

// ask sends r, waits for its answer (as roundTrip) and returns it, with
// the answer's error; r goes back to the pool.
func (e *loop) ask(ctx context.Context, r *request) (answer, error) {
	return answerOf(r, e.roundTrip(ctx, r))
}

// askSettled is ask for commands whose outcome the caller must know
// (settle).
//
// call is askSettled for the live point commands (acquire, release,
// extend, force release). Their outcome matters to every caller, and a
// wait that also watched ctx.Done() would cost each call a select on the
// caller's context: with one long-lived context shared by many callers,
// the runtime serialises them all on that context's channel lock, which
// cost 40 % of a cycle at 32 callers (BenchmarkManagerTry's harness-shape
// row). The loop answers a point command without blocking, so the wait
// is as long as the commands queued before it.
//
// It returns only the fields a point command answers, without copying the
// whole answer.
func (e *loop) call(ctx context.Context, r *request) (Grant, bool, error) {
	if err := e.settle(ctx, r); err != nil {
		return Grant{}, false, err
	}
	g, ok, err := r.grant, r.ok, r.err
	putReq(r)
	return g, ok && err == nil, err
}

func (e *loop) askSettled(ctx context.Context, r *request) (answer, error) {
	return answerOf(r, e.settle(ctx, r))
}

// answerOf returns r's answer and puts r back, unless err says r was not
// answered (then r is not touched: the loop may still answer it).
func answerOf(r *request, err error) (answer, error) {
	if err != nil {
		return answer{}, err
	}
	a := r.answer
	putReq(r)
	return a, a.err
}

// settle sends r and waits for its answer however long ctx lasts: for
// commands whose outcome the caller must know (Apply, Restore). The loop
// never blocks, so the wait is short.
func (e *loop) settle(ctx context.Context, r *request) error {
	if err := e.send(ctx, r); err != nil {
		return err
	}
	if e.sentAfterClose() {
		return e.closedReply(r)
	}
	<-r.reply
	return nil
}

// closedReply: done is closed, so r was either answered already or is
// answered with ErrClosed by the final drain, or never seen. The caller
// must not reuse r after an error.
func (e *loop) closedReply(r *request) error {
	select {
	case <-r.reply:
		return nil
	default:
		return drivers.ErrClosed
	}
}

// handle executes one request inside the loop.
func (e *loop) handle(r *request) {
	t := e.t
	switch r.kind {
	case kAcquire:
		a := ask{keys: r.keys, owner: r.owner, ttl: r.ttl, maxHold: r.maxHold, claim: r.claim, wait: r.wait, into: r.room}
		if r.wait {
			a.tag = r
		}
		o := t.acquire(&a)
		if cap(o.grants) > cap(r.room) {
			r.room = o.grants[:0] // kept for the request's next use
		}
		e.deliver(&o) // what ran out went to its waiters first
		switch {
		case o.err != nil:
			r.err = o.err
		case o.ok:
			r.ok, r.grants = true, o.grants
		case o.dup:
			r.err = errDupWaiter
		case o.queued:
			r.grants, r.group = o.grants, o.g
			return // answered by a hand-off, a cancel or Close
		default:
			r.grant = o.grant
		}
	case kCancelWait:
		r.grant = e.cancelWait(r.target)
	case kRelease:
		o := t.release(r.key, r.owner, 0)
		r.ok, r.err = o.ok, o.err
		e.deliver(&o)
	case kExtend:
		o := t.extend(r.key, r.owner, r.ttl)
		r.ok, r.grant, r.err = o.ok, o.grant, o.err
	case kForce:
		o := t.forceRelease(r.key, 0)
		r.ok, r.err = o.ok, o.err
		e.deliver(&o)
	case kGet:
		r.info, r.ok = t.get(r.key)
	case kList:
		r.infos = t.list(r.key, r.limit)
	case kSnapshot:
		r.frozen = t.freeze()
	case kRestore:
		e.restore(r.table)
	case kApply:
		r.results = e.apply(r.cmds)
	case kDue:
		r.grants = t.due(r.now, r.limit)
	case kNext:
		r.deadline, r.ok = t.nextDeadline()
	case kWaiters:
		r.waiters = t.waiterList()
	case kIsWaiting:
		en := t.entries[r.key]
		r.ok = en != nil && en.waiterIndex(r.owner) >= 0
	}
	e.queueReply(r)
}

// cancelWait withdraws the wait w whose caller gave up: its places in
// the queues, and every key it holds, whether it was still waiting for
// others or a hand-off crossed the cancellation (nobody will use that
// grant, so the loop releases it and hands it on). It returns the holder
// in the way of the first key w was still waiting for (zero when none).
func (e *loop) cancelWait(w *request) (busy Grant) {
	t := e.t
	var o outcome
	for _, k := range w.keys {
		if t.cancelTag(k, w, &o) && busy.Key == "" {
			if en := t.entries[k]; en != nil {
				busy = en.blocker(w.claim.InTheWay())
			}
		}
	}
	e.deliver(&o) // the waiters behind it may have been let in
	if w.err == nil {
		e.releaseSet(w)
	}
	w.group = nil
	return busy
}

// restore swaps in nt. Blocked AcquireWait callers of the old table are
// told their wait ended; the waiters of nt came from a snapshot and have
// no caller (their grants, if they come, run out by TTL).
func (e *loop) restore(nt *table) {
	old := e.t
	e.failWaiters(old, errRestored)
	nt.maxKeys, nt.maxWaiters, nt.maxHolders, nt.changed = old.maxKeys, old.maxWaiters, old.maxHolders, old.changed
	if e.clock != nil {
		nt.advance(old.now) // live time never goes back
	}
	e.t = nt
	// Any key may have changed hands, and nothing tells of it key by key.
	e.changes.NotifyAll()
}

// apply runs a replicated batch in order.
func (e *loop) apply(cmds []Command) []Result {
	out := make([]Result, len(cmds))
	for i := range cmds {
		out[i] = e.t.applyCommand(&cmds[i])
	}
	return out
}
