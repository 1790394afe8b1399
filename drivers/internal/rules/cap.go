package rules

import "time"

// Cap is a grant's cap on total hold time (drivers.Request.MaxHold) as a
// moment in Unix microseconds, 0 for none: every deadline written for the
// grant stays within it.
type Cap int64

// CapAt is the cap of a grant made at nowUS for a MaxHold of maxHoldUS
// microseconds (0: none).
func CapAt(nowUS, maxHoldUS int64) Cap {
	if maxHoldUS <= 0 {
		return 0
	}
	return Cap(nowUS + maxHoldUS)
}

// Bound is deadlineUS, or the cap when that comes first.
func (c Cap) Bound(deadlineUS int64) int64 {
	if c > 0 && int64(c) < deadlineUS {
		return int64(c)
	}
	return deadlineUS
}

// Arg is the cap as a statement's parameter: NULL for none, so that a
// grant without a cap writes no more than before caps.
func (c Cap) Arg() any {
	if c <= 0 {
		return nil
	}
	return int64(c)
}

// MaxHoldUS is a request's MaxHold in whole microseconds, as the tables
// keep it: 0 for none, else at least one, so that a cap shorter than a
// microsecond is never taken for no cap.
func MaxHoldUS(maxHold time.Duration) int64 {
	if maxHold <= 0 {
		return 0
	}
	return max(maxHold.Microseconds(), 1)
}
