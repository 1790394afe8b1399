package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

func newTestMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := New(Sources{ID: "n1", Registry: prometheus.NewRegistry(),
		Waiters: func() int { return 0 }, Keys: func() int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func holds(t *testing.T, m *Metrics) uint64 {
	t.Helper()
	var d dto.Metric
	if err := m.holdTime.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

// Past timedAll held keys the hold-time histogram times a sample of the
// grants, so that its map does not grow with the table (79 MB at 1 M held
// keys, timing every one), and still observes the sampled ones.
func TestMetrics_HoldTimeSamplesALargeTable(t *testing.T) {
	m := newTestMetrics(t)
	const n = 4 * timedAll
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		g := engine.Grant{Key: key, Fence: uint64(i + 1)}
		m.ObserveApplied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpAcquire, Key: key, Now: 1},
			Result: engine.Result{OK: true, Grant: g, Grants: []engine.Grant{g}}})
	}
	if max := timedAll + n/timedEvery + 1; len(m.grants) > max {
		t.Fatalf("%d held keys timed, want at most %d", len(m.grants), max)
	}
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		m.ObserveApplied(fsm.Applied{Entry: fsm.Entry{Op: engine.OpRelease, Key: key, Now: 2}, Result: engine.Result{OK: true}})
	}
	if got, want := holds(t, m), uint64(timedAll+(n-timedAll)/timedEvery); got < want || got > want+1 {
		t.Fatalf("%d holds observed, want %d: every one of the first %d, then one in %d", got, want, timedAll, timedEvery)
	}
	if len(m.grants) != 0 {
		t.Fatalf("%d keys still timed after every release", len(m.grants))
	}
}
