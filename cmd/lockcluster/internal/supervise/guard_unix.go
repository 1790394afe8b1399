//go:build unix

package supervise

import (
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
// session of its own, which holds the read end of a pipe whose write end
// only run has. However run ends (SIGKILL included, which it cannot catch),
// the kernel closes that end; the guard reads EOF and stops the command's
// group: SIGTERM, then SIGKILL after the grace. Its grace is at most a
// third of the TTL, and a lock is refreshed every third, so the group is
// gone before the lease that run can no longer refresh runs out at the
// backend. When run ends the group itself, it tells the guard first (one
// byte), and the guard exits doing nothing. This works the same on every
// Unix; it needs no parent-death signal (Linux only, and tied to the
// thread that started the process) and no subreaper.
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

// startGuard starts the guard of group pgid.
func startGuard(pgid int, grace time.Duration) (*guard, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe, GuardArg, strconv.Itoa(pgid), grace.String())
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Stderr = os.Stderr
	// A session of its own: a terminal's Ctrl-C, or a signal to run's
	// group, does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	return &guard{cmd: cmd, w: w}, nil
}

// release tells the guard that run is done with the group; the guard
// exits on its own, and is reaped in the background so that the lock's
// release does not wait for it (a guard that has not exited within five
// seconds is killed: the group is gone already).
func (g *guard) release() {
	_, _ = g.w.Write([]byte{'x'})
	_ = g.w.Close()
	go func() {
		t := time.AfterFunc(5*time.Second, func() { _ = g.cmd.Process.Kill() })
		defer t.Stop()
		_ = g.cmd.Wait()
	}()
}

// RunGuard is the guard's main (args after GuardArg: the group and the
// grace). It returns the process's exit status.
func RunGuard(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "lockcluster: the run guard is started by lockcluster run only")
		return 64
	}
	pgid, err := strconv.Atoi(args[0])
	grace, gerr := time.ParseDuration(args[1])
	if err != nil || gerr != nil || pgid <= 1 {
		fmt.Fprintln(os.Stderr, "lockcluster: the run guard is started by lockcluster run only")
		return 64
	}
	// Signals meant for run's terminal or group are not the guard's.
	ignoreSignals()
	pipe := os.NewFile(3, "run")
	var b [1]byte
	if n, err := pipe.Read(b[:]); n == 1 || (err != nil && !errors.Is(err, io.EOF)) {
		return 0 // run is done with the group (or the pipe was never ours)
	}
	fmt.Fprintf(os.Stderr, "lockcluster run: run ended while its command ran: stopping its process group %d (SIGTERM, SIGKILL after %s)\n", pgid, grace)
	_ = signalGroup(pgid, sigTerm)
	_ = signalGroup(pgid, sigCont)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && !groupGone(pgid) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = signalGroup(pgid, sigKill)
	return 0
}

func ignoreSignals() { signal.Ignore(Signals...) }
