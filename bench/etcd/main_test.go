package main

import (
	"testing"
	"time"

	"github.com/zerotal/lock/bench/load"
)

func perSecond(cycles int) measurement {
	return measurement{Result: load.Result{Cycles: cycles, Elapsed: time.Second}}
}

func TestChecks_RatioAndP50WithMargins(t *testing.T) {
	lc := perSecond(300)
	lc.Acquire = []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	cs := checks(perSecond(20), lc, target{ratio: 10, p50: 4 * time.Millisecond})
	if len(cs) != 2 {
		t.Fatalf("%d checks, want ratio and p50", len(cs))
	}
	if !cs[0].met || cs[0].measured != "15.00x" || cs[0].margin < 0.49 || cs[0].margin > 0.51 {
		t.Errorf("ratio check %+v, want met with margin +50%%", cs[0])
	}
	if !cs[1].met || cs[1].margin < 0.49 || cs[1].margin > 0.51 {
		t.Errorf("p50 check %+v, want met (2ms of 4ms) with margin +50%%", cs[1])
	}
	cs = checks(perSecond(100), perSecond(150), target{ratio: 2})
	if len(cs) != 1 || cs[0].met || cs[0].margin > -0.24 || cs[0].margin < -0.26 {
		t.Errorf("checks = %+v, want one missed ratio with margin -25%%", cs)
	}
	cs = checks(perSecond(100), perSecond(0), target{ratio: 1, p50: time.Millisecond})
	if cs[0].met || cs[1].met {
		t.Errorf("no lockcluster cycles met a target: %+v", cs)
	}
}

func TestMeasurement_AddMergesSlices(t *testing.T) {
	a := measurement{Result: load.Result{Cycles: 2, Elapsed: time.Second, Acquire: []time.Duration{3, 5}},
		client: 10, members: []time.Duration{1, 2, 3}}
	b := measurement{Result: load.Result{Cycles: 1, Elapsed: time.Second, Acquire: []time.Duration{4}},
		client: 5, members: []time.Duration{1, 1, 1}}
	var m measurement
	m.add(a)
	m.add(b)
	if m.Cycles != 3 || m.Elapsed != 2*time.Second || m.PerSecond() != 1.5 {
		t.Fatalf("merged %d cycles in %s", m.Cycles, m.Elapsed)
	}
	if m.client != 15 || m.servers() != 9 || m.members[2] != 4 {
		t.Fatalf("merged CPU client %d, members %v", m.client, m.members)
	}
	if got := load.Percentile(m.Acquire, 50); got != 4 {
		t.Fatalf("p50 of merged latencies %d, want 4", got)
	}
}
