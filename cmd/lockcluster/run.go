package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/zerotal/lock"
)

const runExamples = `  # run a backup unless another host is already running one (cluster from LOCK_CLUSTER_ADDRS)
  lockcluster run --key backup --ttl 30s -- ./backup.sh --full

  # wait up to five minutes for the lock, on a SQLite file shared by the processes of this host
  lockcluster run --driver sqlite --sqlite-path /var/lib/app/locks.db --key migrate --ttl 1m --wait 5m -- ./migrate

  # the command sees the key and its fence
  lockcluster run --key report --ttl 10s -- sh -c 'echo "$LOCK_KEY fence $LOCK_FENCE"'

The lock is refreshed every TTL/3 while the command runs, so the TTL only bounds how long
a crashed holder blocks the key. The command's environment gets LOCK_KEY (the key without
prefix) and LOCK_FENCE (strictly increasing per grant: pass it to what you protect).
If the lock is lost while the command runs, the command gets SIGTERM, then SIGKILL after
--grace.

Exit status:
  the command's own status (128+N when it died of signal N), or
  64  bad flags or arguments
  69  the backend could not be reached
  75  the lock is held by someone else (after --wait, if given)
  76  the lock was lost while the command ran
  126 the command could not be executed
  127 the command was not found
  130 interrupted (SIGINT/SIGTERM) before the command ran
`

// runRun holds a lock while a command runs.
func runRun(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "run", "run --key K --ttl D [--wait D] [--driver NAME] -- COMMAND [ARGS...]", runExamples)
	var df driverFlags
	df.register(fs, e, "cluster")
	key := fs.String("key", "", "the lock's key (required)")
	ttl := fs.Duration("ttl", 30*time.Second, "lock TTL; refreshed every TTL/3 while the command runs")
	wait := fs.Duration("wait", 0, "wait this long for the lock (0: fail at once when it is held)")
	grace := fs.Duration("grace", 10*time.Second, "after SIGTERM, how long the command has before SIGKILL")
	quiet := fs.Bool("quiet", false, "print nothing of lockcluster's own on stderr")
	if code, done := parse(fs, e, args); done {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(e, "run", "no command given: lockcluster run --key K --ttl D -- COMMAND")
	}
	if *key == "" {
		return usageError(e, "run", "--key is required")
	}
	if *wait < 0 || *grace < 0 {
		return usageError(e, "run", "--wait and --grace must not be negative")
	}
	say := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(e.stderr, "lockcluster run: "+format+"\n", a...)
		}
	}

	m, err := openManager(ctx, df.config(e))
	if err != nil {
		say("%v", err)
		return exitCodeFor(err)
	}
	defer m.Close()

	child := -1 // the command's exit status, once it ran
	fn := func(lctx context.Context, l *lock.Lock) error {
		cmd := exec.CommandContext(lctx, argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
		cmd.Env = append(append([]string(nil), e.environ...),
			"LOCK_KEY="+*key, "LOCK_FENCE="+strconv.FormatUint(l.Fence(), 10))
		// Lost lock or our own SIGINT/SIGTERM: ask politely first; after
		// the grace, exec kills the process.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = *grace
		err := cmd.Run()
		child = statusOf(cmd, err)
		if child < 0 {
			return err
		}
		return nil
	}
	opts := []lock.Option{lock.WithRefresh()}
	if *wait > 0 {
		err = m.Block(ctx, *key, *ttl, fn, append(opts, lock.WithTimeout(*wait))...)
	} else {
		err = m.Try(ctx, *key, *ttl, fn, opts...)
	}
	switch {
	case errors.Is(err, lock.ErrLost):
		say("lost the lock on %q while the command ran: %v", *key, err)
		return exitLost
	case errors.Is(err, lock.ErrNotAcquired):
		say("%q is held by another owner", *key)
		return exitNotAcquired
	case child >= 0:
		return child
	case ctx.Err() != nil:
		say("interrupted before the command ran")
		return exitInterrupted
	case err != nil:
		say("%v", err)
		return exitCodeFor(err)
	}
	return exitOK
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

// exitCodeFor maps an error that stopped run before the command ran.
func exitCodeFor(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, syscall.ENOENT):
		return exitNotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC):
		return exitCannotExec
	case errors.Is(err, lock.ErrInvalid):
		return exitUsage
	case errors.Is(err, lock.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, lock.ErrNotAcquired):
		return exitNotAcquired
	case errors.Is(err, lock.ErrLost):
		return exitLost
	}
	return exitFailure
}
