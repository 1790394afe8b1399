// Package election elects one leader among processes, on any backend of
// package lock: the embedded engine, the cluster, Redis or SQLite.
//
// A candidate calls Campaign, which blocks until it leads (candidates are
// served in arrival order on the backends that queue waiters) and returns
// a Leadership. Its Context is cancelled when leadership ends: on Resign,
// when the Manager closes, or when the lease could not be kept — before
// the backend can let it run out, by the lock's safety margin, so that a
// leader stops before another can start. Standing again is one more call
// to Campaign; no process has to exit.
//
// WithMaxHold caps how long one leadership lasts, however well its lease
// is kept: the backend ends the lease at the cap, so a leader that is
// alive but wedged cannot keep the election, and its Context ends (with a
// *lock.LostError of reason lock.ErrLostMaxHold) a safety margin before.
//
// The term of a leadership is the lock's fence: strictly increasing for
// one election, so that a resource that remembers the highest term it has
// seen can refuse the writes of a deposed leader.
//
// Leader reads the current leader, its value and term; Observe reports
// each change. The value travels in the lock's owner after a random
// token, where a lock's holder description goes (lock.WithHolder): a
// name held as a plain lock by a Manager reads as a leader whose value
// is that holder.
//
// # Observing
//
// Observe is told of changes where the backend tells
// (drivers.ChangeWatcher: the memory engine whenever the key changes
// hands, SQLite at any commit, Redis at a release) and reads the leader
// again at once; it also reads on a timer (200 ms by default), which
// catches what is not told (a lease running out) and is the only way on
// the cluster. An outage reports nothing rather than "no leader".
//
// # Failover
//
// A leader killed without resigning is replaced when its lease runs out:
// measured 14.9 s at p50 and 15.0–15.6 s at most with the default 15 s
// lease (DefaultTTL), on SQLite, Redis and the cluster (docs/PERFORMANCE.md
// has the command). A leader that resigns is replaced at once: the next
// candidate in the queue is handed the lock.
//
// # From any language
//
// Over the cluster's HTTP API an election is the lock API: campaign with
// POST /v1/acquire ({"key": NAME, "owner": TOKEN + ":" + VALUE, "ttl_ms":
// …, "wait_ms": …}, TOKEN 32 random hex digits), keep it with POST
// /v1/extend every third of the TTL, and resign with POST /v1/release.
// GET /v1/lock?key=NAME answers the leader: its holder is the value and
// its fence the term.
package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// ErrNoLeader is returned by Leader when nobody leads.
var ErrNoLeader = errors.New("election: no leader")

// DefaultTTL is the lease of a leadership when New is given none: a leader
// whose process dies without resigning is replaced within about this long.
const DefaultTTL = 15 * time.Second

// MaxValueLen is the longest value a candidate may campaign with, in
// bytes: the value travels in the lock's owner, after a 32-byte token and
// a colon.
const MaxValueLen = drivers.MaxOwnerLen - tokenLen - 1

// tokenLen is the length of a campaign's token, hex.
const tokenLen = 32

// campaignWait bounds one wait for the lock inside Campaign, which waits
// again after it until its ctx ends: the backends cap how long one request
// may wait.
const campaignWait = time.Minute

// Election is one named election on a Manager. It is safe for concurrent
// use; each Campaign is a candidate of its own.
type Election struct {
	m       *lock.Manager
	name    string
	ttl     time.Duration
	maxHold time.Duration // 0: leaderships without a cap
}

// Option tunes an election. Build it with the With functions; the zero
// Option does nothing.
type Option struct {
	maxHold time.Duration
}

// WithMaxHold caps each leadership of the election at d, however well its
// lease is refreshed (lock.WithMaxHold): the backend ends the lease at the
// cap, so another candidate leads from then on, and the leader's Context
// ends a safety margin (a fifth of the TTL) before, with a
// *lock.LostError of reason lock.ErrLostMaxHold. d must be longer than
// that margin and at most drivers.MaxTTL; a backend that cannot enforce a
// cap (drivers.Capabilities.MaxHold) makes New fail with an error
// matching lock.ErrUnsupported. The cap counts from when the candidate
// begins to lead, however long it waited.
func WithMaxHold(d time.Duration) Option { return Option{maxHold: d} }

// New returns the election name on m, with leaderships leased for ttl (0:
// DefaultTTL) and kept refreshed. The name is a lock key: it takes the
// Manager's prefix, and must not be used as a lock by anything else.
// opts may cap each leadership (WithMaxHold).
func New(m *lock.Manager, name string, ttl time.Duration, opts ...Option) (*Election, error) {
	if m == nil {
		return nil, errors.New("election: nil Manager")
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	e := &Election{m: m, name: name, ttl: ttl}
	for _, o := range opts {
		if o.maxHold != 0 {
			e.maxHold = o.maxHold
		}
	}
	// The checks of the lock itself: a key the backend takes, a TTL in
	// range, a cap the backend enforces.
	if err := m.Make(name, ttl, lock.WithMaxHold(e.maxHold)).Err(); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	// The lock's default safety margin, which Campaign keeps: a cap no
	// longer would end every leadership as it began.
	if margin := ttl / 5; e.maxHold != 0 && e.maxHold <= margin {
		return nil, fmt.Errorf("election: %w", &lock.InvalidError{Field: "max hold",
			Reason: fmt.Sprintf("%v must be longer than the lease's safety margin %v (a fifth of the TTL)", e.maxHold, margin)})
	}
	if _, ok := m.Driver().(drivers.Inspector); !ok {
		return nil, fmt.Errorf("election: the %T backend cannot say who holds a key: %w", m.Driver(), drivers.ErrUnsupported)
	}
	return e, nil
}

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Leader is who leads an election, as the backend sees it.
type Leader struct {
	// Value is what the leader campaigned with.
	Value string
	// Term is the leadership's fence: strictly increasing for one
	// election.
	Term uint64
	// Remaining is how long the leader's lease has left, unless it is
	// refreshed (leaders refresh theirs).
	Remaining time.Duration
}

// Leader returns the current leader, or ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	h, ok, err := e.m.Driver().(drivers.Inspector).Inspect(ctx, e.m.Prefix()+e.name)
	if err != nil {
		return Leader{}, fmt.Errorf("election %q: leader: %w", e.name, err)
	}
	if !ok || len(h.Holders) == 0 {
		return Leader{}, ErrNoLeader
	}
	holder := h.Holders[0]
	_, value, ok := drivers.SplitOwner(holder.Owner)
	if !ok {
		return Leader{}, fmt.Errorf("election %q: the key is held by %q, not by a candidate: is the name used as a lock too?", e.name, holder.Owner)
	}
	return Leader{Value: value, Term: holder.Fence, Remaining: holder.Remaining}, nil
}

