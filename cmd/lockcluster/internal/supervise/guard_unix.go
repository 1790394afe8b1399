//go:build unix

package supervise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// The guard: run starts, beside its command, a copy of its own binary in a
// session of its own, so that no signal to run's process group or
// terminal (kill -STOP of run's shell job, Ctrl-C) reaches it, nor one to
// the command's group. Two pipes join them. On the first, whose write end
// only run has, run tells the guard when the lock's lease ends, after each
// refresh, and when it stops the group itself (see the records below).
// The guard stops the command's group, SIGTERM then SIGKILL, when:
//
//   - run ends, however (SIGKILL included, which it cannot catch): the
//     kernel closes run's end and the guard reads EOF;
//   - the lease is about to end and run has told no newer end: run is
//     stopped (SIGSTOP, a debugger, a cgroup freezer that holds run but
//     not the guard), wedged, or cannot refresh (guardPlan says when).
//
// Either way SIGKILL goes out margin before the lease's end, as when run
// stops the group itself, so the group is gone before the backend can
// hand the key on. On the second pipe the guard tells run that it stopped
// the group on its own (one byte, written before its SIGTERM), so that a
// run that is continued reports the lock as not kept. This works the same
// on every Unix; it needs no parent-death signal (Linux only, and tied to
// the thread that started the process) and no subreaper. A freezer that
// freezes the guard too (one cgroup for run, its guard and its command)
// stops them all; when thawed, the guard finds the lease's end passed and
// kills the group at once, though the command may get a moment first:
// then only the fence protects what it writes to.
type guard struct {
	cmd   *exec.Cmd
	w     *os.File  // run's end of run → guard
	r     *os.File  // run's end of guard → run
	told  time.Time // the last lease end told
	acted bool      // the guard said it stopped the group
}

// Records from run to the guard: a kind byte, then a CLOCK_MONOTONIC time
// in nanoseconds (big-endian).
const (
	recLease = 'L' // the lease ends at the time
	recStop  = 'S' // run stops the group; SIGKILL at the time
	recDone  = 'D' // run is done with the group (the time is unused)

	recLen = 9
)

// guardActed is the byte the guard writes to run when it stops the
// group on its own.
const guardActed = 'S'

// guardWrite bounds a write to the guard: a guard that does not read
// (stopped itself) must not hold up run, which then keeps its own rules.
const guardWrite = 100 * time.Millisecond

// startGuard starts the guard of group pgid; who is "run" or "elect",
// for what the guard says.
func startGuard(pgid int, grace, margin time.Duration, who string) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	toGuard, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	defer toGuard.Close()
	r, fromGuard, err := os.Pipe()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	defer fromGuard.Close()
	cmd := exec.Command(exe, GuardArg, strconv.Itoa(pgid), grace.String(), margin.String(), who)
	cmd.ExtraFiles = []*os.File{toGuard, fromGuard} // fd 3 and 4
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_, _ = w.Close(), r.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	return &guard{cmd: cmd, w: w, r: r}, nil
}

// send writes one record; a guard that is gone or does not read is not
// waited for.
func (g *guard) send(kind byte, at int64) {
	var b [recLen]byte
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], uint64(at))
	_ = g.w.SetWriteDeadline(time.Now().Add(guardWrite))
	_, _ = g.w.Write(b[:])
}

// leaseEnds tells the guard the lease's end, when it is new (zero: the
// lock is gone, and run stops the group itself).
func (g *guard) leaseEnds(t time.Time) {
	if t.IsZero() {
		return
	}
	if !t.Equal(g.told) {
		g.told = t
		g.send(recLease, monoAt(t))
	}
}

// stopping tells the guard that run stops the group, with SIGKILL at
// killAt: if run goes quiet during the stop, the guard still kills.
func (g *guard) stopping(killAt time.Time) { g.send(recStop, monoAt(killAt)) }

// stoppedGroup reports whether the guard said it stopped the group on
// its own. It does not wait: it reads what the guard has written so far.
func (g *guard) stoppedGroup() bool {
	if g.acted {
		return true
	}
	rc, err := g.r.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	n := 0
	_ = rc.Read(func(fd uintptr) bool {
		n, _ = syscall.Read(int(fd), b[:]) // the pipe is non-blocking
		return true
	})
	g.acted = n == 1 && b[0] == guardActed
	return g.acted
}

