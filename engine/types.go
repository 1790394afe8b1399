package engine

import (
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Config configures an Engine. The zero value is a live engine on the
// system clock with no limits.
type Config struct {
	// Clock is the source of time of a live Engine; nil means
	// SystemClock(). A Replicated engine takes its time from the log.
	Clock Clock
	// MaxKeys caps the number of keys, where a semaphore or read/write
	// lock counts one per holder and per waiter; 0 (the default) and
	// drivers.Unlimited mean no cap. A new key, holder or shared waiter
	// beyond it is refused with an error matching drivers.ErrFull.
	MaxKeys int
	// MaxWaitersPerKey caps each key's queue; 0 (the default) and
	// drivers.Unlimited mean no cap.
	MaxWaitersPerKey int
	// MaxHoldersPerKey caps the holders of one semaphore or read/write
	// lock; 0 (the default) means drivers.MaxHolders, which no backend
	// exceeds, so it can only be lowered (drivers.Unlimited is refused).
	// A reader beyond it meets a busy key, as at a full semaphore: it is
	// refused as contention or waits its turn. A semaphore whose limit is
	// above it is refused with an error matching drivers.ErrInvalid.
	//
	// MaxKeys counts every holder and every waiter of a shared name as
	// one, so what the table holds stays bounded by MaxKeys and
	// MaxWaitersPerKey whatever its kinds.
	MaxHoldersPerKey int
}

// holderCap is the holder cap c sets.
func (c Config) holderCap() int {
	if c.MaxHoldersPerKey == 0 {
		return drivers.MaxHolders
	}
	return c.MaxHoldersPerKey
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxKeys < drivers.Unlimited {
		return invalid("MaxKeys", "must be positive, 0 (the default: no cap) or drivers.Unlimited")
	}
	if c.MaxWaitersPerKey < drivers.Unlimited {
		return invalid("MaxWaitersPerKey", "must be positive, 0 (the default: no cap) or drivers.Unlimited")
	}
	if c.MaxHoldersPerKey < 0 || c.MaxHoldersPerKey > drivers.MaxHolders {
		return invalid("MaxHoldersPerKey", fmt.Sprintf("must be between 1 and %d (drivers.MaxHolders), or 0 (the default: %[1]d)", drivers.MaxHolders))
	}
	return nil
}

// Grant describes a held lock.
type Grant struct {
	Key, Owner string
	// Fence grows with every new grant (acquire of a free or expired key,
	// or hand-off to a waiter); a refresh keeps it.
	Fence uint64
	// Deadline is when the grant ends, in unix nanoseconds of engine time.
	Deadline int64
}

// Info describes a key as the engine holds it.
type Info struct {
	Grant
	// Waiters is the number of owners queued for the key.
	Waiters int
	// Shared is set for a semaphore or read/write lock: every holder and
	// waiter (Grant is then its holder with the earliest deadline).
	Shared *Shared
	// Queue is a mutex's waiters in order (a shared name's are
	// Shared.Queue), so that a reader can say who waits for whom.
	Queue []QueuedWaiter
}

// Waiter is an owner queued for a key.
type Waiter struct{ Key, Owner string }

// Op is the kind of a replicated Command. The numbers are part of the
// replicated log format: never renumber or reuse them.
type Op uint8

// The replicated operations.
const (
	// OpAcquire uses Key, Owner, TTL, Now, Fence, Wait: v0.1.0's acquire
	// of one key's mutex, applied and answered as OpAcquireKeys of that
	// key and the zero Claim.
	OpAcquire Op = 1
	// OpRelease uses Key, Owner, Now, and Fence for a hand-off.
	OpRelease Op = 2
	// OpExtend uses Key, Owner, TTL, Now.
	OpExtend Op = 3
	// OpForceRelease uses Key, Now, and Fence for a hand-off.
	OpForceRelease Op = 4
	// OpExpire uses Key, Owner, ExpectFence, Now, and Fence for a hand-off.
	// It applies only if the key is still held by Owner with fence
	// ExpectFence and its deadline is <= engine time; otherwise it is a
	// no-op, so a stale expiry never removes a refreshed or newer lock.
	OpExpire Op = 5
	// OpCancelWait uses Key, Owner: it removes a queued waiter (no-op when
	// absent or already granted).
	OpCancelWait Op = 6
	// OpTick uses Now: it only advances engine time.
	OpTick Op = 7
	// 8 and 9 were acquire-shared and acquire-all, never in a release and
	// replaced by OpAcquireKeys: reserved, never reused (a node stops on
	// such an entry as on any unknown one).

	// OpAcquireKeys is the one acquire: it uses Keys (1 to
	// drivers.MaxMultiKeys, a single key being a set of one), Owner, TTL,
	// Claim (any: the zero Claim is a mutex), Now, Fence, Wait. Every key
	// or none, in one step; with Wait a busy key does not refuse: the
	// free keys are taken and Owner is queued FIFO for the busy ones in
	// the same step (Result.Queued), and those come as hand-offs.
	// Result.Grants has a grant per key in the order of Keys (a zero
	// Grant for a key queued for); Result.Grant is Grants[0] when OK, and
	// otherwise the holder in the way.
	OpAcquireKeys Op = 10
)

// String names the operation.
func (o Op) String() string {
	switch o {
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpExtend:
		return "extend"
	case OpForceRelease:
		return "force_release"
	case OpExpire:
		return "expire"
	case OpCancelWait:
		return "cancel_wait"
	case OpTick:
		return "tick"
	case OpAcquireKeys:
		return "acquire_keys"
	}
	return "unknown"
}

// Command is one replicated operation, as committed to the log.
type Command struct {
	Op         Op
	Key, Owner string
	TTL        time.Duration
	// Now is the time stamped by the leader, unix nanoseconds. Engine time
	// becomes max(engine time, Now) before the command applies.
	Now int64
	// Fence is the fence for a grant this command makes; it is used when
	// it is above every fence issued so far, else the counter plus one
	// is (0: always the counter plus one).
	Fence uint64
	// ExpectFence is the fence of the grant an OpExpire means to end.
	ExpectFence uint64
	// Wait makes an acquire of a busy key queue Owner FIFO (an owner
	// already queued is not queued twice).
	Wait bool
	// Claim is how an OpAcquireKeys holds its keys.
	Claim Claim
	// MaxHold caps the total hold time of each grant an OpAcquireKeys
	// makes, from Now or, for a waiter, from its hand-off (0: none).
	MaxHold time.Duration
	// Keys are the keys of an OpAcquireKeys (Key is then unused).
	Keys []string
}

// Result is the outcome of one Command.
type Result struct {
	// OK: acquired or refreshed, released, extended, removed (force release,
	// cancel wait), expired.
	OK bool
	// Queued: an acquire with Wait is now waiting in the queue.
	Queued bool
	// Grant is the grant after an acquire or OpExtend when OK, and the
	// holder's grant when not OK and the key is held.
	Grant Grant
	// Handoffs are the grants this command handed to waiters (release,
	// force release, expire, or an acquire that found the key expired
	// with waiters queued: they are served first; of a shared name also a
	// cancel-wait, which may let the waiters behind it in). A mutex hands
	// off at most one.
	Handoffs []Grant
	// Grants are an acquire's grants when OK (or Queued: the keys it
	// took, a zero Grant for each key it waits for), in the order of its
	// keys.
	Grants []Grant
	// Err is a per-command error (ErrFull, ErrInvalid...). It never fails
	// the rest of the batch.
	Err error
}

// Kind is what a name is while it is held (drivers.Kind).
type Kind = drivers.Kind

// The kinds of a name.
const (
	Mutex     = drivers.Mutex
	Semaphore = drivers.Semaphore
	RWLock    = drivers.RWLock
)

// Claim is how an acquire holds its name (drivers.Claim). The zero Claim
// is a mutex.
type Claim = drivers.Claim

// Shared describes the holders and waiters of a semaphore or read/write
// lock (Info.Shared).
type Shared struct {
	Kind  Kind
	Limit uint32
	// Holders are the grants, by fence; Writer marks the holder of a
	// read/write lock's write side.
	Holders []Grant
	Writer  bool
	// Queue is the waiters in order; Write marks a waiting writer.
	Queue []QueuedWaiter
}

// QueuedWaiter is one waiter of a shared name, in queue order.
type QueuedWaiter struct {
	Owner string
	Write bool
}
