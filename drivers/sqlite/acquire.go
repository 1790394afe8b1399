package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/internal/rules"
)

// Capabilities: every claim, sets, and waits for one key or a set, all
// first come, first served across the processes sharing the file, and a
// cap on total hold time, which the statements keep with each grant and
// no refresh goes past.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}

// Acquire serves every drivers.Request with one data model (state.go)
// and one waiting protocol (wait.go). One key without Wait is one
// statement; a set is one transaction, all keys or none.
func (d *Driver) Acquire(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	if req.Claim != (drivers.Claim{}) {
		if err := req.Claim.CheckShared(); err != nil {
			return drivers.Grant{}, err
		}
	}
	switch {
	case req.Wait:
		return d.wait(ctx, req)
	case len(req.Keys) == 1:
		fence, ok, err := d.acquireOne(ctx, req)
		if err != nil || ok {
			return granted(err, fence)
		}
		return d.whyNot(ctx, req)
	}
	out, err := d.step(ctx, newWaitState(req), false)
	if err != nil {
		return drivers.Grant{}, err
	}
	if out.done {
		d.maybeSweep(ctx)
		return drivers.Grant{Acquired: true, Fences: out.fences}, nil
	}
	return drivers.Grant{Busy: out.busy}, nil
}

func granted(err error, fences ...uint64) (drivers.Grant, error) {
	if err != nil {
		return drivers.Grant{}, err
	}
	return drivers.Grant{Acquired: true, Fences: fences}, nil
}

// acquireOne runs acquireSQL: ok is false when the key is not granted now.
func (d *Driver) acquireOne(ctx context.Context, req drivers.Request) (fence uint64, ok bool, err error) {
	err = d.write(ctx, "acquire", func(ctx context.Context) error {
		now := time.Now()
		ceiling := rules.CapAt(now.UnixMicro(), rules.MaxHoldUS(req.MaxHold))
		args := append([]any{req.Key(), req.Owner, ceiling.Bound(deadlineUS(now, req.TTL)), now.UnixMicro()}, claimArgs(req.Claim)...)
		args = append(args, ceiling.Arg())
		var f int64
		err := d.w.acquire.QueryRowContext(ctx, args...).Scan(&f)
		if errors.Is(err, sql.ErrNoRows) {
			ok = false
			return nil
		}
		fence, ok = uint64(f), err == nil
		return err
	})
	if ok {
		d.maybeSweep(ctx)
	}
	return fence, ok, err
}

// whyNot reads why acquireSQL granted nothing: a refusal (another kind,
// the other side), or the holder in the way, as the key is just after
// the attempt. A failed read leaves the attempt's answer: busy.
func (d *Driver) whyNot(ctx context.Context, req drivers.Request) (drivers.Grant, error) {
	key := req.Key()
	var s rules.State
	err := d.read(ctx, "read holder", func(ctx context.Context, r *readStmts) (err error) {
		s, err = readHead(ctx, r.db, key, req.Owner, slots(req.Claim), time.Now().UnixMicro())
		return err
	})
	if err != nil {
		return drivers.Grant{Busy: drivers.Busy{Key: key}}, nil
	}
	if err := s.Refusal(key, req.Owner, req.Claim); err != nil {
		return drivers.Grant{}, err
	}
	return drivers.Grant{Busy: drivers.Busy{Key: key, HeldBy: s.InTheWay(req.Claim, time.Now().UnixMicro())}}, nil
}

// waitState is what a wait (or a set's acquire) knows of its keys between
// its steps.
type waitState struct {
	req     drivers.Request
	started bool            // a step has been written
	before  map[string]bool // keys owner held when the wait began: refreshed, never let go
	took    map[string]bool // keys this wait has held since: losing one breaks it
}

func newWaitState(req drivers.Request) *waitState {
	return &waitState{req: req, before: map[string]bool{}, took: map[string]bool{}}
}

// stepOutcome is what one step found and did.
type stepOutcome struct {
	done   bool
	fences []uint64 // by key, when done
	busy   drivers.Busy
	next   int64  // the earliest deadline or lease of the others (us)
	held   []bool // by key: owner holds it after the step
	kept   []bool // by key: owner held it before the step
}

// refusal carries a refusal out of a transaction that must be rolled back
// (a key of another kind found half-way): the caller reports it, not as a
// failure.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

// step runs stepTx as one write transaction and records what it took.
func (d *Driver) step(ctx context.Context, w *waitState, queue bool) (stepOutcome, error) {
	var out stepOutcome
	err := d.write(ctx, "acquire", func(ctx context.Context) error {
		return d.inTx(ctx, func(ctx context.Context) (err error) {
			out, err = d.stepTx(ctx, w, queue)
			return err
		})
	})
	if r, ok := errors.AsType[*refusal](err); ok {
		return out, r.err
	}
	if err != nil {
		return out, err
	}
	for i, k := range w.req.Keys {
		if !w.started && out.kept[i] {
			w.before[k] = true
		}
		if out.held[i] && !w.before[k] {
			w.took[k] = true
		}
	}
	w.started = true
	if len(w.req.Keys) == 1 && queue {
		d.hot.set(w.req.Key(), !out.done)
	}
	d.watch.bump() // a waiter of this handle may have been let in
	return out, nil
}