// Campaign blocks until this candidate leads, then returns its leadership;
// ctx bounds the wait only (the leadership lasts until Resign, or until it
// is lost). value, at most MaxValueLen bytes of valid UTF-8, is what
// Leader reports to others (an address, a host name); it may be empty.
//
// When ctx ends first, Campaign returns ctx's error and leaves the queue
// (a lease handed to it in the instant it gave up is released in the
// background: Leader may name it for that moment, but no Leadership
// exists for it, so nothing acts on it); when the backend fails, its
// error (lock.ErrUnavailable, …).
func (e *Election) Campaign(ctx context.Context, value string) (*Leadership, error) {
	if len(value) > MaxValueLen || !utf8.ValidString(value) {
		return nil, fmt.Errorf("election %q: value: %w", e.name, &lock.InvalidError{Field: "value",
			Reason: fmt.Sprintf("must be valid UTF-8 of at most %d bytes, got %d bytes", MaxValueLen, len(value))})
	}
	owner := lock.NewOwner(value)

	// The lock's callback runs on ctx without its cancellation once it
	// leads: ctx bounds the campaign, not the leadership.
	run, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, stopRun)
	l := &Leadership{value: value, resign: make(chan struct{}), done: make(chan struct{})}
	won := make(chan struct{})
	go func() {
		defer close(l.done)
		defer stopRun()
		for {
			err := e.m.Block(run, e.name, e.ttl, func(lctx context.Context, held *lock.Lock) error {
				l.ctx, l.cancel = context.WithCancelCause(lctx)
				l.term, l.held = held.Fence(), held
				close(won)
				select {
				case <-l.ctx.Done():
				case <-l.resign:
				}
				return nil
			}, lock.WithOwner(owner), lock.WithRefresh(), lock.WithTimeout(campaignWait), lock.WithMaxHold(e.maxHold))
			if errors.Is(err, lock.ErrNotAcquired) && run.Err() == nil && !l.leading() {
				continue // the wait's bound passed: wait again
			}
			l.err = err
			return
		}
	}()

	select {
	case <-won:
	case <-l.done:
		unhook()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("election %q: campaign: %w", e.name, context.Cause(ctx))
		}
		return nil, fmt.Errorf("election %q: campaign: %w", e.name, l.err)
	}
	if !unhook() {
		// ctx ended as the leadership began: the candidate has gone.
		_ = l.Resign(context.Background())
		return nil, fmt.Errorf("election %q: campaign: %w", e.name, context.Cause(ctx))
	}
	return l, nil
}

// Leadership is a won campaign.
type Leadership struct {
	value  string
	term   uint64
	held   *lock.Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
	resign chan struct{} // closed by Resign
	once   sync.Once
	done   chan struct{} // closed once the lock is released (or lost)
	err    error         // the lock's outcome, once done is closed
}

// ErrResigned is the cause of a leadership's Context after Resign.
var ErrResigned = errors.New("election: resigned")

// leading reports whether the campaign has won (set before won closes).
func (l *Leadership) leading() bool { return l.ctx != nil }

// Context is cancelled when the leadership ends: by Resign (cause
// ErrResigned), by the loss of the lease (a *lock.LostError, before the
// backend could hand the lease on; of reason lock.ErrLostMaxHold at the
// election's cap, WithMaxHold), or by the Manager's Close. Work done as
// leader runs on it.
func (l *Leadership) Context() context.Context { return l.ctx }

// Term is the leadership's fence: pass it to resources that must refuse
// an earlier leader's writes.
func (l *Leadership) Term() uint64 { return l.term }

// ExpiresAt is this process's estimate of when the lease ends unless it
// is refreshed (lock.Lock.ExpiresAt: it errs early, never late); the zero
// time once the leadership is over.
func (l *Leadership) ExpiresAt() time.Time { return l.held.ExpiresAt() }

// Value is what this leader campaigned with.
func (l *Leadership) Value() string { return l.value }

// Done is closed once the leadership is over at the backend: released
// after Resign, or lost.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Resign ends the leadership: its Context is cancelled first, then the
// lease is released so that the next candidate leads at once. It returns
// once the release is done or ctx ends. Resigning twice is harmless.
func (l *Leadership) Resign(ctx context.Context) error {
	l.cancel(ErrResigned)
	l.once.Do(func() { close(l.resign) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
