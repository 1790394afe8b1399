package drivers

import (
	"context"
	"time"
)

// MaxMultiKeys is the most keys one AcquireAll takes.
const MaxMultiKeys = 64

// MultiAcquirer is the optional capability of taking several keys in one
// atomic step at the backend: all of them, or none. No other caller ever
// sees some of the keys taken and the others not.
//
// AcquireAll takes every key of keys for owner for ttl, refreshing (same
// fence, new deadline) those owner holds already, and returns their
// fences in the order of keys. When another owner holds any of them it
// takes none and returns ok false with a nil error; busy names that key
// and tells what the backend knows of its holder. keys are distinct, and
// there are at most MaxMultiKeys of them.
//
// An error matching ErrUnsupported says the backend cannot take these keys
// in one step (Redis Cluster keys in different hash slots, a cluster
// member on an older release): nothing was taken, and the caller may take
// them one at a time instead.
//
// Fallback when a driver lacks it: the Manager takes the keys one at a
// time, in sorted order.
type MultiAcquirer interface {
	AcquireAll(ctx context.Context, keys []string, owner string, ttl time.Duration) (fences []uint64, ok bool, busy Busy, err error)
}

// Busy is the key that kept an AcquireAll from taking its keys, and what
// the backend tells of that key's holder.
type Busy struct {
	Key string
	HeldBy
}

// MultiWaiter is the optional capability of waiting for several keys
// together, first come first served for the whole set.
//
// AcquireAllWait takes the keys that are free and queues owner for the
// busy ones, in one atomic step at the backend, and returns once the last
// of them is granted, with every fence in the order of keys (each TTL
// counted from the last grant at the latest). Every key's queue sees the
// requests in the order they came, so a request never overtakes an
// earlier one on any key, and requests naming the same keys in any order
// never wait for each other in a circle. When ctx ends first it returns
// an error wrapping ctx.Err(), which may carry a *NotAcquiredError for
// the key still waited for; it must leave no key held (as Waiter).
//
// Fallback when a driver lacks it: the Manager takes the keys with
// AcquireAll when they are all free, and otherwise waits for them one at
// a time, in sorted order.
type MultiWaiter interface {
	AcquireAllWait(ctx context.Context, keys []string, owner string, ttl time.Duration, opts WaitOptions) (fences []uint64, err error)
}

// ChangeWatcher is the optional capability of telling when a key may have
// changed hands (a grant, a release, an expiry), so that an observer
// reads it again then rather than on a timer.
//
// Changed returns a channel closed at the next change the backend sees of
// key, or of any key for a backend that cannot tell them apart, and stop,
// to call once when the caller no longer watches. The caller takes it
// before reading the key, so that a change after the read is not missed,
// and takes a new one after each change. A backend may miss some changes
// (SQLite does not see a lease run out until something is written): the
// observer still reads on a timer, less often.
//
// Fallback when a driver lacks it: the observer reads on its timer only.
type ChangeWatcher interface {
	Changed(key string) (changed <-chan struct{}, stop func())
}
