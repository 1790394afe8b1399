package drivers

import "time"

// Request is one acquire: every claim a caller can make is this data, and
// Driver.Acquire is the one method that serves it. A mutex of one key, a
// semaphore's slot, a read or write side, several keys at once and a wait
// for any of them are all a Request; a driver serves those its
// Capabilities declare and answers any other with an error matching
// ErrUnsupported, having taken nothing.
type Request struct {
	// Keys are the names to take, all of them or none: one for a single
	// lock, or up to MaxMultiKeys distinct names for a set, taken in one
	// atomic step (no other caller ever sees some taken and the others
	// not). The Manager sorts nothing: Grant.Fences follow this order.
	Keys []string
	// Owner is who takes them. A key owner already holds is refreshed
	// (new deadline, same fence).
	Owner string
	// TTL is how long each grant lasts from the moment it is made.
	TTL time.Duration
	// Claim is how each key is held; the zero Claim is a mutex.
	Claim Claim
	// MaxHold, when not zero, caps the total time each grant can be held:
	// a grant made at t (on the backend's clock) lasts at most until
	// t+MaxHold, however often it is refreshed. The backend enforces it
	// itself: a new grant's deadline is min(t+TTL, t+MaxHold); a refresh
	// (Extend, or an Acquire by the owner of a key it holds) sets
	// min(now+TTL, t+MaxHold) and keeps the cap of the first grant, so a
	// wedged holder's refresh loop cannot outlast it; at t+MaxHold the
	// grant ends like an expiry and the key passes to the next waiter. A
	// waiter's cap counts from the moment it is granted. Drivers that
	// declare Capabilities.MaxHold serve it; 0 means no cap.
	MaxHold time.Duration
	// Wait queues Owner first come, first served for what it cannot take
	// now, and makes Acquire return once every key is granted, or when
	// ctx ends. Without it Acquire answers at once.
	//
	// A wait that ctx ends returns an error wrapping ctx.Err(); when the
	// backend's last attempt failed or got no answer the error also
	// matches ErrUnavailable (never passing an outage off as contention),
	// and it may carry a *NotAcquiredError naming the key still waited
	// for and its holder. It leaves no key held: a grant made in the same
	// instant as ctx ended is released by the driver or left to expire,
	// and never reported as held; with OwnerReused it is never released
	// once Acquire has returned.
	Wait bool
	// WaitOptions tunes a wait (RetryDelay, OwnerReused).
	WaitOptions
	// Fences, when it has room for a fence per key, is where a driver may
	// put Grant.Fences instead of allocating them: the caller's own array,
	// which spares an allocation per acquire. A driver may ignore it.
	Fences []uint64
}

// Key is the request's first key: the one key of a single lock.
func (r Request) Key() string {
	if len(r.Keys) == 0 {
		return ""
	}
	return r.Keys[0]
}

// Grant is the answer to a Request that reached the backend.
type Grant struct {
	// Acquired says that every key is held by the request's owner.
	Acquired bool
	// Fences are the grants' fences in the order of Request.Keys when
	// Acquired. A fence grows with every new grant of a key and is kept by
	// a refresh; 0 means the driver has no fencing.
	Fences []uint64
	// Busy, when not Acquired, names the key in the way (the first busy
	// key of a set) and what the backend tells of its holder: the one
	// whose grant, by ending, would let the request in were nobody queued
	// before it (Claim.InTheWay). Zero values when it cannot tell.
	Busy Busy
}

// Fence is the fence of the first key (the one key of a single lock).
func (g Grant) Fence() uint64 {
	if len(g.Fences) == 0 {
		return 0
	}
	return g.Fences[0]
}

// Capabilities declares which requests a driver serves itself; for each
// one it does not, the Manager has a fallback, named beside the field.
// The zero Capabilities is a driver of single-key mutexes that answers at
// once.
type Capabilities struct {
	// Wait: the driver serves Request.Wait for one key, told (or polling
	// cleverly) when the key frees and handing it to waiters in their
	// order of arrival. Fallback: the Manager sends the request without
	// Wait every WaitOptions.RetryDelay until it is granted or its timeout
	// passes.
	Wait bool
	// InstantAcquire: an acquire without Wait costs no I/O and never
	// overtakes a queued waiter (a key with waiters is never free, since
	// a release or expiry hands it on at once). The Manager then tries
	// once without Wait before it sets up a timed wait. The memory driver
	// is one; a driver over a network is not, since the extra round trip
	// on a busy key costs more than it saves. Fallback: a waiting call
	// goes straight to the wait.
	InstantAcquire bool
	// Shared: claims other than a mutex (semaphores, read/write locks),
	// with the rules of Claim: every grant has its own owner and fence;
	// an acquire is granted at once only when nobody waits and it fits;
	// a waiting writer stops new readers. Release, Extend, ForceRelease
	// and Exists apply to a shared name's grants by owner as to a
	// mutex's. Fallback: the Manager refuses shared claims with an error
	// matching ErrUnsupported.
	Shared bool
	// Sets: several keys in one atomic step, all or none. A driver may
	// still answer a set it cannot take in one step (Redis Cluster keys in
	// different hash slots, a cluster member of an older release) with
	// ErrUnsupported, having taken nothing. Fallback: the Manager takes
	// the keys one at a time, in sorted order.
	Sets bool
	// SetWait: Wait for several keys together, first come first served
	// for the whole set: the free keys are taken and the busy ones queued
	// for in one step, so a request never overtakes an earlier one on any
	// key, and requests naming the same keys in any order never wait for
	// each other in a circle. Fallback: the Manager takes the set in one
	// step when every key is free (Sets), and otherwise waits for the keys
	// one at a time, in sorted order.
	SetWait bool
	// MaxHold: the backend enforces Request.MaxHold itself (it records
	// each grant's cap and no refresh goes past it). Fallback: none; the
	// Manager refuses a request with a cap with an error matching
	// ErrUnsupported, since a cap the holder alone enforces is no cap
	// against a wedged holder.
	MaxHold bool
}
