package drivers

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Kind is what a name is while it is held: a mutex (the zero value), a
// semaphore of up to Limit holders, or a read/write lock. A name takes the
// kind of the acquire that creates it and keeps it until nobody holds or
// waits for it; an acquire of another kind, or of a semaphore with another
// limit, meanwhile is refused with an error matching ErrInvalid.
type Kind uint8

// The kinds of a name.
const (
	Mutex     Kind = 0
	Semaphore Kind = 1
	RWLock    Kind = 2
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Mutex:
		return "mutex"
	case Semaphore:
		return "semaphore"
	case RWLock:
		return "rwlock"
	}
	return "unknown"
}

// Claim is how an acquire holds its name. The zero Claim is a mutex.
type Claim struct {
	Kind Kind
	// Limit is a semaphore's number of holders at most (1 or more).
	Limit uint32
	// Write takes a read/write lock's exclusive side; false its shared
	// (read) side.
	Write bool
}

// String describes the claim: "mutex", "semaphore of 4", "read", "write".
func (c Claim) String() string {
	switch {
	case c.Kind == Semaphore:
		return "semaphore of " + strconv.FormatUint(uint64(c.Limit), 10)
	case c.Kind == RWLock && c.Write:
		return "write"
	case c.Kind == RWLock:
		return "read"
	}
	return c.Kind.String()
}

// Describe names what a key held with c is, for messages: "a mutex", "a
// semaphore of 4", "a read/write lock (rwlock)".
func (c Claim) Describe() string {
	switch c.Kind {
	case Mutex:
		return "a mutex"
	case Semaphore:
		return "a semaphore of " + strconv.FormatUint(uint64(c.Limit), 10)
	case RWLock:
		return "a read/write lock (rwlock)"
	}
	return "a key of unknown kind " + strconv.Itoa(int(c.Kind))
}

// AnyShared is what a backend says a key is held as when it can tell only
// that it is a semaphore or a read/write lock (a mutex acquire met one).
const AnyShared = "a semaphore or read/write lock"

// KindMismatch is the error of an acquire of key as asked while the key is
// held or waited for as heldAs (a Claim's Describe, or AnyShared). It
// matches ErrInvalid. A key takes a new kind or limit once nobody holds or
// waits for it, so nobody is ever beyond a limit.
func KindMismatch(key, heldAs string, asked Claim) error {
	return &InvalidError{Field: "kind", Reason: fmt.Sprintf(
		"%q is held as %s; this acquire is for %s (a new kind or limit takes effect once nobody holds or waits for the key)",
		key, heldAs, asked.Describe())}
}

// CheckShared reports, with an error matching ErrInvalid, a claim that is
// not a semaphore's (a limit of 1 to MaxHolders) or a read/write lock
// side's: the shared claims a Request may carry.
func (c Claim) CheckShared() error {
	switch {
	case c.Kind == Semaphore && c.Limit > MaxHolders && !c.Write:
		return &InvalidError{Field: "claim", Reason: fmt.Sprintf("a semaphore of %d is above the %d holders one key may have (drivers.MaxHolders)", c.Limit, MaxHolders)}
	case c.Kind == Semaphore && c.Limit >= 1 && !c.Write:
	case c.Kind == RWLock && c.Limit == 0:
	default:
		return &InvalidError{Field: "claim", Reason: fmt.Sprintf("%v is not a semaphore (limit 1 or more) or a read/write lock side", c)}
	}
	return nil
}

// InTheWay reports which holder a refused acquire of c is told of: the
// one whose grant, by ending, would let it in if nobody queued before
// it, so that the caller learns when it may get in at the latest. For a
// semaphore's slot or a read that is the grant that ends first (one
// leaving makes room; a writer is the only holder); for a write it is
// the grant that ends last (every holder must leave). last is true for
// the latter.
func (c Claim) InTheWay() (last bool) { return c.Kind == RWLock && c.Write }

// Holding describes who holds a name and who waits for it, as an
// Inspector reports it.
type Holding struct {
	// Claim is what the name is held as: Kind and, for a semaphore, Limit
	// (Write is unused).
	Claim Claim
	// Holders are the grants, by fence.
	Holders []Holder
	// Waiters are the queued owners in order, where the backend tells
	// them (WaiterCount counts them either way).
	Waiters     []Waiting
	WaiterCount int
}

// Holder is one grant of a name.
type Holder struct {
	Owner string
	Fence uint64
	// Remaining is how long the grant has left as the backend sees it.
	Remaining time.Duration
	// Write marks the holder of a read/write lock's write side.
	Write bool
}

// Waiting is one queued owner of a name.
type Waiting struct {
	Owner string
	Write bool
}

// Inspector is the optional capability of describing a name: its kind,
// every holder and, where the backend keeps them in order, its waiters.
// ok is false when nobody holds the name.
//
// Fallback when a driver lacks it: Exists, which says only whether the
// name is held.
type Inspector interface {
	Inspect(ctx context.Context, key string) (h Holding, ok bool, err error)
}
