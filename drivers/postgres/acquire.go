package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// Acquire serves every drivers.Request with one data model (state.go)
// and one protocol: a step is one transaction over the request's keys,
// under their locks, that lets the head of each queue in while it fits,
// then refreshes what owner holds and takes what it can, all keys or
// none, or, for a wait, queues a place on each busy key.
func (d *Driver) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if req.Claim != (drivers.Claim{}) {
		if err := req.Claim.CheckShared(); err != nil {
			return drivers.Grant{}, err
		}
	}
	if err := d.after(ctx, "acquire", req.Keys...); err != nil {
		return drivers.Grant{}, err
	}
	if req.Wait {
		return d.wait(ctx, req)
	}
	w := newWaitState(req)
	out, err := d.step(ctx, w, false)
	if err != nil {
		return drivers.Grant{}, d.cleanUp(ctx, w, err)
	}
	if out.done {
		return drivers.Grant{Acquired: true, Fences: out.fences}, nil
	}
	return drivers.Grant{Busy: out.busy}, nil
}

// waitState is what a wait (or a set's acquire) knows of its keys between
// its steps.
type waitState struct {
	req     drivers.Request
	started bool             // a step has run
	before  map[string]bool  // keys owner held when the wait began: refreshed, never let go
	took    map[string]bool  // keys this wait has held since: losing one breaks it
	taking  []string         // keys the last step's commit takes anew
	seqs    map[string]int64 // this wait's place of each key it queued for
}

func newWaitState(req drivers.Request) *waitState {
	return &waitState{req: req, before: map[string]bool{}, took: map[string]bool{}, seqs: map[string]int64{}}
}

// stepOutcome is what one step found and did.
type stepOutcome struct {
	done   bool
	fences []uint64 // by key, when done
	busy   drivers.Busy
	wake   time.Duration // until the earliest deadline or lease of the others
}

