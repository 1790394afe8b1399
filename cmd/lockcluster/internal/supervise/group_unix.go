//go:build unix

package supervise

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Process groups: run starts its command as the leader of a new group, so
// that everything the command starts (a shell's pipeline, a job in the
// background) can be signalled and killed at once, and none of it keeps
// working after the lock is gone.

// inNewGroup makes cmd the leader of a process group of its own.
func inNewGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// signalGroup sends sig to every process of group pgid. A group that is
// already empty is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// forwardable turns a signal received by run into the one to pass on.
func forwardable(s os.Signal) (syscall.Signal, bool) {
	sig, ok := s.(syscall.Signal)
	return sig, ok
}

// groupGone reports whether no process of group pgid can still run: the
// group is empty, or (where the system tells, see groupAllZombies) it holds
// only zombies, dead processes that wait for their new parent to reap them.
// Orphaned grandchildren are reparented to init or a subreaper, which may
// be slow to reap them or never do so (PID 1 of a container that is not an
// init), so an empty group cannot be the only sign.
func groupGone(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	return groupAllZombies(pgid)
}

const (
	sigInt  = syscall.SIGINT
	sigTerm = syscall.SIGTERM
	sigQuit = syscall.SIGQUIT
	sigKill = syscall.SIGKILL
	sigCont = syscall.SIGCONT
)

// Signals are the signals run catches while its command runs and passes
// on to the command's group: those whose default action would end or stop
// run and leave the group working without a refreshed lock (SIGTSTP, from
// Ctrl-Z, pauses the group while run keeps the lock), and SIGWINCH, which a
// terminal sends only to run's group.
var Signals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGWINCH,
}
