package rules

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func TestState_AdmitsFromTheHeadWhileTheyFit(t *testing.T) {
	read, write, sem2 := drivers.Claim{Kind: drivers.RWLock}, drivers.Claim{Kind: drivers.RWLock, Write: true}, drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	rows := func(cs ...drivers.Claim) []Row {
		var rs []Row
		for i, c := range cs {
			rs = append(rs, Row{Owner: string(rune('a' + i)), Claim: c})
		}
		return rs
	}
	for _, tc := range []struct {
		name           string
		grants, places []Row
		want           int
	}{
		{"a free mutex lets its first waiter in", nil, rows(drivers.Claim{}, drivers.Claim{}), 1},
		{"a held mutex lets nobody in", rows(drivers.Claim{}), rows(drivers.Claim{}), 0},
		{"a semaphore fills its slots", rows(sem2), rows(sem2, sem2, sem2), 1},
		{"readers come in together up to a writer", nil, rows(read, read, write, read), 2},
		{"a waiting writer stops the readers behind it", rows(read), rows(write, read), 0},
		{"a writer waits for the readers", rows(read, read), rows(write), 0},
	} {
		if got := (State{Grants: tc.grants, Places: tc.places}).Admitted(); got != tc.want {
			t.Errorf("%s: %d let in, want %d", tc.name, got, tc.want)
		}
	}
}

// A cap shorter than a microsecond is still a cap: the tables keep whole
// microseconds, where 0 means none.
func TestMaxHoldUS_NeverRoundsACapToNone(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want int64
	}{{0, 0}, {-time.Second, 0}, {500 * time.Nanosecond, 1}, {time.Microsecond, 1}, {1500 * time.Microsecond, 1500}} {
		if got := MaxHoldUS(c.in); got != c.want {
			t.Errorf("MaxHoldUS(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}