// step runs one atomic step of w's request (see Acquire): with queue, a
// place on each busy key, the free ones taken and held for a place's
// lease until the last one comes; then every key starts its TTL.
func (d *Driver) step(ctx context.Context, w *waitState, queue bool) (stepOutcome, error) {
	req := w.req
	n := len(req.Keys)
	var out stepOutcome
	var held, kept []bool
	var refs []*uint64
	var seqs []int64
	err := d.inTx(ctx, "acquire", req.Keys, func(t *txn) error {
		out = stepOutcome{fences: make([]uint64, n)}
		held, kept, refs, seqs = make([]bool, n), make([]bool, n), make([]*uint64, n), make([]int64, n)
		take := make([]bool, n)
		t.sweep()
		var next int64
		for i, k := range req.Keys {
			s := t.state(k)
			t.admit(k)
			if err := s.Refusal(k, req.Owner, req.Claim); err != nil {
				return &errRollback{err}
			}
			if at := s.NextChange(req.Owner); at > 0 && (next == 0 || at < next) {
				next = at
			}
			switch g := rules.Find(s.Grants, req.Owner); {
			case g >= 0:
				refs[i], held[i], kept[i] = t.fenceOf(k, s.Grants[g]), true, true
			case w.took[k]: // force released, or lapsed while this process stalled
				return &errRollback{&drivers.NotAcquiredError{Key: k}}
			case len(s.Places) == 0 && rules.Fits(s.Grants, req.Claim):
				take[i] = true
			case out.busy.Key == "":
				out.busy = drivers.Busy{Key: k, HeldBy: s.InTheWay(req.Claim, t.nowUS)}
			}
		}
		if next > 0 {
			out.wake = time.Duration(next-t.nowUS) * time.Microsecond
		}
		out.done = out.busy.Key == ""
		if !out.done && !queue {
			return nil // the admissions, if any, are written all the same
		}
		// A key a set holds while it waits for the others lives a place's
		// lease, kept by the waiter's visits, so that it goes with a
		// waiter that died; the place's grant, when a release lets it in,
		// too.
		lease := t.nowUS + rules.PlaceLease.Microseconds()
		hold, placeTTL := t.nowUS+max(req.TTL.Microseconds(), 1), max(req.TTL.Microseconds(), 1)
		if !out.done {
			hold = lease
		}
		// A grant's cap counts from the moment the request is granted: a
		// set's keys taken while it waits get theirs once it has them all
		// (until then they live a place's lease), and a set's places none
		// until then; a key owner held before keeps the cap it had.
		var ceiling rules.Cap
		placeMaxHold := rules.MaxHoldUS(req.MaxHold)
		if out.done {
			ceiling = rules.CapAt(t.nowUS, rules.MaxHoldUS(req.MaxHold))
		}
		if n > 1 {
			placeTTL, placeMaxHold = rules.PlaceLease.Microseconds(), 0
		}
		kind, lim, excl := claimArgs(req.Claim)
		w.taking = w.taking[:0]
		for i, k := range req.Keys {
			switch {
			case take[i]:
				w.taking = append(w.taking, k)
				refs[i], held[i] = t.grant(k, req.Owner, hold, ceiling, req.Claim), true
			case held[i] && w.started && !w.before[k]:
				t.queue(holdSQL, k, req.Owner, hold, !out.done, ceiling.Arg())
			case held[i]:
				t.queue(holdSQL, k, req.Owner, hold, !out.done, nil)
			default:
				t.queue(enqueueSQL, k, req.Owner, kind, lim, excl, lease, placeTTL, placeMaxHold).QueryRow(func(r pgx.Row) error {
					return r.Scan(&seqs[i])
				})
			}
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	for i, k := range req.Keys {
		if refs[i] != nil {
			out.fences[i] = *refs[i]
		}
		if !w.started && kept[i] {
			w.before[k] = true
		}
		if held[i] && !w.before[k] {
			w.took[k] = true
		}
		if seqs[i] != 0 {
			w.seqs[k] = seqs[i]
		}
	}
	w.started = true
	if !out.done {
		out.fences = nil
	}
	return out, nil
}

// waitOutage is how long a wait rides out a database that does not
// answer (a restart: the pool's old connections fail once each) before it
// reports ErrUnavailable.
const waitOutage = 15 * time.Second

// wait serves a Request with Wait: a step takes what is free and queues a
// place on each busy key; the transaction that lets a place in (a release
// of this handle, or any transaction on the key) tells its waiter alone,
// with the fence (letInSQL: directly within this handle, by LISTEN/NOTIFY
// from another), and a waiter of one key returns with it at once. A
// waiter that hears nothing looks at its keys without a lock at the next
// poll, or when a grant or place in its way is due to lapse. It writes
// again only when
// its turn has come and nobody let it in, when its place is gone, or to
// keep its place alive, a third of a lease after its last visit. A
// database that does not answer is retried for waitOutage; the steps are
// the owner's, so one repeated after a lost answer changes nothing twice.
func (d *Driver) wait(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if err := d.enter(ctx, "acquire wait"); err != nil {
		return drivers.Grant{}, err
	}
	sub := d.hub.subscribe(req.Keys, req.Owner)
	defer d.hub.unsubscribe(sub)
	w := newWaitState(req)
	var out stepOutcome
	var visited, failingSince time.Time
	var lastErr error // of the last call, nil once the database answered
	for write := true; ; {
		var err error
		if write {
			write = false
			if out, err = d.step(ctx, w, true); err == nil {
				visited = time.Now()
				if out.done {
					return drivers.Grant{Acquired: true, Fences: out.fences}, nil
				}
			}
		} else {
			var l lookOutcome
			if l, err = d.look(ctx, w); err == nil {
				if l.done && len(req.Keys) == 1 {
					return drivers.Grant{Acquired: true, Fences: l.fences}, nil
				}
				if l.busy.Key != "" {
					out.busy = l.busy
				}
				out.wake = l.wake
			}
			write = err == nil && (l.done || l.act)
		}
		pause := min(rules.PlaceLease/3-time.Since(visited), d.pollInterval(req))
		switch {
		case err == nil:
			failingSince, lastErr = time.Time{}, nil
			if out.wake > 0 {
				pause = min(pause, out.wake)
			}
		case ctx.Err() != nil && lastErr != nil && !errors.Is(err, drivers.ErrUnavailable):
			// the database's last word was no answer: an outage, not contention
			return drivers.Grant{}, d.leave(ctx, w, fmt.Errorf("%w: %w", err, lastErr))
		case !errors.Is(err, drivers.ErrUnavailable) || ctx.Err() != nil:
			return drivers.Grant{}, d.leave(ctx, w, err)
		default:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) >= waitOutage {
				return drivers.Grant{}, d.leave(ctx, w, err)
			}
			lastErr, write, pause = err, true, 50*time.Millisecond
		}
		t := time.NewTimer(max(pause, time.Millisecond))
		select {
		case <-t.C:
		case <-sub.wake:
			// A waiter of one key told that its place was let in has
			// the grant: the notice comes from the transaction that
			// made it, at its commit. A set reads and takes the rest.
			if k := req.Keys[0]; len(req.Keys) == 1 {
				if fence, ok := d.hub.granted(sub, k, w.seqs[k]); ok {
					t.Stop()
					return drivers.Grant{Acquired: true, Fences: []uint64{fence}}, nil
				}
			}
		case <-ctx.Done():
			t.Stop()
			err := fmt.Errorf("postgres: acquire wait: %w", ctx.Err())
			switch {
			case lastErr != nil: // the database's last word was no answer: an outage, not contention
				err = fmt.Errorf("%w: %w", err, lastErr)
			case out.busy.Key != "":
				err = drivers.HeldByWhenEnded(err, out.busy.Key, out.busy.HeldBy)
			}
			return drivers.Grant{}, d.leave(ctx, w, err)
		case <-d.done:
			t.Stop()
			return drivers.Grant{}, drivers.ErrClosed
		}
		t.Stop()
		write = write || time.Since(visited) >= rules.PlaceLease/3
	}
}

// pollInterval is the longest pause of a waiter between two looks.
func (d *Driver) pollInterval(req drivers.Request) time.Duration {
	if d.hub.listening.Load() {
		return 4 * d.cfg.PollInterval // a safety net: a release wakes the waiters
	}
	if req.RetryDelay > 0 {
		return min(req.RetryDelay, d.cfg.PollInterval)
	}
	return d.cfg.PollInterval
}

// lookOutcome is what a waiter read of its keys.
type lookOutcome struct {
	done   bool     // every key held
	fences []uint64 // by key, when done
	act    bool     // a step may change something: write one
	busy   drivers.Busy
	wake   time.Duration
}

// look reads w's keys without their locks: whether owner holds them all
// (let in by a release), and whether a step would change anything (its
// place is gone, or it is let in once someone writes).
func (d *Driver) look(ctx context.Context, w *waitState) (lookOutcome, error) {
	req := w.req
	l := lookOutcome{fences: make([]uint64, len(req.Keys)), done: true}
	t, err := d.read(ctx, "acquire wait", req.Keys)
	if err != nil {
		return l, err
	}
	var next int64
	for i, k := range req.Keys {
		s := t.state(k)
		if at := s.NextChange(req.Owner); at > 0 && (next == 0 || at < next) {
			next = at
		}
		fence, held, act := s.Look(req.Owner)
		if held {
			l.fences[i] = fence
			continue
		}
		l.done, l.act = false, l.act || act
		if l.busy.Key == "" {
			l.busy = drivers.Busy{Key: k, HeldBy: s.InTheWay(req.Claim, t.nowUS)}
		}
	}
	if next > 0 {
		l.wake = time.Duration(next-t.nowUS) * time.Microsecond
	}
	return l, nil
}

// read reads the state of keys and the database's now, without locks, in
// one round trip.
func (d *Driver) read(ctx context.Context, op string, keys []string) (*txn, error) {
	if err := d.enter(ctx, op); err != nil {
		return nil, err
	}
	t := &txn{keys: keys, states: map[string]*keyState{}}
	for _, k := range keys {
		t.states[k] = &keyState{}
	}
	var b pgx.Batch
	b.Queue(nowSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&t.nowUS) })
	b.Queue(stateSQL, keys).Query(func(rows pgx.Rows) error { return scanState(rows, t) })
	if err := d.pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, d.failed(ctx, op, err, false)
	}
	return t, nil
}

