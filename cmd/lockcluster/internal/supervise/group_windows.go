package supervise

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// run needs Unix process groups to stop everything its command started;
// on Windows it refuses rather than leave work running outside the lock.
var errNoGroups = errors.New("run needs Unix process groups to stop the whole command; it is not supported on Windows")

func inNewGroup(*exec.Cmd) error                   { return errNoGroups }
func signalGroup(int, syscall.Signal) error        { return errNoGroups }
func forwardable(os.Signal) (syscall.Signal, bool) { return 0, false }
func groupGone(int) bool                           { return true }

const (
	sigInt  = syscall.SIGINT
	sigTerm = syscall.SIGTERM
	sigQuit = syscall.SIGQUIT
	sigKill = syscall.SIGKILL
	sigCont = syscall.Signal(0x12)
)

// Signals are the signals run catches while its command runs: only the
// interrupt exists here.
var Signals = []os.Signal{os.Interrupt}

// No guard: run refuses to start a command here (inNewGroup).
type guard struct{}

func startGuard(int, time.Duration, time.Duration, string) (*guard, error) { return nil, errNoGroups }
func (*guard) leaseEnds(time.Time)                                         {}
func (*guard) stopping(time.Time)                                          {}
func (*guard) stoppedGroup() bool                                          { return false }
func (*guard) release()                                                    {}

// RunGuard is never started here.
func RunGuard([]string) int { return 64 }
