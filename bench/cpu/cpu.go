// Package cpu reads the CPU time (user + system) that processes have
// used, for the benchmarks' CPU seconds per cycle: this process's own
// (Self), a process of this host by its PID (Process, from /proc), and a
// node's from its Prometheus exposition (ProcessCPU, the
// process_cpu_seconds_total series that client_golang's process
// collector reads from /proc on the node's host).
//
// A benchmark reads each source once before and once after its measured
// time and divides the difference by the cycles counted in between.
package cpu

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported: this platform has no way to read the figure.
var ErrUnsupported = errors.New("cpu: not supported on this platform")

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// Linux fixes it at 100 on every architecture whatever the kernel's HZ
// (client_golang's procfs assumes the same), so no sysconf call (cgo) is
// needed to read it.
const clockTicks = 100

// Process returns the CPU time the process pid has used so far, user and
// system, from /proc/<pid>/stat (Linux). Its resolution is 10ms.
func Process(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat("/proc/self/stat"); serr != nil {
				return 0, fmt.Errorf("%w: no /proc", ErrUnsupported)
			}
		}
		return 0, fmt.Errorf("cpu: process %d: %w", pid, err)
	}
	return parseStat(string(b))
}

// parseStat reads utime + stime from the text of /proc/PID/stat. The
// command name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("cpu: malformed /proc stat: no command name")
	}
	// After the name: state (field 3), ..., utime (14), stime (15).
	f := strings.Fields(s[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("cpu: malformed /proc stat: %d fields after the name", len(f))
	}
	var ticks uint64
	for _, s := range f[utime : stime+1] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu: malformed /proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / clockTicks), nil
}

// MetricName is the series ProcessCPU reads: the process's CPU seconds,
// user and system, as Prometheus' process collector exports it.
const MetricName = "process_cpu_seconds_total"

// maxExposition bounds what ProcessCPU reads of an exposition.
const maxExposition = 16 << 20

// ProcessCPU returns the value of process_cpu_seconds_total in a
// Prometheus text exposition (format 0.0.4, which a /metrics handler
// serves to a request that asks for no other). It reads the first sample
// of the series, labelled or not: a node's own registry has one,
// unlabelled. An exposition without the series is an error, not zero.
func ProcessCPU(r io.Reader) (time.Duration, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxExposition))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, MetricName)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '{') {
			continue // a comment, another series, or one whose name only starts so
		}
		if rest[0] == '{' {
			// Label values are quoted and may hold '}' escaped or not:
			// skip to the '}' outside quotes.
			end := labelsEnd(rest)
			if end < 0 {
				return 0, fmt.Errorf("cpu: malformed %s line %q", MetricName, line)
			}
			rest = rest[end+1:]
		}
		// value [timestamp]
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, fmt.Errorf("cpu: %s line %q has no value", MetricName, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("cpu: %s line %q: not a CPU time", MetricName, line)
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("cpu: read exposition: %w", err)
	}
	return 0, fmt.Errorf("cpu: no %s in the exposition (a node with a registry of its own serves it)", MetricName)
}

// labelsEnd returns the index of the '}' that closes the label set at the
// start of s, or -1.
func labelsEnd(s string) int {
	quoted, escaped := false, false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}