// leave ends a wait that returns cause: when ctx ended, or a key it had
// taken was lost, its places are given up, what it took is let go and a
// key held before it refreshed, and the waiters behind are let in, in one
// transaction with a fresh bounded context. After a failure of the
// database the places lapse on their own.
func (d *Driver) leave(ctx context.Context, w *waitState, cause error) error {
	var broken *drivers.NotAcquiredError
	if d.closed.Load() || ctx.Err() == nil && !errors.As(cause, &broken) {
		return cause
	}
	d.afterCall(w.req.Keys, func(ctx context.Context) { d.leaveTx(ctx, w) })
	return cause
}

func (d *Driver) leaveTx(ctx context.Context, w *waitState) {
	req := w.req
	_ = d.inTx(ctx, "leave queue", req.Keys, func(t *txn) error {
		t.sweep()
		for _, k := range req.Keys {
			s := t.state(k)
			if p := rules.Find(s.Places, req.Owner); p >= 0 {
				t.queue(dequeueSQL, k, req.Owner)
				s.Places = append(s.Places[:p], s.Places[p+1:]...)
			}
			if g := rules.Find(s.Grants, req.Owner); g >= 0 {
				if w.before[k] {
					t.queue(holdSQL, k, req.Owner, t.nowUS+max(req.TTL.Microseconds(), 1), false, nil)
				} else {
					t.queue(dropSQL, k, req.Owner)
					s.Grants = append(s.Grants[:g], s.Grants[g+1:]...)
				}
			}
			t.admit(k)
		}
		return nil
	})
}