// release tells the guard that run is done with the group; the guard
// exits on its own, and is reaped in the background so that the lock's
// release does not wait for it (a guard that has not exited within five
// seconds is killed: the group is gone already).
func (g *guard) release() {
	g.send(recDone, 0)
	_, _ = g.w.Close(), g.r.Close()
	go func() {
		t := time.AfterFunc(5*time.Second, func() { _ = g.cmd.Process.Kill() })
		defer t.Stop()
		_ = g.cmd.Wait()
	}()
}

// killFor bounds how long the guard goes on sending SIGKILL to a group
// that does not empty (a process stuck in the kernel; or, off Linux, the
// command's zombie that a stopped run has not reaped yet).
const killFor = 5 * time.Second

// RunGuard is the guard's main (args after GuardArg: the group, the grace,
// the margin and who started it). It returns the process's exit status.
func RunGuard(args []string) int {
	var (
		pgid          int
		grace, margin time.Duration
		err           error
	)
	if len(args) == 4 {
		pgid, err = strconv.Atoi(args[0])
		if err == nil {
			grace, err = time.ParseDuration(args[1])
		}
		if err == nil {
			margin, err = time.ParseDuration(args[2])
		}
	}
	if len(args) != 4 || err != nil || pgid <= 1 {
		fmt.Fprintln(os.Stderr, "lockcluster: the guard is started by lockcluster run and elect only")
		return 64
	}
	who := args[3]
	say := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "lockcluster "+who+": "+format+"\n", a...)
	}
	// Signals meant for run's terminal or group are not the guard's.
	ignoreSignals()
	recs := make(chan [recLen]byte)
	go readRecords(os.NewFile(3, who), recs)
	toRun := os.NewFile(4, who)

	p := guardPlan{grace: grace, margin: margin}
	timer := time.NewTimer(time.Hour)
	var killed int64 // when the first SIGKILL went out; 0 before
	for {
		now := monoNow()
		term, kill := p.tick(now)
		if term {
			// Told before the signal: a run that finds its command dead
			// of it finds this byte too.
			_, _ = toRun.Write([]byte{guardActed})
			say("%s has not refreshed the lock, whose lease ends in %s (is %s stopped?): SIGTERM to the command's process group %d, SIGKILL in %s",
				who, time.Duration(p.lease-now).Round(time.Millisecond), who, pgid, time.Duration(p.killAt-now).Round(time.Millisecond))
			stopGroup(pgid)
		}
		if kill {
			_ = signalGroup(pgid, sigKill) // again on every turn: a process may fork meanwhile
			if killed == 0 {
				killed = now
			}
		}
		if p.stopping() && (groupGone(pgid) || (killed != 0 && now-killed > int64(killFor))) {
			return 0
		}
		timer.Reset(wakeIn(&p, now))
		select {
		case rec, ok := <-recs:
			if !ok {
				recs = nil
				if p.runEnded(monoNow()) {
					say("%s ended while its command ran: stopping its process group %d (SIGTERM, SIGKILL in %s)",
						who, pgid, time.Duration(p.killAt-monoNow()).Round(time.Millisecond))
					stopGroup(pgid)
				}
				continue
			}
			at := int64(binary.BigEndian.Uint64(rec[1:]))
			switch rec[0] {
			case recLease:
				p.leaseEnds(at)
			case recStop:
				p.runStops(at)
			case recDone:
				return 0
			}
		case <-timer.C:
		}
	}
}

// wakeIn is how long the guard may wait for run's next record: until the
// plan has something to do, and, during a stop, a short poll of whether
// the group has gone.
func wakeIn(p *guardPlan, now int64) time.Duration {
	d := time.Hour
	if at := p.next(); at != 0 {
		d = max(time.Duration(at-now), 0)
	}
	if p.stopping() {
		d = min(d, 20*time.Millisecond)
	}
	return d
}

// readRecords passes run's records on, and closes recs at the pipe's end:
// run ended (or a record was cut short, which only an ending run does).
func readRecords(f *os.File, recs chan<- [recLen]byte) {
	defer close(recs)
	for {
		var rec [recLen]byte
		if _, err := io.ReadFull(f, rec[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				fmt.Fprintf(os.Stderr, "lockcluster: guard: reading from its supervisor: %v\n", err)
			}
			return
		}
		recs <- rec
	}
}

// stopGroup sends the group SIGTERM, and SIGCONT so that a stopped
// process sees it.
func stopGroup(pgid int) {
	_ = signalGroup(pgid, sigTerm)
	_ = signalGroup(pgid, sigCont)
}

func ignoreSignals() { signal.Ignore(Signals...) }
