// Package supervise runs the command of "lockcluster run" as the leader of
// a process group of its own, and stops the whole group when the lock it
// runs under is lost or about to be, when a signal asks for it, or when the
// command exits while processes it started linger: nothing the command
// started may keep working once the lock is gone.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/zerotal/lock"
)

// GuardArg, as the first argument of the lockcluster binary, makes it the
// guard of a command's process group (see RunGuard and guard_unix.go):
// main hands such a process to RunGuard before anything else.
const GuardArg = "__run-guard"

// Cause says why the group was stopped.
type Cause int

const (
	None        Cause = iota // the command ended on its own
	Lost                     // the lock was found lost
	LeaseEnding              // refreshes failed until the lease was about to run out
	Requested                // a signal, or run's own context ended
	MaxHold                  // the lease was about to reach its cap on total hold time
)

// Interrupted is the cause of a context that ended because the process
// received Sig. The signal reaches the Group's Signals too, and is passed
// on from there as itself, so the end of such a context adds no SIGTERM of
// its own.
type Interrupted struct{ Sig os.Signal }

func (i Interrupted) Error() string { return i.Sig.String() + " signal received" }

// PipeDrain bounds how long Wait copies the command's output after the
// command exited. It matters only when run's own stdout or stderr is not a
// file (exec then copies through a pipe): a background process that keeps
// the pipe open must not hold up Wait, since the group is stopped after it.
const PipeDrain = 200 * time.Millisecond

// Group is one command run as the leader of its own process group while
// a lock is held.
//
// Everything in the group is stopped together: when the lock is lost, when
// its lease is about to run out because refreshes fail, when run's context
// ends, and when the command exits while processes it started linger. A
// stop sends SIGTERM (and SIGCONT, so that a stopped process sees it) to
// the group, then SIGKILL after grace, but never later than margin before
// the lease's estimated end: the backend may hand the key on from then.
// Supervise returns only once no process of the group can still run, so
// the lock is released only after that.
//
// A guard process (guard_unix.go) applies the same rules if the caller
// goes quiet: Supervise tells it each new end of the lease, and it stops
// the group if run ends, or is stopped (SIGSTOP, a debugger) past the
// point where it would have stopped the group itself.
type Group struct {
	Cmd    *exec.Cmd
	Grace  time.Duration // from SIGTERM to SIGKILL
	Margin time.Duration // SIGKILL goes out no later than this before the lease's end
	// Lease is the lock's estimated end (Lock.ExpiresAt; zero once lost).
	Lease func() time.Time
	// Cap, when set, is the lock's cap on total hold time
	// (Lock.MaxHoldAt; zero: none), where no refresh moves the lease's
	// end: a lease about to end there stops the group as MaxHold, not as
	// a refresh that failed.
	Cap func() time.Time
	// Signals are those received by run; each is passed on to the group.
	Signals <-chan os.Signal
	Say     func(format string, a ...any)
	// Who is "run" or "elect": how the guard names its supervisor.
	Who string
}

// supervisor is the state of one Group.Supervise.
type supervisor struct {
	g      *Group
	pgid   int
	exp    time.Time // the latest lease end seen
	cause  Cause
	killAt time.Time // when the group gets SIGKILL; zero until stopping
	gd     *guard

	leaseTimer, killTimer, pollTimer, beatTimer *time.Timer
}

// Supervise starts the command and returns its Wait error once the command
// has exited and its group is gone, with why it was stopped. ctx is the
// lock callback's context: it ends when the lock is lost or run is
// interrupted. err is set only when the command could not start.
func (g *Group) Supervise(ctx context.Context) (waitErr error, cause Cause, err error) {
	if err := inNewGroup(g.Cmd); err != nil {
		return nil, None, err
	}
	if err := g.Cmd.Start(); err != nil {
		return nil, None, err
	}
	s := &supervisor{g: g, pgid: g.Cmd.Process.Pid, exp: g.Lease()}
	exited := make(chan error, 1)
	go func() { exited <- g.Cmd.Wait() }()
	gd, err := startGuard(s.pgid, g.Grace, g.Margin, g.Who)
	if err != nil {
		// Unguarded, the group would outlive a run that is killed.
		_ = signalGroup(s.pgid, sigKill)
		<-exited
		return nil, None, err
	}
	defer gd.release()
	s.gd = gd
	gd.leaseEnds(s.exp)

	s.leaseTimer = time.NewTimer(s.untilLeaseCheck())
	s.killTimer = stoppedTimer()
	s.pollTimer = stoppedTimer()
	beat := s.beat()
	s.beatTimer = time.NewTimer(beat)
	defer s.leaseTimer.Stop()
	defer s.killTimer.Stop()
	defer s.pollTimer.Stop()
	defer s.beatTimer.Stop()

	ctxDone := ctx.Done()
	childDone := false
	poll := time.Millisecond
	pollStart := time.Time{}
	warned := false
	for {
		select {
		case waitErr = <-exited:
			childDone, exited = true, nil
			if groupGone(s.pgid) {
				return waitErr, s.finalCause(), nil
			}
			// The command is done, but something it started is not:
			// stop it like the command, before the lock is released.
			s.stop(None, true, "")
			pollStart = time.Now()
			s.pollTimer.Reset(poll)
		case sig := <-g.Signals:
			s.forward(sig)
		case <-ctxDone:
			ctxDone = nil
			s.cancelled(ctx)
		case <-s.leaseTimer.C:
			s.checkLease()
		case <-s.killTimer.C:
			_ = signalGroup(s.pgid, sigKill)
		case <-s.beatTimer.C:
			s.heartbeat()
			s.beatTimer.Reset(beat)
		case <-s.pollTimer.C:
			if childDone && groupGone(s.pgid) {
				return waitErr, s.finalCause(), nil
			}
			if !s.killAt.IsZero() && !time.Now().Before(s.killAt) {
				// Again, for a process forked while the first went out.
				_ = signalGroup(s.pgid, sigKill)
			}
			if !warned && time.Since(pollStart) > 5*time.Second {
				warned = true
				g.Say("waiting for the processes of the command's group %d to exit; the lock stays held until they have", s.pgid)
			}
			poll = min(2*poll, 50*time.Millisecond)
			s.pollTimer.Reset(poll)
		}
	}
}

