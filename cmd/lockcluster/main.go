// Command lockcluster runs and talks to a zerotal lock cluster: a node
// (agent), a three-node cluster on loopback for development (dev), the
// admin commands (status, locks, join, leave), a command runner that holds
// a lock while a program runs, or holds it until interrupted (run), and a
// load generator (bench).
//
// Settings can also come from the environment, as LOCKCLUSTER_ and the
// flag's name ("--endpoints": LOCKCLUSTER_ENDPOINTS): the connection
// settings of the client commands, and every flag of agent and dev; the
// command line wins. Run "lockcluster --help" or "lockcluster COMMAND --help" for the
// details, and see docs/CLI.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/cmd/lockcluster/internal/supervise"
)

// Exit statuses: see cliexplain, which maps errors to them.
const (
	exitOK          = cliexplain.ExitOK
	exitFailure     = cliexplain.ExitFailure
	exitUsage       = cliexplain.ExitUsage
	exitRefused     = cliexplain.ExitRefused
	exitNoMember    = cliexplain.ExitNoMember
	exitUnavailable = cliexplain.ExitUnavailable
	exitNotAcquired = cliexplain.ExitNotAcquired
	exitLost        = cliexplain.ExitLost
	exitNoPerm      = cliexplain.ExitNoPerm
	exitConfig      = cliexplain.ExitConfig
	exitCannotExec  = cliexplain.ExitCannotExec
	exitNotFound    = cliexplain.ExitNotFound
	exitInterrupted = cliexplain.ExitInterrupted
)

// env is what a command may touch of the outside world; tests pass their
// own.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// environ is the process environment handed to child processes.
	environ []string
	// self is how a user runs this program from where they are (for the
	// hints lockcluster prints): "lockcluster" when it is on the PATH.
	self string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervise.GuardArg {
		os.Exit(supervise.RunGuard(os.Args[2:])) // started by run beside its command
	}
	// SIGINT/SIGTERM cancel ctx: every command shuts down cleanly on it.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		// The cause lets run tell a signal, which it passes on to its
		// command as it is, from other ends of its context.
		cancel(supervise.Interrupted{Sig: sig})
		// After the first signal, a second one kills the process at once
		// (the default action), should a graceful stop hang. (run
		// catches them itself while its command runs, to pass them on.)
		signal.Stop(sigs)
	}()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		environ: os.Environ(), self: selfName()}
	code := dispatch(ctx, e, os.Args[1:])
	signal.Stop(sigs)
	os.Exit(code)
}

// dispatch runs the command line args and returns the exit status. Every
// error a command returns is printed here, once, with the command's name.
func dispatch(ctx context.Context, e *env, args []string) int {
	root := newRootCmd(e)
	root.SetArgs(cliflags.SingleDash(root, args))
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var done exitStatus
	if errors.As(err, &done) {
		return int(done)
	}
	name := "lockcluster"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(e.stderr, "%s: %s\n", name, cliexplain.InFlagTerms(strings.TrimRight(err.Error(), "\n")))
		fmt.Fprintf(e.stderr, "Run \"%s --help\" for usage.\n", name)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "%s: %s\n", name, cliexplain.InFlagTerms(describe(err)))
	return exitCodeFor(err)
}

// exitStatus ends a command that has already said what happened.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// selfName is how a user runs this binary: "lockcluster" when the PATH
// finds this very file, "go run ./cmd/lockcluster" for a binary "go run"
// built, and else the path it was started by ("bin/lockcluster").
func selfName() string {
	exe, err := os.Executable()
	if err != nil {
		return "lockcluster"
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/lockcluster"
	}
	if onPath, err := exec.LookPath("lockcluster"); err == nil {
		if sameFile(onPath, exe) {
			return "lockcluster"
		}
	}
	if len(os.Args) > 0 && strings.ContainsRune(os.Args[0], filepath.Separator) {
		return os.Args[0]
	}
	return "lockcluster"
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
