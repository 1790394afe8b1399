// Command lockcluster runs and talks to a zerotal lock cluster: a node
// (agent), a three-node cluster on loopback for development (dev), the
// admin commands (status, locks, join, leave), a command runner that holds
// a lock while a program runs (run), and a load generator (bench).
//
// Run "lockcluster help" or "lockcluster COMMAND --help" for the details.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses. run passes the command's own status through; these are
// the ones lockcluster itself chooses (the sysexits.h numbers where one
// fits).
const (
	exitOK          = 0
	exitFailure     = 1  // anything else that went wrong
	exitUsage       = 64 // bad flags or arguments (EX_USAGE)
	exitUnavailable = 69 // the backend could not be reached (EX_UNAVAILABLE)
	exitNotAcquired = 75 // run: the lock is held by someone else (EX_TEMPFAIL)
	exitLost        = 76 // run: the lock was lost while the command ran
	exitCannotExec  = 126
	exitNotFound    = 127
	exitInterrupted = 130 // 128+SIGINT, as shells report it
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
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

func commands() []command {
	return []command{
		{"agent", "run one cluster node", runAgent},
		{"dev", "run a three-node cluster on loopback in this process", runDev},
		{"status", "show every node's raft state and the leader", runStatus},
		{"locks", "list held locks with owner, fence, expiry and waiters", runLocks},
		{"join", "add a node to the cluster", runJoin},
		{"leave", "remove a node from the cluster", runLeave},
		{"run", "hold a lock while a command runs", runRun},
		{"bench", "measure acquire/release cycles per second on any driver", runBench},
	}
}

func main() {
	// SIGINT/SIGTERM cancel ctx: every command shuts down cleanly on it.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel(interrupted{sig})
		// After the first signal, a second one kills the process at once
		// (the default action), should a graceful stop hang. (run
		// catches them itself while its command runs, to pass them on.)
		signal.Stop(sigs)
	}()
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ()}
	code := dispatch(ctx, e, os.Args[1:])
	signal.Stop(sigs)
	os.Exit(code)
}

// interrupted is the cause of main's context when a signal ended it, so
// that run can tell a signal, which it passes on to its command as it is,
// from other ends of its context.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return i.sig.String() + " signal received" }

// dispatch runs the subcommand named by args[0] and returns the exit status.
func dispatch(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return dispatch(ctx, e, []string{args[1], "--help"})
		}
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "lockcluster: unknown command %q\n\n", name)
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `lockcluster: distributed locks on a three-node Raft cluster.

Usage:
  lockcluster COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Try it:
  lockcluster dev --demo                        # three nodes on 127.0.0.1, with a short demo
  export LOCK_CLUSTER_ADDRS=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
  lockcluster status
  lockcluster run --key backup --ttl 30s -- ./backup.sh

Run "lockcluster COMMAND --help" for a command's flags and examples.
`)
}
