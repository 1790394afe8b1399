package httpapi

import "time"

// SetForwardClock sets the clock forwarded proofs are made and checked
// by; nil: time.Now.
func SetForwardClock(now func() time.Time) {
	if now == nil {
		forwardNow.Store(nil)
		return
	}
	forwardNow.Store(&now)
}