// cleanUp undoes what an acquire without Wait may have taken when its
// commit got no answer (ErrOutcomeUnknown), before it returns, so that
// nothing is held that the caller was not told of: the keys the step
// would have newly taken are let go, by owner; those owner held before
// are kept. A later call of the same owner may have taken them since when
// the owner is reused, and then the grants are left to their TTL. After
// a failure of the database they run out on their own.
func (d *Driver) cleanUp(ctx context.Context, w *waitState, cause error) error {
	if !errors.Is(cause, drivers.ErrOutcomeUnknown) || w.req.OwnerReused || len(w.taking) == 0 || d.closed.Load() {
		return cause
	}
	taking := slices.Clone(w.taking)
	d.afterCall(taking, func(context.Context) {
		// The grant may be committed after the call has returned, for a
		// client that is gone; until the database answers, nothing else
		// lets it go before its TTL.
		ctx, cancel := context.WithTimeout(d.life, cleanUpFor)
		defer cancel()
		for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
			err := d.cleanUpTx(ctx, w.req.Owner, taking)
			if !errors.Is(err, drivers.ErrUnavailable) || !sleep(ctx, pause) {
				return
			}
		}
	})
	return cause
}

// cleanUpFor bounds how long the clean-up of an acquire whose answer was
// lost retries while the database does not answer.
const cleanUpFor = 30 * time.Second

// sleep pauses for d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// cleanUpTx lets go owner's grants of keys (letGo). Its transaction
// takes the keys' locks, which the transaction that got no answer holds
// until it has committed or rolled back at the server: it sees the
// outcome.
func (d *Driver) cleanUpTx(ctx context.Context, owner string, keys []string) error {
	_, err := d.letGo(ctx, "acquire clean-up", owner, keys)
	return err
}
