package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/bench/cpu"
)

// scrapeTimeout bounds one read of a node's /metrics at an edge of the
// measured time.
const scrapeTimeout = 2 * time.Second

// metricsReader reads one node's Prometheus exposition; *client.Client
// is one (NodeMetrics), with the token, cluster ID and TLS of the bench's
// driver.
type metricsReader interface {
	NodeMetrics(ctx context.Context, addr string) ([]byte, error)
}

// cpuSource is one process whose CPU time bench reads before and after
// the measured time.
type cpuSource struct {
	name string // "client", or a node's address as given in --endpoints
	read func(context.Context) (time.Duration, error)
}

// cpuFigure is one source's CPU time over the measured time, or why it
// is not known.
type cpuFigure struct {
	name          string
	before, after time.Duration
	err           error
}

// Used is the CPU time the source used over the measured time.
func (f cpuFigure) Used() time.Duration { return f.after - f.before }

// cpuMeter reads every source at both edges of the measured time (the
// load loop's Begin and End), all at once so that one slow node does not
// shift the others' window.
type cpuMeter struct {
	note    string // what the figures leave out, shown beside them ("": nothing)
	figures []cpuFigure
	sources []cpuSource
	began   bool
}

// newCPUMeter measures the client (this process) and, on the cluster
// driver, every endpoint through mr.
func newCPUMeter(driver string, endpoints []string, mr metricsReader) *cpuMeter {
	m := &cpuMeter{}
	m.sources = append(m.sources, cpuSource{name: "client", read: func(context.Context) (time.Duration, error) { return cpu.Self() }})
	switch {
	case driver == "cluster" && mr != nil:
		for _, addr := range endpoints {
			m.sources = append(m.sources, cpuSource{name: addr, read: func(ctx context.Context) (time.Duration, error) {
				b, err := mr.NodeMetrics(ctx, addr)
				if err != nil {
					return 0, err
				}
				return cpu.ProcessCPU(bytes.NewReader(b))
			}})
		}
	case driver == "memory", driver == "sqlite":
		m.note = "client only: the " + driver + " driver runs in this process"
	default:
		m.note = "client only: the " + driver + " server's CPU is not measured"
	}
	m.figures = make([]cpuFigure, len(m.sources))
	for i, s := range m.sources {
		m.figures[i].name = s.name
	}
	return m
}

// begin and end are the load loop's Begin and End.
func (m *cpuMeter) begin() { m.began = true; m.readAll(true) }
func (m *cpuMeter) end()   { m.readAll(false) }

func (m *cpuMeter) readAll(before bool) {
	var wg sync.WaitGroup
	for i, s := range m.sources {
		f := &m.figures[i]
		if f.err != nil {
			continue
		}
		wg.Go(func() {
			// Not the run's context: End reads when that has ended.
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			d, err := s.read(ctx)
			switch {
			case err != nil:
				f.err = err
			case before:
				f.before = d
			default:
				f.after = d
				if f.after < f.before {
					// A counter that went back is a process that restarted in between.
					f.err = fmt.Errorf("its CPU time went back from %s to %s: restarted?", f.before, f.after)
				}
			}
		})
	}
	wg.Wait()
}

// cpuResult is what bench reports of CPU: each source's CPU time over
// the measured time, and what it leaves out.
type cpuResult struct {
	Figures []cpuFigure
	Note    string
}

func (m *cpuMeter) result() cpuResult {
	if !m.began { // the run ended before the measured time
		for i := range m.figures {
			m.figures[i].err = fmt.Errorf("the run ended before the measured time")
		}
	}
	return cpuResult{Figures: m.figures, Note: m.note}
}

// Total is the CPU time of the sources that were read, and the names of
// those that were not.
func (r cpuResult) Total() (used time.Duration, missing []string) {
	for _, f := range r.Figures {
		if f.err != nil {
			missing = append(missing, f.name)
			continue
		}
		used += f.Used()
	}
	return used, missing
}

// printCPU writes the cpu/cycle line: the total first, then each
// process; a source that could not be read says so, and the total says it
// leaves it out.
func printCPU(w io.Writer, r cpuResult, cycles int) {
	if cycles == 0 {
		fmt.Fprintln(w, "cpu/cycle -  (no cycles)")
		return
	}
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond)/float64(cycles))
	}
	total, missing := r.Total()
	head := per(total) + " total"
	if len(missing) > 0 {
		head += " without " + strings.Join(missing, ", ")
	}
	parts := make([]string, len(r.Figures))
	for i, f := range r.Figures {
		if f.err != nil {
			parts[i] = f.name + " not read"
		} else {
			parts[i] = f.name + " " + per(f.Used())
		}
	}
	line := "cpu/cycle " + head + ": " + strings.Join(parts, ", ")
	if r.Note != "" {
		line += "  (" + r.Note + ")"
	}
	fmt.Fprintln(w, line)
}
