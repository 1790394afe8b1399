package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// fallbackRetryDelay bounds a waiter's pause when WaitOptions.RetryDelay
// is not set.
const fallbackRetryDelay = 100 * time.Millisecond

// wait serves a Request with Wait: one protocol for every claim and for
// sets, first come, first served across processes, since the queue is in
// the file.
//
// One key is first tried with acquireSQL, the uncontended acquire's one
// statement, or, when the handle knows it has a queue, queued behind it
// with queueSQL, one statement too. Otherwise a step (stepTx) takes what
// is free and queues a place on each busy key. A release, a force release
// or a waiter's leaving lets the head of the queue in within its own
// transaction. A waiter of the same handle is handed its fence once that
// commits; one of another process learns it by reading (look), woken by
// any commit (PRAGMA data_version), by the next deadline or lease of the
// key, or after at most RetryDelay. It writes again only when its turn
// has come and nobody let it in (a grant lapsed), when its place is gone,
// or to keep its place alive, a third of a lease after its last visit.
//
// When the wait ends without the keys (ctx, or a key it had taken force
// released) its places are given up and what it took is let go, with a
// fresh context; a key owner held before the wait is only refreshed.
func (d *Driver) wait(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if err := d.enter(ctx, "acquire wait"); err != nil {
		return drivers.Grant{}, err
	}
	var t *ticket // one key's place in this handle's line
	if len(req.Keys) == 1 {
		t = d.lines.join(req.Key(), req.Owner)
		defer d.lines.leave(req.Key(), t)
	}
	w := newWaitState(req)
	var out stepOutcome
	var visited time.Time
	write := true // the first round steps: takes what is free or queues
	// With others of this handle waiting before it, or a queue seen at the
	// last release, the key has a queue: the wait queues behind it in one
	// statement; behind another waiter of this handle, it then waits for
	// its turn before it looks.
	skipLook := false
	switch {
	case t == nil:
	case t.first() && !d.hot.has(req.Key()):
		fence, ok, err := d.acquireOne(ctx, req)
		if err != nil {
			d.abandon(ctx, req.Key(), req.Owner)
		}
		if err != nil || ok {
			return granted(err, fence)
		}
	default:
		queued, err := d.queueBehind(ctx, w)
		if err != nil {
			return d.leave(ctx, w, err)
		}
		if queued {
			write, skipLook, visited = false, !t.first(), time.Now()
		}
	}
	d.watch.subscribe()
	defer d.watch.unsubscribe()
	retryDelay := req.RetryDelay
	if retryDelay <= 0 {
		retryDelay = fallbackRetryDelay
	}
	for ; ; write, skipLook = false, false {
		changed := d.watch.next()
		if !write && !skipLook {
			l, err := d.look(ctx, w)
			if err != nil {
				return d.leave(ctx, w, err)
			}
			if t != nil && t.first() {
				d.lines.pokeOthers(req.Key(), t, l.state)
			}
			if l.done {
				return granted(nil, l.fences...)
			}
			out.busy, out.next = l.busy, l.next
			write = l.act || time.Since(visited) >= rules.PlaceLease/3
		}
		if write {
			var err error
			out, err = d.step(ctx, w, true)
			visited = time.Now()
			if err != nil {
				return d.leave(ctx, w, err)
			}
			if out.done {
				return granted(nil, out.fences...)
			}
		}
		pause := min(rules.PlaceLease/3-time.Since(visited), retryDelay)
		if out.next > 0 {
			pause = min(pause, time.Until(time.UnixMicro(out.next)))
		}
		// Behind another waiter of this handle, a waiter looks when its
		// turn comes or it is poked, not at every change. A grant this
		// handle made it needs no look.
		var turn, poke <-chan struct{}
		var handed <-chan uint64
		if t != nil {
			handed = t.granted
			if !t.first() {
				turn, poke, changed = t.turn, t.poke, nil
			}
		}
		fence, ok, err := d.waitChange(ctx, max(pause, minPoll), changed, turn, poke, handed)
		if ok {
			return granted(nil, fence)
		}
		if err != nil {
			if ctx.Err() != nil && out.busy.Key == "" { // queued behind, never looked
				out.busy = d.inTheWay(ctx, req)
			}
			if ctx.Err() != nil && out.busy.Key != "" {
				err = drivers.HeldByWhenEnded(err, out.busy.Key, out.busy.HeldBy)
			}
			return d.leave(ctx, w, err)
		}
	}
}

