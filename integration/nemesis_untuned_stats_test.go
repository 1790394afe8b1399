package integration

import (
	"math"
	"testing"
	"time"
)

// TestUntunedStats_RatioPerFaultKind checks the report's arithmetic on
// hand-made successes: 10 calls/s outside faults; 2 calls in a 1s pause
// (ratio 0.2, first success 500ms in); none in a 2s partition.
func TestUntunedStats_RatioPerFaultKind(t *testing.T) {
	u := &untunedLoad{done: make(chan struct{})}
	close(u.done)
	for i := range 40 { // 0s..4s: 10 per second
		u.oks = append(u.oks, time.Duration(i)*100*time.Millisecond+time.Millisecond)
	}
	u.oks = append(u.oks, 4500*time.Millisecond, 4800*time.Millisecond) // during the pause
	for i := range 20 {                                                 // 7s..9s
		u.oks = append(u.oks, 7*time.Second+time.Duration(i)*100*time.Millisecond+time.Millisecond)
	}
	faults := []faultRecord{
		{kind: faultPauseLeader, start: 4 * time.Second, end: 5 * time.Second},
		{kind: faultPartitionAll, start: 5 * time.Second, end: 7 * time.Second},
	}
	s := u.stats(faults, 9*time.Second)
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if !near(s.Baseline, 10) {
		t.Errorf("baseline %v calls/s, want 10", s.Baseline)
	}
	if !near(s.During[faultPauseLeader], 2) || !near(s.Ratio[faultPauseLeader], 0.2) {
		t.Errorf("pause: %v calls/s ratio %v, want 2 and 0.2", s.During[faultPauseLeader], s.Ratio[faultPauseLeader])
	}
	if s.During[faultPartitionAll] != 0 || s.Ratio[faultPartitionAll] != 0 {
		t.Errorf("partition: %v calls/s ratio %v, want 0", s.During[faultPartitionAll], s.Ratio[faultPartitionAll])
	}
	if got := s.FirstOK[faultPauseLeader].Max; got != 500 {
		t.Errorf("first ok after the pause began: %d ms, want 500", got)
	}
	if got := s.FirstOK[faultPartitionAll].Max; got != 2001 {
		t.Errorf("first ok after the partition began: %d ms, want 2001", got)
	}
}