// queueBehind queues w's place on its one key in one statement (queueSQL)
// when the key has a queue already: what a step would do then, since a
// wait never goes before a live place, without the step's transaction
// and read. Whoever is at the head of the queue lets itself in when its
// turn comes with nobody to let it in. ok is false when the statement
// wrote nothing, and the caller steps.
func (d *Driver) queueBehind(ctx context.Context, w *waitState) (ok bool, err error) {
	req := w.req
	err = d.write(ctx, "acquire wait", func(ctx context.Context) error {
		now := time.Now()
		a := claimArgs(req.Claim)
		res, err := d.wq().ExecContext(ctx, queueSQL, req.Key(), req.Owner, now.Add(rules.PlaceLease).UnixMicro(), now.UnixMicro(),
			a[0], a[1], a[2], max(req.TTL.Microseconds(), 1), maxHoldArg(req.MaxHold))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n > 0
		return err
	})
	if ok {
		w.started = true
	}
	return ok, err
}

// stepTx is one atomic step of an acquire of every key of w.req: on each
// key, the head of the queue is let in while it fits (which may be owner); then owner's grants are refreshed, and the keys it can
// take now are taken (nobody waits and the claim fits) when every key can
// be, or, with queue, the free ones taken and a place queued (or kept
// alive) on each busy one. A set's keys are held with at least a place's
// lease until the last one comes; then every key starts its TTL.
func (d *Driver) stepTx(ctx context.Context, w *waitState, queue bool) (stepOutcome, error) {
	req, now := w.req, time.Now()
	n := len(req.Keys)
	out := stepOutcome{fences: make([]uint64, n), held: make([]bool, n), kept: make([]bool, n)}
	take := make([]bool, n)
	for i, k := range req.Keys {
		s, err := d.admitTx(ctx, k, req.Owner, slots(req.Claim), now)
		if err != nil {
			return out, err
		}
		if err := s.Refusal(k, req.Owner, req.Claim); err != nil {
			return out, &refusal{err}
		}
		if next := s.NextChange(req.Owner); next > 0 && (out.next == 0 || next < out.next) {
			out.next = next
		}
		switch g := rules.Find(s.Grants, req.Owner); {
		case g >= 0:
			out.fences[i], out.held[i], out.kept[i] = s.Grants[g].Fence, true, true
		case w.took[k]: // force released, or lapsed while this process stalled
			return out, &refusal{&drivers.NotAcquiredError{Key: k}}
		case len(s.Places) == 0 && rules.Fits(s.Grants, req.Claim):
			take[i] = true
		case out.busy.Key == "":
			out.busy = drivers.Busy{Key: k, HeldBy: s.InTheWay(req.Claim, time.Now().UnixMicro())}
		}
	}
	out.done = out.busy.Key == ""
	if !out.done && !queue {
		return out, nil
	}
	// A key a set holds while it waits for the others lives a place's
	// lease, kept by the waiter's visits, so that it goes with a waiter
	// that died; the place's grant, when a release lets it in, too.
	lease := now.Add(rules.PlaceLease).UnixMicro()
	hold, placeTTL := deadlineUS(now, req.TTL), max(req.TTL.Microseconds(), 1)
	if !out.done {
		hold = lease
	}
	if n > 1 {
		placeTTL = rules.PlaceLease.Microseconds()
	}
	// The cap, like the TTL, starts when the last key comes (driverstest's
	// Model): a set's keys taken or let in while it waits have none yet,
	// nor do its places, and the step that completes it caps each key that
	// has none, but those owner held before the request, whose cap (or
	// lack of one) a refresh keeps. A place of one key carries its MaxHold
	// for the release that lets it in.
	ceiling, placeHold := rules.CapAt(now.UnixMicro(), rules.MaxHoldUS(req.MaxHold)), maxHoldArg(req.MaxHold)
	if !out.done {
		ceiling = 0
	}
	if n > 1 {
		placeHold = nil
	}
	a := claimArgs(req.Claim)
	for i, k := range req.Keys {
		var err error
		switch {
		case take[i]:
			out.fences[i], err = d.grantTx(ctx, k, req.Owner, ceiling.Bound(hold), req.Claim, ceiling)
			out.held[i] = true
		case out.held[i]:
			started := ceiling
			if w.before[k] || !w.started {
				started = 0
			}
			_, err = d.wq().ExecContext(ctx, holdSQL, k, req.Owner, started.Bound(hold), !out.done, started.Arg())
		default:
			_, err = d.wq().ExecContext(ctx, enqueueSQL, k, req.Owner, a[0], a[1], a[2], lease, placeTTL, now.UnixMicro(), placeHold)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
