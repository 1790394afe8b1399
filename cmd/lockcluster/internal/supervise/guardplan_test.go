package supervise

import (
	"testing"
	"time"
)

// The guard's rule, step by step: each step is something run tells (or
// its end) or a tick at a time, with what is due then. Times are in ms
// from an arbitrary start; grace 400ms, margin 200ms, so a lease that
// nobody extends gets SIGTERM 500ms before its end (grace+margin, less a
// quarter of the grace) and SIGKILL 200ms before it.
func TestGuardPlan(t *testing.T) {
	const ms = int64(time.Millisecond)
	type step struct {
		lease, runStops int64 // told by run (0: not this)
		ended           bool  // run's pipe ended
		tick            int64 // a tick at this time (0: none)
		term, kill      bool  // what is due
		next            int64 // the plan's next time after the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"nothing before a lease is told", []step{
			{tick: 100, next: 0},
		}},
		{"a lease renewed in time is never acted on", []step{
			{lease: 1000, next: 500},
			{tick: 499, next: 500},
			{lease: 1500, next: 1000},
			{tick: 999, next: 1000},
		}},
		{"a lease not renewed: SIGTERM at end-500ms, SIGKILL at end-200ms", []step{
			{lease: 1000, next: 500},
			{tick: 500, term: true, next: 800},
			{tick: 700, next: 800},
			{lease: 5000, next: 800}, // a later renewal does not take the stop back
			{tick: 800, kill: true, next: 800},
		}},
		{"woken late (a thawed freezer): SIGTERM and SIGKILL at once", []step{
			{lease: 1000, next: 500},
			{tick: 3000, term: true, kill: true, next: 800},
		}},
		{"run stops the group itself: no SIGTERM of the guard's, SIGKILL at run's time", []step{
			{lease: 1000, next: 500},
			{runStops: 700, next: 700},
			{tick: 600, next: 700},
			{tick: 700, kill: true, next: 700},
		}},
		{"run ends: SIGTERM now, SIGKILL after the grace", []step{
			{lease: 5000, next: 4500},
			{ended: true, tick: 1000, term: true, next: 1400},
			{tick: 1400, kill: true, next: 1400},
		}},
		{"run ends near the lease's end: SIGKILL still margin before it", []step{
			{lease: 1000, next: 500},
			{ended: true, tick: 500, term: true, next: 800}, // not 500+400
		}},
		{"run ends during its own stop: no second SIGTERM", []step{
			{lease: 1000, next: 500},
			{runStops: 600, next: 600},
			{ended: true, tick: 300, next: 600},
			{tick: 600, kill: true, next: 600},
		}},
		{"run ends before telling a lease: SIGTERM now, SIGKILL after the grace", []step{
			{ended: true, tick: 100, term: true, next: 500},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := guardPlan{grace: 400 * time.Millisecond, margin: 200 * time.Millisecond}
			for i, s := range tc.steps {
				var term, kill bool
				switch {
				case s.lease != 0:
					p.leaseEnds(s.lease * ms)
				case s.runStops != 0:
					p.runStops(s.runStops * ms)
				case s.ended:
					term = p.runEnded(s.tick * ms)
				default:
					term, kill = p.tick(s.tick * ms)
				}
				if term != s.term || kill != s.kill {
					t.Fatalf("step %d: term %v, kill %v; want %v, %v", i, term, kill, s.term, s.kill)
				}
				if got := p.next() / ms; got != s.next {
					t.Fatalf("step %d: next at %dms; want %dms", i, got, s.next)
				}
			}
		})
	}
}
