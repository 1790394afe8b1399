package poll

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil_ReturnsOnceCondHolds(t *testing.T) {
	var calls atomic.Int32
	Until(t, 5*time.Second, "the third call", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("cond called %d times, want 3", got)
	}
}

func TestWait_FalseAfterTimeoutWithAFinalCheck(t *testing.T) {
	start := time.Now()
	var calls atomic.Int32
	if Wait(20*time.Millisecond, func() bool { calls.Add(1); return false }) {
		t.Fatal("Wait reported true for a condition that never holds")
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its 20ms timeout", el)
	}
	if calls.Load() < 2 {
		t.Fatalf("cond called %d times, want a first and a final check", calls.Load())
	}
}

// recorder is a testing.TB whose Fatalf records the message and stops
// the goroutine, as testing.T's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func TestUntil_FailsNamingWhatOnTimeout(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				t.Fatalf("Until did not fail the test (recovered %v)", p)
			}
		}()
		Until(r, 10*time.Millisecond, "the impossible", func() bool { return false })
	}()
	if !strings.Contains(r.msg, "the impossible") || !strings.Contains(r.msg, "10ms") {
		t.Fatalf("failure message %q does not name what was awaited and the timeout", r.msg)
	}
}
