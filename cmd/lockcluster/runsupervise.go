package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/zerotal/lock"
)

// stopCause says why run stopped its command's process group.
type stopCause int

const (
	stopNone        stopCause = iota // the command ended on its own
	stopLost                         // the lock was found lost
	stopLeaseEnding                  // refreshes failed until the lease was about to run out
	stopRequested                    // a signal, or run's own context ended
)

// errLeaseEnding is what run's callback returns when it stopped the command
// because the lock could not be refreshed in time (exit status 76).
var errLeaseEnding = errors.New("the lock could not be refreshed and its lease was about to run out at the backend")

// pipeDrain bounds how long Wait copies the command's output after the
// command exited. It matters only when run's own stdout or stderr is not a
// file (exec then copies through a pipe): a background process that keeps
// the pipe open must not hold up Wait, since the group is stopped after it.
const pipeDrain = 200 * time.Millisecond

// groupRun is one command run as the leader of its own process group while
// a lock is held.
//
// Everything in the group is stopped together: when the lock is lost, when
// its lease is about to run out because refreshes fail, when run's context
// ends, and when the command exits while processes it started linger. A
// stop sends SIGTERM (and SIGCONT, so that a stopped process sees it) to
// the group, then SIGKILL after grace, but never later than margin before
// the lease's estimated end: the backend may hand the key on from then.
// supervise returns only once no process of the group can still run, so
// the lock is released only after that.
type groupRun struct {
	cmd    *exec.Cmd
	grace  time.Duration
	margin time.Duration
	// lease is the lock's estimated end (Lock.ExpiresAt; zero once lost).
	lease func() time.Time
	// signals are those received by run; each is passed on to the group.
	signals <-chan os.Signal
	say     func(format string, a ...any)
}

// supervisor is the state of one groupRun.supervise.
type supervisor struct {
	g      *groupRun
	pgid   int
	exp    time.Time // the latest lease end seen
	cause  stopCause
	killAt time.Time // when the group gets SIGKILL; zero until stopping

	leaseTimer, killTimer, pollTimer *time.Timer
}

// supervise starts the command and returns its Wait error once the command
// has exited and its group is gone, with why it was stopped. ctx is the
// lock callback's context: it ends when the lock is lost or run is
// interrupted. err is set only when the command could not start.
func (g *groupRun) supervise(ctx context.Context) (waitErr error, cause stopCause, err error) {
	if err := inNewGroup(g.cmd); err != nil {
		return nil, stopNone, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, stopNone, err
	}
	s := &supervisor{g: g, pgid: g.cmd.Process.Pid, exp: g.lease()}
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()

	s.leaseTimer = time.NewTimer(s.untilLeaseCheck())
	s.killTimer = stoppedTimer()
	s.pollTimer = stoppedTimer()
	defer s.leaseTimer.Stop()
	defer s.killTimer.Stop()
	defer s.pollTimer.Stop()

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
				return waitErr, s.cause, nil
			}
			// The command is done, but something it started is not:
			// stop it like the command, before the lock is released.
			s.stop(stopNone, true)
			pollStart = time.Now()
			s.pollTimer.Reset(poll)
		case sig := <-g.signals:
			s.forward(sig)
		case <-ctxDone:
			ctxDone = nil
			s.cancelled(ctx)
		case <-s.leaseTimer.C:
			s.checkLease()
		case <-s.killTimer.C:
			_ = signalGroup(s.pgid, sigKill)
		case <-s.pollTimer.C:
			if childDone && groupGone(s.pgid) {
				return waitErr, s.cause, nil
			}
			if !s.killAt.IsZero() && !time.Now().Before(s.killAt) {
				// Again, for a process forked while the first went out.
				_ = signalGroup(s.pgid, sigKill)
			}
			if !warned && time.Since(pollStart) > 5*time.Second {
				warned = true
				g.say("waiting for the processes of the command's group %d to exit; the lock stays held until they have", s.pgid)
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
		s.stop(stopRequested, false)
	}
}

// cancelled handles the end of the callback's context.
func (s *supervisor) cancelled(ctx context.Context) {
	cause := context.Cause(ctx)
	var sig interrupted
	switch {
	case errors.Is(cause, lock.ErrLost):
		s.stop(stopLost, true)
	case errors.As(cause, &sig):
		// The signal reaches run's own channel as well and is passed on
		// from there, as itself: do not add a SIGTERM of our own.
		s.stop(stopRequested, false)
	default:
		s.stop(stopRequested, true)
	}
}

// checkLease runs when the lease, as last seen, is about to leave less
// than grace+margin: if no refresh has extended it since, the command is
// stopped now, so that SIGKILL goes out margin before the lease's end.
func (s *supervisor) checkLease() {
	if exp := s.g.lease(); !exp.IsZero() {
		s.exp = exp
	}
	if s.killAt.IsZero() && time.Until(s.exp) <= s.g.grace+s.g.margin {
		s.stop(stopLeaseEnding, true)
	}
	if s.killAt.IsZero() {
		s.leaseTimer.Reset(s.untilLeaseCheck())
	}
}

// untilLeaseCheck is how long until the lease has grace+margin left.
func (s *supervisor) untilLeaseCheck() time.Duration {
	return max(time.Until(s.exp)-s.g.grace-s.g.margin, 0)
}

// stop starts stopping the group, once: SIGTERM and SIGCONT when term is
// set, and SIGKILL after the grace or margin before the lease's end,
// whichever comes first.
func (s *supervisor) stop(cause stopCause, term bool) {
	if !s.killAt.IsZero() {
		return
	}
	s.cause = cause
	if term {
		_ = signalGroup(s.pgid, sigTerm)
		_ = signalGroup(s.pgid, sigCont)
	}
	s.killAt = time.Now().Add(s.g.grace)
	if deadline := s.exp.Add(-s.g.margin); !s.exp.IsZero() && deadline.Before(s.killAt) {
		s.killAt = deadline
	}
	s.killTimer.Reset(max(time.Until(s.killAt), 0))
}

// stoppedTimer returns a timer that has not been started.
func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// statusOf returns the command's exit status, or -1 when it did not run.
func statusOf(cmd *exec.Cmd, err error) int {
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
