package engine

import "context"

// Replicated is the engine as a deterministic state machine for a raft
// log: time comes only from the commands given to Apply, no timer runs,
// and nothing expires unless an OpExpire says so. The same log gives the
// same table, and the same Snapshot bytes, on every node. It is safe for
// concurrent use.
type Replicated struct{ loop }

// NewReplicated starts a replicated engine; cfg.Clock is not used. It
// copies cfg. Close it to stop its goroutine.
func NewReplicated(cfg Config) (*Replicated, error) {
	e := new(Replicated)
	if err := e.start(cfg, false); err != nil {
		return nil, err
	}
	return e, nil
}

// Apply applies a committed batch of commands in order, in one round trip
// to the engine, and returns one Result per command; per-command errors
// are in the results. ctx bounds only the hand-over: once the engine has
// the batch, Apply waits for it to be applied, so the caller always knows
// whether it was. cmds must not change until Apply returns.
func (e *Replicated) Apply(ctx context.Context, cmds []Command) ([]Result, error) {
	r := getReq(kApply)
	r.cmds = cmds
	a, err := e.askSettled(ctx, r)
	return a.results, err
}

// Due returns up to limit grants (all when limit <= 0) whose deadline is
// <= now, sorted by deadline then key: what a leader proposes OpExpire for.
func (e *Replicated) Due(ctx context.Context, now int64, limit int) ([]Grant, error) {
	r := getReq(kDue)
	r.now, r.limit = now, limit
	a, err := e.ask(ctx, r)
	return a.grants, err
}

// NextDeadline returns the earliest deadline in the table; ok is false
// when the table is empty.
func (e *Replicated) NextDeadline(ctx context.Context) (int64, bool, error) {
	a, err := e.ask(ctx, getReq(kNext))
	return a.deadline, a.ok && err == nil, err
}

// Waiters returns every queued waiter, sorted by key then owner.
func (e *Replicated) Waiters(ctx context.Context) ([]Waiter, error) {
	a, err := e.ask(ctx, getReq(kWaiters))
	return a.waiters, err
}

// IsWaiting reports whether owner is queued for key, as of every command
// applied so far.
func (e *Replicated) IsWaiting(ctx context.Context, key, owner string) (bool, error) {
	a, err := e.ask(ctx, newReq(kIsWaiting, key, owner, 0))
	return a.ok && err == nil, err
}
