//go:build faults

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/cluster"
)

// The fault-injection build. It is compiled only with `-tags faults` and
// is steered by the environment of the process, so that a test can run
// real lockcluster processes with skewed clocks and with their outbound
// connections going through proxies it controls. It fills the hooks of
// every node's cluster.Config (Clock, DialAddr); one skewed clock serves
// every node of the process (lockcluster dev runs three).
//
//	LOCKCLUSTER_FAULT_DIAL="127.0.0.1:A=127.0.0.1:B,..."
//	    dial B whenever the node would dial A (raft peers and members'
//	    HTTP APIs alike).
//	LOCKCLUSTER_FAULT_CLOCK_OFFSET="+2h"
//	    added to the wall clock (Clock.Now).
//	LOCKCLUSTER_FAULT_CLOCK_RATE="0.9"
//	    how fast the node's monotonic clock runs (Clock.Since) compared to
//	    the host's.
//	LOCKCLUSTER_FAULT_CLOCK_FILE="/path"
//	    a file holding "offset=+2h rate=0.9" (either field optional); the
//	    node re-reads it when its modification time changes (checked at
//	    most every 50ms), so a test can skew a running node. The file wins
//	    over the two variables above once it exists.
//
// Rate changes keep the monotonic clock monotonic: it is piecewise
// linear, each piece starting where the previous one ended.
//
// A rate below 1 (a slow clock) only makes the leader's locks last longer.
// A rate above 1 breaks what the design assumes (no clock runs faster
// than the clients'): a leader whose clock runs fast expires locks before
// their holders' TTL has passed for them. It is accepted, to show that
// limit, but no test expects safety under it.

var faults = loadFaults()

// injectFaults points cfg's clock and dialler at the faults the
// environment asks for.
func injectFaults(cfg *cluster.Config) {
	cfg.Clock = faults
	cfg.DialAddr = faults.dialAddr
}

type faultState struct {
	dial map[string]string

	mu       sync.Mutex
	file     string
	checked  time.Time // host time of the last look at file
	modTime  time.Time
	offset   time.Duration
	segments []clockSegment // rate history, oldest first, never empty
}

// clockSegment is one piece of the skewed monotonic clock: from host time
// start on, virtual time runs at rate from virt.
type clockSegment struct {
	start time.Time // carries the monotonic reading
	virt  time.Duration
	rate  float64
}

func loadFaults() *faultState {
	f := &faultState{dial: map[string]string{}, file: os.Getenv("LOCKCLUSTER_FAULT_CLOCK_FILE")}
	for _, pair := range strings.Split(os.Getenv("LOCKCLUSTER_FAULT_DIAL"), ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && from != "" && to != "" {
			f.dial[from] = to
		}
	}
	offset, rate, err := parseClockFault(os.Getenv("LOCKCLUSTER_FAULT_CLOCK_OFFSET"), os.Getenv("LOCKCLUSTER_FAULT_CLOCK_RATE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		offset, rate = 0, 1
	}
	f.offset = offset
	// The first piece starts with the process, before anything it
	// measures (earlier times are extrapolated at the first rate).
	f.segments = []clockSegment{{start: time.Now(), rate: rate}}
	return f
}

// parseClockFault reads an offset ("+2h", "-90m", "") and a rate ("0.9",
// "") into their values; the defaults are no offset and rate 1.
func parseClockFault(offset, rate string) (time.Duration, float64, error) {
	var d time.Duration
	if s := strings.TrimPrefix(strings.TrimSpace(offset), "+"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, 1, fmt.Errorf("clock offset %q: %w", offset, err)
		}
		d = v
	}
	r := 1.0
	if s := strings.TrimSpace(rate); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v > 100 {
			return 0, 1, fmt.Errorf("clock rate %q: want a number in (0, 100]", rate)
		}
		r = v
	}
	return d, r, nil
}

// refresh re-reads the clock file when it changed; f.mu is held.
func (f *faultState) refresh(now time.Time) {
	if f.file == "" || now.Sub(f.checked) < 50*time.Millisecond {
		return
	}
	f.checked = now
	st, err := os.Stat(f.file)
	if err != nil || st.ModTime().Equal(f.modTime) {
		return
	}
	b, err := os.ReadFile(f.file)
	if err != nil {
		return
	}
	f.modTime = st.ModTime()
	var offset, rate string
	for _, field := range strings.Fields(string(b)) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "offset":
			offset = v
		case "rate":
			rate = v
		}
	}
	d, r, err := parseClockFault(offset, rate)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return
	}
	f.offset = d
	if last := f.segments[len(f.segments)-1]; last.rate != r {
		f.segments = append(f.segments, clockSegment{start: now, virt: f.virtLocked(now), rate: r})
	}
}

// virtLocked is the skewed monotonic time at host time t; f.mu is held.
func (f *faultState) virtLocked(t time.Time) time.Duration {
	i := len(f.segments) - 1
	for i > 0 && t.Before(f.segments[i].start) {
		i--
	}
	s := f.segments[i]
	return s.virt + time.Duration(float64(t.Sub(s.start))*s.rate)
}

// Now is the node's wall clock, moved by the configured offset.
func (f *faultState) Now() time.Time {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh(now)
	return now.Add(f.offset)
}

// Since is the node's monotonic time elapsed since t, at the configured
// rate.
func (f *faultState) Since(t time.Time) time.Duration {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh(now)
	return f.virtLocked(now) - f.virtLocked(t)
}

// dialAddr is the address actually dialled to reach addr.
func (f *faultState) dialAddr(addr string) string {
	if to, ok := f.dial[addr]; ok {
		return to
	}
	return addr
}
