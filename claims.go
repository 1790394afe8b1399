package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Semaphore makes the call take one of n slots of the key: up to n holders
// at once (1 <= n <= drivers.MaxHolders, the most holders one key has on
// any backend).
func Semaphore(n int) Option {
	if n < 1 || n > drivers.MaxHolders {
		// No claim: claimOf reports n, which d carries.
		return Option{kind: optClaim, d: time.Duration(n)}
	}
	return Option{kind: optClaim, claim: drivers.Claim{Kind: drivers.Semaphore, Limit: uint32(n)}}
}

// Read makes the call take the shared side of a read/write lock: any
// number of readers hold the key at once, never beside a writer.
func Read() Option {
	return Option{kind: optClaim, claim: drivers.Claim{Kind: drivers.RWLock}}
}

// Write makes the call take the exclusive side of a read/write lock: one
// writer, alone.
func Write() Option {
	return Option{kind: optClaim, claim: drivers.Claim{Kind: drivers.RWLock, Write: true}}
}

// oneClaim collects the claim options of one call: a call holds its key
// one way, so two different claims are an error (the last one would win
// without a word: Read() with Write() took a write lock), while the same
// claim given twice says one thing.
type oneClaim struct {
	c   drivers.Claim
	set bool
}

// add takes the claim option opt.
func (o *oneClaim) add(opt Option) error {
	c, err := claimOf(opt)
	if err != nil {
		return err
	}
	if o.set && c != o.c {
		return &InvalidError{Field: "claim", Reason: fmt.Sprintf(
			"%s and %s given together: a call holds its key one way, so give one of Semaphore(n), Read() or Write()", o.c, c)}
	}
	o.c, o.set = c, true
	return nil
}

// makeOptions reads Make's options, which may only be Semaphore, Read or
// Write (the claim) and WithMaxHold (the cap of every grant the handle
// takes).
func makeOptions(opts []Option) (drivers.Claim, time.Duration, error) {
	var one oneClaim
	var maxHold time.Duration
	for _, opt := range opts {
		switch opt.kind {
		case optNone:
		case optClaim:
			if err := one.add(opt); err != nil {
				return drivers.Claim{}, 0, err
			}
		case optMaxHold:
			if err := validateMaxHold(opt.d); err != nil {
				return drivers.Claim{}, 0, err
			}
			maxHold = opt.d
		default:
			return drivers.Claim{}, 0, &InvalidError{Field: "option", Reason: "Make takes only Semaphore, Read, Write or WithMaxHold; give the others to Lock.Block"}
		}
	}
	return one.c, maxHold, nil
}

// claimOf returns the claim opt names, or an *InvalidError.
func claimOf(opt Option) (drivers.Claim, error) {
	if opt.claim == (drivers.Claim{}) {
		return drivers.Claim{}, &InvalidError{Field: "semaphore", Reason: fmt.Sprintf("n must be between 1 and %d (drivers.MaxHolders), got %d", drivers.MaxHolders, int64(opt.d))}
	}
	return opt.claim, nil
}

// checkClaim refuses a claim the driver cannot serve.
func (m *Manager) checkClaim(c drivers.Claim) error {
	if c != (drivers.Claim{}) && !m.caps.Shared {
		return fmt.Errorf("%w: the %T driver has no semaphores or read/write locks (drivers.Capabilities.Shared)", ErrUnsupported, m.driver)
	}
	return nil
}

// checkMaxHold refuses a cap the driver cannot enforce: a cap only the
// holder kept would not stop a wedged holder, so there is no fallback.
func (m *Manager) checkMaxHold(d time.Duration) error {
	if d != 0 && !m.caps.MaxHold {
		return fmt.Errorf("%w: the %T driver cannot enforce a cap on total hold time (drivers.Capabilities.MaxHold)", ErrUnsupported, m.driver)
	}
	return nil
}

// request is the one acquire of l's key for owner, as l's claim says. Its
// keys and the room for its fence are the handle's own (l.op serialises
// the calls that use them), so that an acquire allocates no slice.
func (l *Lock) request(owner string) drivers.Request {
	return drivers.Request{Keys: l.keys[:], Owner: owner, TTL: l.ttl, Claim: l.claim, MaxHold: l.maxHold, Fences: l.fences[:0]}
}

// acquireAt makes one acquire of l's key for owner, without waiting; when
// another owner holds it, held is what the driver tells of it.
func (l *Lock) acquireAt(ctx context.Context, owner string) (fence uint64, ok bool, held drivers.HeldBy, err error) {
	g, err := l.m.driver.Acquire(ctx, l.request(owner))
	return g.Fence(), g.Acquired, g.Busy.HeldBy, err
}
