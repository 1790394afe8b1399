// Package poll waits in tests for a condition that becomes true
// asynchronously: a lock handed over, a leader elected, a process up.
package poll

import (
	"testing"
	"time"
)

// Backoff bounds: the first re-check comes after MinInterval, each later
// one after twice the previous interval, never more than MaxInterval.
const (
	MinInterval = time.Millisecond
	MaxInterval = 50 * time.Millisecond
)

// Until calls cond until it returns true, sleeping a short, growing
// interval between calls (see MinInterval and MaxInterval). If cond is
// still false once timeout has passed it fails t with a message naming
// what was awaited. cond is always called at least once, and once more
// after the deadline, so a condition that became true during the last
// interval is not reported as a timeout.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Wait is Until without a test: it reports whether cond returned true
// before timeout passed.
func Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	interval := MinInterval
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(interval, left))
		interval = min(2*interval, MaxInterval)
	}
}