// inTheWay reads, with a fresh bounded context, who is in the way of a
// wait for one key that ended before it had looked at the key.
func (d *Driver) inTheWay(ctx context.Context, req drivers.Request) drivers.Busy {
	if d.closed.Load() {
		return drivers.Busy{}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.BusyTimeout)
	defer cancel()
	g, err := d.whyNot(rctx, req)
	if err != nil {
		return drivers.Busy{}
	}
	return g.Busy
}

// lookOutcome is what a waiter read of its keys.
type lookOutcome struct {
	state  rules.State // of the one key
	done   bool        // every key held (one key: nothing to write)
	fences []uint64    // by key, when done
	act    bool        // a step may change something: write one
	busy   drivers.Busy
	next   int64
}

// look reads w's keys without the write lock: whether owner holds them
// all (let in by a release), and whether a step would change anything
// (its place is gone, or it is let in once someone writes).
func (d *Driver) look(ctx context.Context, w *waitState) (lookOutcome, error) {
	req := w.req
	l := lookOutcome{fences: make([]uint64, len(req.Keys)), done: true}
	err := d.read(ctx, "read queue", func(ctx context.Context, r *readStmts) error {
		nowUS := time.Now().UnixMicro()
		for i, k := range req.Keys {
			s, err := readHead(ctx, r.db, k, req.Owner, slots(req.Claim), nowUS)
			if err != nil {
				return err
			}
			l.state = s
			if next := s.NextChange(req.Owner); next > 0 && (l.next == 0 || next < l.next) {
				l.next = next
			}
			fence, held, act := s.Look(req.Owner)
			if held {
				l.fences[i] = fence
				continue
			}
			l.done, l.act = false, l.act || act
			if l.busy.Key == "" {
				l.busy = drivers.Busy{Key: k, HeldBy: s.InTheWay(req.Claim, time.Now().UnixMicro())}
			}
		}
		return nil
	})
	if l.done && len(req.Keys) > 1 {
		l.done, l.act = false, true // the step that completes a set starts every key's TTL
	}
	return l, err
}

// waitChange returns after wait, at a change, at t's turn or poke (nil
// channels never are), with the fence of a grant handed to the ticket
// (ok), or with an error when ctx ends or the handle closes.
func (d *Driver) waitChange(ctx context.Context, wait time.Duration, changed, turn, poke <-chan struct{}, handed <-chan uint64) (fence uint64, ok bool, err error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-turn:
	case <-poke:
	case fence = <-handed:
		return fence, true, nil
	case <-ctx.Done():
		return 0, false, fmt.Errorf("sqlite: acquire wait: %w", ctx.Err())
	case <-d.done:
		return 0, false, drivers.ErrClosed
	}
	// A grant handed over while the waiter was being woken spares it the
	// look that would find it.
	select {
	case fence = <-handed:
		return fence, true, nil
	default:
		return 0, false, nil
	}
}

// leave ends a wait that returns cause: when ctx ended or a key it had
// taken was lost, its places are given up, what it took is let go and a
// key held before it refreshed, and the waiters behind are let in, in one
// transaction with a fresh bounded context. After a failure of the
// database the places lapse on their own.
func (d *Driver) leave(ctx context.Context, w *waitState, cause error) (drivers.Grant, error) {
	var broken *drivers.NotAcquiredError
	if d.closed.Load() || ctx.Err() == nil && !errors.As(cause, &broken) {
		return drivers.Grant{}, cause
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.BusyTimeout)
	defer cancel()
	req := w.req
	_ = d.write(rctx, "leave queue", func(ctx context.Context) error {
		return d.inTx(ctx, func(ctx context.Context) error {
			now := time.Now()
			for _, k := range req.Keys {
				if _, err := d.wq().ExecContext(ctx, dequeueSQL, k, req.Owner); err != nil {
					return err
				}
				var err error
				if w.before[k] {
					_, err = d.wq().ExecContext(ctx, holdSQL, k, req.Owner, deadlineUS(now, req.TTL), false, nil)
				} else {
					_, err = d.wq().ExecContext(ctx, dropSQL, k, req.Owner)
				}
				if err != nil {
					return err
				}
				if _, err := d.admitTx(ctx, k, req.Owner, slots(req.Claim), now); err != nil {
					return err
				}
			}
			return nil
		})
	})
	d.watch.bump()
	return drivers.Grant{}, cause
}

// abandon releases a grant that may have been written by an acquire whose
// ctx ended mid-statement. Release is owner-guarded, so when nothing was
// granted this deletes nothing.
func (d *Driver) abandon(ctx context.Context, key, owner string) {
	if ctx.Err() == nil || d.closed.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.BusyTimeout)
	defer cancel()
	_, _ = d.Release(rctx, key, owner)
}