// forward passes a signal received by run on to the whole group. SIGINT,
// SIGTERM and SIGQUIT also start the stop, so that SIGKILL follows after
// the grace; the others are only passed on (the command decides what a
// hangup means).
func (s *supervisor) forward(sig os.Signal) {
	ss, ok := forwardable(sig)
	if !ok {
		return
	}
	_ = signalGroup(s.pgid, ss)
	if ss == sigInt || ss == sigTerm || ss == sigQuit {
		_ = signalGroup(s.pgid, sigCont)
		s.stop(Requested, false, "")
	}
}

// cancelled handles the end of the callback's context.
func (s *supervisor) cancelled(ctx context.Context) {
	cause := context.Cause(ctx)
	var sig Interrupted
	switch {
	case errors.Is(cause, lock.ErrLost):
		s.stop(Lost, true, strings.TrimPrefix(cause.Error(), "lock: "))
	case errors.As(cause, &sig):
		// The signal reaches run's own channel as well and is passed on
		// from there, as itself: do not add a SIGTERM of our own.
		s.stop(Requested, false, "")
	default:
		s.stop(Requested, true, "")
	}
}

// checkLease runs when the lease, as last seen, is about to leave less
// than grace+margin: if no refresh has extended it since, the command is
// stopped now, so that SIGKILL goes out margin before the lease's end.
func (s *supervisor) checkLease() {
	if exp := s.g.Lease(); !exp.IsZero() {
		s.exp = exp
	}
	switch {
	case !s.killAt.IsZero() || time.Until(s.exp) > s.g.Grace+s.g.Margin:
	case s.atCap():
		s.stop(MaxHold, true, fmt.Sprintf("the lock reaches its cap on total hold time in %s", time.Until(s.exp).Round(time.Millisecond)))
	default:
		s.stop(LeaseEnding, true, fmt.Sprintf("the lock could not be refreshed and its lease ends in %s", time.Until(s.exp).Round(time.Millisecond)))
	}
	if s.killAt.IsZero() {
		s.leaseTimer.Reset(s.untilLeaseCheck())
	}
}

// heartbeat tells the guard the lease's latest end, and takes note if
// the guard has stopped the group on its own (run was stopped, and has
// just been continued): the group's SIGKILL then goes out as the guard's
// does, and the lock counts as not kept.
func (s *supervisor) heartbeat() {
	s.gd.leaseEnds(s.g.Lease())
	if s.gd.stoppedGroup() {
		s.stop(LeaseEnding, false, "")
	}
}

// finalCause is why the group was stopped, as Supervise returns it: a
// command that ended of the guard's signals was stopped because the lease
// was about to end unrefreshed (run had been stopped), not on its own.
func (s *supervisor) finalCause() Cause {
	if s.cause == None && s.gd.stoppedGroup() {
		return LeaseEnding
	}
	return s.cause
}

// atCap reports whether the lease, as last seen, ends at the lock's cap.
func (s *supervisor) atCap() bool {
	if s.g.Cap == nil {
		return false
	}
	c := s.g.Cap()
	return !c.IsZero() && !s.exp.Before(c)
}

// beat is how often Supervise tells the guard the lease's end: often
// enough that the guard, which acts about half the TTL after a refresh
// was sent (grace+margin before the end, less a quarter of the grace),
// hears of each refresh in time. Margin is a sixth of the TTL.
func (s *supervisor) beat() time.Duration {
	return min(max(s.g.Margin/2, 10*time.Millisecond), time.Second)
}

// untilLeaseCheck is how long until the lease has grace+margin left.
func (s *supervisor) untilLeaseCheck() time.Duration {
	return max(time.Until(s.exp)-s.g.Grace-s.g.Margin, 0)
}

// stop starts stopping the group, once: SIGTERM and SIGCONT when term is
// set, and SIGKILL after the grace or margin before the lease's end,
// whichever comes first. why, when set, is said as the SIGTERM goes out,
// so that whoever watches knows at once why the command is being stopped.
func (s *supervisor) stop(cause Cause, term bool, why string) {
	if !s.killAt.IsZero() {
		return
	}
	s.cause = cause
	s.killAt = time.Now().Add(s.g.Grace)
	if deadline := s.exp.Add(-s.g.Margin); !s.exp.IsZero() && deadline.Before(s.killAt) {
		s.killAt = deadline
	}
	if term {
		if why != "" && s.g.Say != nil {
			s.g.Say("%s: SIGTERM to the command's process group %d, SIGKILL in %s if it has not exited",
				why, s.pgid, max(time.Until(s.killAt), 0).Round(time.Millisecond))
		}
		_ = signalGroup(s.pgid, sigTerm)
		_ = signalGroup(s.pgid, sigCont)
	}
	s.gd.stopping(s.killAt)
	s.killTimer.Reset(max(time.Until(s.killAt), 0))
}

// stoppedTimer returns a timer that has not been started.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// StatusOf returns the command's exit status (128+N when it died of
// signal N), or -1 when it did not run.
func StatusOf(cmd *exec.Cmd, err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err == nil || (cmd.ProcessState != nil && errors.Is(err, exec.ErrWaitDelay)) {
		return cmd.ProcessState.ExitCode()
	}
	return -1
}
