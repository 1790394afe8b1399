package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zerotal/lock/bench/cpu"
	"github.com/zerotal/lock/bench/load"
)

// locker is one system under test.
type locker interface {
	// newWorker returns the per-worker handle (etcd: a session).
	newWorker(ctx context.Context) (workerLocker, error)
	// members are the server processes, whose CPU time is measured.
	members() []*proc
}

// workerLocker does one worker's cycles.
type workerLocker interface {
	// acquire waits until key is granted and returns its release.
	acquire(ctx context.Context, key string) (release func(context.Context) error, err error)
	close()
}

// scenario is one load shape.
type scenario struct {
	name    string
	workers int
	keyFor  func(worker int) string
}

var scenarios = []scenario{
	{"spread", 32, func(w int) string { return fmt.Sprintf("spread-%d", w) }},
	{"hot", 8, func(int) string { return "hot" }},
	{"serial", 1, func(int) string { return "serial" }},
}

// measurement is what one or more runs of a scenario on one system
// measured: the cycles and their latencies, and the CPU time used over
// the measured time by this process (the clients) and by each member.
type measurement struct {
	load.Result
	client  time.Duration
	members []time.Duration
	// cpuErr is why the CPU figures are incomplete (a member exited, no
	// /proc); nil: they are whole.
	cpuErr error
}

// cpuPerCycle is d per counted cycle, in µs.
func (m measurement) cpuPerCycle(d time.Duration) float64 {
	if m.Cycles == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(m.Cycles)
}

// servers is the CPU time of every member together.
func (m measurement) servers() time.Duration {
	var sum time.Duration
	for _, d := range m.members {
		sum += d
	}
	return sum
}

// add merges b, a later slice of the same scenario on the same system.
func (m *measurement) add(b measurement) {
	m.Cycles += b.Cycles
	m.Errors += b.Errors
	if m.FirstErr == nil {
		m.FirstErr = b.FirstErr
	}
	m.Elapsed += b.Elapsed
	m.Acquire = append(m.Acquire, b.Acquire...)
	m.Release = append(m.Release, b.Release...)
	slices.Sort(m.Acquire)
	slices.Sort(m.Release)
	m.client += b.client
	if m.members == nil {
		m.members = make([]time.Duration, len(b.members))
	}
	for i, d := range b.members {
		m.members[i] += d
	}
	if m.cpuErr == nil {
		m.cpuErr = b.cpuErr
	}
}

// cpuReading is the CPU time of this process and of each member at one
// instant.
type cpuReading struct {
	client  time.Duration
	members []time.Duration
	err     error
}

func readCPU(ps []*proc) cpuReading {
	var r cpuReading
	r.client, r.err = cpu.Self()
	r.members = make([]time.Duration, len(ps))
	for i, p := range ps {
		d, err := cpu.Process(p.cmd.Process.Pid)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("%s: %w", p.name, err)
		}
		r.members[i] = d
	}
	return r
}

// run drives sc on l for warmup+duration and records the cycles that
// started after the warm-up and ended before the end (load.Run), and the
// CPU time used in between. Every loop is bounded by the deadline.
func run(ctx context.Context, l locker, sc scenario, warmup, duration time.Duration) (measurement, error) {
	ws := make([]workerLocker, sc.workers)
	for i := range ws {
		w, err := l.newWorker(ctx)
		if err != nil {
			for _, w := range ws[:i] {
				w.close()
			}
			return measurement{}, err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	var before, after cpuReading
	began := false
	o := load.Options{Workers: sc.workers, Warmup: warmup, Duration: duration,
		Begin: func() { began, before = true, readCPU(l.members()) },
		End:   func() { after = readCPU(l.members()) },
	}
	r := load.Run(ctx, o, func(ctx context.Context, i int) (func(context.Context) error, error) {
		return ws[i].acquire(ctx, sc.keyFor(i))
	})
	m := measurement{Result: r, members: make([]time.Duration, len(l.members()))}
	switch {
	case !began:
		m.cpuErr = fmt.Errorf("the run ended before the measured time")
	case before.err != nil:
		m.cpuErr = before.err
	case after.err != nil:
		m.cpuErr = after.err
	default:
		m.client = after.client - before.client
		for i := range m.members {
			m.members[i] = after.members[i] - before.members[i]
		}
	}
	return m, nil
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
}
