//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/proctest"
)

// These tests stop a holder's run or elect with SIGSTOP (as a debugger, a
// cgroup freezer or "kill -STOP" of a shell job would): its refreshes stop,
// its lease runs out and the next holder is granted the key. Its command
// must be stopped before that, by the guard, which is a process of its own.

// heartbeat is the first holder's command: it writes its PID to $1, then
// appends the time (ns since the epoch) to $2 every 50ms while it runs.
const heartbeat = `echo $$ > "$1"
while :; do date +%s%N >> "$2"; sleep 0.05; done
`

// recordStart is the next holder's command: it writes the time it started
// (ns since the epoch) to $1, whole, and keeps running.
const recordStart = `date +%s%N > "$1.tmp" && mv "$1.tmp" "$1"
exec sleep 60
`

// startJob starts "lockcluster args..." as the leader of a process group
// of its own, as a shell starts a job (startProcIn).
func startJob(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcIn(t, nil, true, args...)
}

// stopHow stops the first holder: its own process, or its whole group
// (the shell job it is).
type stopHow struct {
	name  string
	group bool
}

var stopHows = []stopHow{{"process", false}, {"shell job", true}}

// stop sends SIGSTOP to p, or to its whole process group.
func (h stopHow) stop(t *testing.T, p *proc) {
	t.Helper()
	pid := p.cmd.Process.Pid
	if h.group {
		pid = -pid
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// nanos reads the times (ns since the epoch) written to file, one a line;
// a line not yet ended is left out.
func nanos(file string) []int64 {
	b, _ := os.ReadFile(file)
	var out []int64
	for line := range strings.Lines(string(b)) {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// overlap is the handover the tests check: once the stopped holder's
// command has written a heartbeat, the next holder's command starts (it
// waits on the same key); no heartbeat of the first may come at or after
// that start, and the first's command must be gone by then.
type overlap struct {
	beats, started string // the files of heartbeat and recordStart
	pid            int    // the first holder's command
}

func newOverlap(t *testing.T) (o overlap, firstArgs, nextArgs []string) {
	dir := t.TempDir()
	o = overlap{beats: filepath.Join(dir, "beats"), started: filepath.Join(dir, "started")}
	first := proctest.Script(t, dir, "first.sh", heartbeat)
	next := proctest.Script(t, dir, "next.sh", recordStart)
	return o, []string{"sh", first, filepath.Join(dir, "pid"), o.beats}, []string{"sh", next, o.started}
}

// firstRuns waits until the first holder's command beats, and notes its PID.
func (o *overlap) firstRuns(t *testing.T) {
	t.Helper()
	o.pid = proctest.ReadPID(t, filepath.Join(filepath.Dir(o.beats), "pid"))
	poll.Until(t, 10*time.Second, "the first command's heartbeat", func() bool { return len(nanos(o.beats)) > 0 })
}

// check waits for the next holder's command to start and fails t if the
// first's still ran then.
func (o *overlap) check(t *testing.T, stopped time.Time) {
	t.Helper()
	var start int64
	poll.Until(t, 60*time.Second, "the next holder's command to start", func() bool {
		if s := nanos(o.started); len(s) == 1 {
			start = s[0]
			return true
		}
		return false
	})
	alive := proctest.Alive(o.pid)
	// A first command that still runs beats every 50ms: give it a
	// generous second to show itself.
	var late int64
	poll.Wait(time.Second, func() bool {
		b := nanos(o.beats)
		late = b[len(b)-1]
		return late >= start
	})
	b := nanos(o.beats)
	last := b[len(b)-1]
	t.Logf("stopped at +0; the first command's last heartbeat at %v, the next command started at %v",
		time.Unix(0, last).Sub(stopped).Round(time.Millisecond), time.Unix(0, start).Sub(stopped).Round(time.Millisecond))
	if late >= start || alive {
		t.Fatalf("the first holder's command still ran (alive %v, heartbeat %v after) when the next holder's command started: both ran at once",
			alive, time.Duration(last-start).Round(time.Millisecond))
	}
}

// A stopped run cannot refresh its lock: its guard stops the command's
// group before the lease runs out and the next run waiting on the key is
// granted it. Once continued, run exits 76 (the lock was not kept).
func TestRun_StoppedRunStopsItsCommandBeforeTheNextHolder(t *testing.T) {
	stoppedHolderStopsItsCommand(t, func(db string) []string {
		return []string{"run", "--driver", "sqlite", "--sqlite-path", db, "--key", "k", "--ttl", "6s", "--grace", "1s", "--"}
	}, "the next run to wait", "waiting", func(t *testing.T, first *proc) {
		if code := first.wait(t); code != exitLost {
			t.Fatalf("the continued run: exit %d, want %d (the lock was not kept); stderr:\n%s", code, exitLost, first.stderr)
		}
	})
}

// The same for elect: a stopped leader's command is stopped before the
// next candidate leads; continued, the stopped elect stands again.
func TestElect_StoppedElectStopsItsCommandBeforeTheNextLeader(t *testing.T) {
	stoppedHolderStopsItsCommand(t, func(db string) []string {
		return []string{"elect", "--driver", "sqlite", "--sqlite-path", db, "--ttl", "6s", "--grace", "1s", "svc", "--"}
	}, "the next candidate to stand", "standing", func(t *testing.T, first *proc) {
		poll.Until(t, 30*time.Second, "the continued elect to stand again", func() bool {
			return strings.Contains(first.stderr.String(), "standing again")
		})
	})
}

// stoppedHolderStopsItsCommand runs, for each way of stopping, a first
// holder and a next one with the command line base gives for a database
// (ending in "--"), the next one's stderr saying waitWord once it waits
// (what). It stops the first, checks the overlap, continues the first and
// checks what it does then (continued).
func stoppedHolderStopsItsCommand(t *testing.T, base func(db string) []string, what, waitWord string, continued func(*testing.T, *proc)) {
	needProc(t)
	for _, how := range stopHows {
		t.Run(how.name, func(t *testing.T) {
			args := base(filepath.Join(t.TempDir(), "locks.db"))
			o, firstCmd, nextCmd := newOverlap(t)
			first := startJob(t, append(args, firstCmd...)...)
			o.firstRuns(t)
			next := startProc(t, nil, append(args, nextCmd...)...)
			poll.Until(t, 10*time.Second, what, func() bool { return strings.Contains(next.stderr.String(), waitWord) })

			how.stop(t, first)
			stopped := time.Now()
			o.check(t, stopped)

			_ = syscall.Kill(-first.cmd.Process.Pid, syscall.SIGCONT) // the group this test started
			continued(t, first)
		})
	}
}

// elect --help says that a stopped elect does not leave its command
// running.
func TestElect_HelpSaysAStoppedElectStopsItsCommand(t *testing.T) {
	_, stdout, _ := runCLI(t, nil, "elect", "--help")
	if !strings.Contains(stdout, "is stopped (SIGSTOP, a debugger)") {
		t.Errorf("elect --help does not say what becomes of a stopped elect's command:\n%s", stdout)
	}
}
