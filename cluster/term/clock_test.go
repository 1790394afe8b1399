package term

import (
	"testing"
	"time"
)

// The clock stands still for the grace, then runs with the node's
// monotonic clock; it never goes back.
func TestClock_StandsStillForTheGraceThenRuns(t *testing.T) {
	var elapsed time.Duration
	c := NewClock(1_000, 3*time.Second, func(time.Time) time.Duration { return elapsed })
	for _, step := range []struct {
		elapsed time.Duration
		now     int64
		until   time.Duration
	}{
		{0, 1_000, 3 * time.Second},
		{2 * time.Second, 1_000, time.Second},
		{3 * time.Second, 1_000, 0},
		{3*time.Second + 250, 1_250, 0},
		{10 * time.Second, 1_000 + int64(7*time.Second), 0},
	} {
		elapsed = step.elapsed
		if got := c.Now(); got != step.now {
			t.Errorf("after %v: Now = %d, want %d", step.elapsed, got, step.now)
		}
		if got := c.UntilRunning(); got != step.until {
			t.Errorf("after %v: UntilRunning = %v, want %v", step.elapsed, got, step.until)
		}
	}
	if c.Origin() != 1_000 || c.Grace() != 3*time.Second {
		t.Fatalf("Origin, Grace = %d, %v", c.Origin(), c.Grace())
	}
}
