package fence

import (
	"errors"
	"fmt"
	"math"
)

var (
	// ErrStale: the caller's fence is below the highest fence the resource
	// has seen, so a newer holder of the lock has been there since the
	// caller was granted it. The write was not made. A *StaleError
	// carries the details and matches it.
	ErrStale = errors.New("fence: stale")

	// ErrInvalid: the resource name or the fence cannot be checked (an
	// empty name, fence 0, a fence above MaxFence, a malformed header).
	ErrInvalid = errors.New("fence: invalid")
)

// MaxFence is the largest fence a guard records: the SQL column is a
// signed 64-bit integer on every database. Every backend's fences stay
// far below it (the largest, Redis's, are microseconds since 1970).
const MaxFence = math.MaxInt64

// StaleError is the refusal of a write whose fence is below the highest
// the resource has seen. errors.Is(err, ErrStale) holds.
type StaleError struct {
	Resource string // the resource the write was for
	Fence    uint64 // the caller's fence
	Highest  uint64 // the highest fence the resource had seen
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale: fence %d for %q is below %d, the highest seen: a newer holder has written since", e.Fence, e.Resource, e.Highest)
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// validate refuses what no guard can check: an empty resource, fence 0
// (the fence of a lock that is not held) and a fence above MaxFence.
func validate(resource string, fence uint64) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: the resource name is empty", ErrInvalid)
	case fence == 0:
		return fmt.Errorf("%w: fence 0 for %q: a held lock's fence is at least 1", ErrInvalid, resource)
	case fence > MaxFence:
		return fmt.Errorf("%w: fence %d for %q is above %d", ErrInvalid, fence, resource, uint64(MaxFence))
	}
	return nil
}
