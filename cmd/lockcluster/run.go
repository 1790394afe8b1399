package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
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

The command runs as the leader of a process group of its own, and run treats the group as
one: SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGTSTP and SIGWINCH sent to run
are passed on to the whole group (after SIGINT, SIGTERM or SIGQUIT, the group gets SIGKILL
once --grace has passed; after SIGTSTP the group pauses and run keeps the lock). If the lock is lost,
or refreshes keep failing until the lease is about to run out, the group gets SIGTERM,
then SIGKILL after --grace, and the SIGKILL always goes out a sixth of the TTL before the
lease can run out at the backend. That is why --grace may be at most a third of --ttl.
When the command exits while processes it started still run, they get the same SIGTERM
and SIGKILL. The lock is released only once no process of the group is left. (A process
that leaves the group, with setsid or setpgid, leaves run's control too.)

The lock must be seen by the other processes: run refuses --driver memory and a sqlite
driver without --sqlite-path, whose locks no other process sees.

Exit status:
  the command's own status (128+N when it died of signal N), or
  64  bad flags or arguments
  69  the backend could not be reached
  75  the lock is held by someone else (after --wait, if given)
  76  the lock was lost while the command ran (or could not be refreshed before its lease
      ran out)
  126 the command could not be executed
  127 the command was not found
  130 interrupted (SIGINT/SIGTERM) before the command ran
`

// runRun holds a lock while a command runs.
func runRun(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "run", "run --key K --ttl D [--wait D] [--driver NAME] -- COMMAND [ARGS...]", runExamples)
	var df driverFlags
	df.register(fs, e, "cluster")
	fs.Lookup("driver").Usage = "backend shared by the processes to keep apart: cluster (env LOCK_DRIVER), redis (URL from env REDIS_URL)\nor sqlite with --sqlite-path; memory is refused"
	key := fs.String("key", "", "the lock's key (required)")
	ttl := fs.Duration("ttl", 30*time.Second, "lock TTL; refreshed every TTL/3 while the command runs")
	wait := fs.Duration("wait", 0, "wait this long for the lock (0: fail at once when it is held)")
	grace := fs.Duration("grace", defaultGrace, "after SIGTERM, how long the command's process group has before SIGKILL;\nat most a third of --ttl, which is also the default when shorter than 10s")
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
	cfg := df.config(e)
	if err := requireShared(cfg); err != nil {
		return usageError(e, "run", "%v", err)
	}
	margin := *ttl / 6
	if *ttl > 0 && *grace > maxGrace(*ttl) {
		if fs.given("grace") {
			return usageError(e, "run", "--grace %v is too long for --ttl %v: SIGKILL must go out %v (a sixth of the TTL) before the lease can run out, so the grace can be at most a third of the TTL, %v; give a shorter --grace or a longer --ttl",
				*grace, *ttl, margin, maxGrace(*ttl))
		}
		*grace = maxGrace(*ttl)
	}
	say := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(e.stderr, "lockcluster run: "+format+"\n", a...)
		}
	}

	m, err := openManager(ctx, cfg)
	if err != nil {
		say("%v", err)
		return exitCodeFor(err)
	}
	defer m.Close()

	child := -1 // the command's exit status, once it ran
	fn := func(lctx context.Context, l *lock.Lock) error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
		cmd.Env = append(append([]string(nil), e.environ...),
			"LOCK_KEY="+*key, "LOCK_FENCE="+strconv.FormatUint(l.Fence(), 10))
		cmd.WaitDelay = pipeDrain
		// From here on run passes its signals on to the command's group
		// instead of dying of them and leaving the group running.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, runSignals...)
		defer signal.Stop(sigs)
		if lctx.Err() != nil {
			return context.Cause(lctx) // interrupted or lost before the start
		}
		g := &groupRun{cmd: cmd, grace: *grace, margin: margin, lease: l.ExpiresAt, signals: sigs, say: say}
		waitErr, cause, err := g.supervise(lctx)
		if err != nil {
			return err
		}
		child = statusOf(cmd, waitErr)
		if cause == stopLeaseEnding {
			return errLeaseEnding
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
	case errors.Is(err, errLeaseEnding):
		say("stopped the command on %q: %v", *key, err)
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

// defaultGrace is --grace when not given (and a third of --ttl is longer).
const defaultGrace = 10 * time.Second

// maxGrace is the longest --grace that leaves room for SIGKILL a sixth of
// the TTL before the lease's end, without stopping a command whose refresh
// is merely slow: a healthy lock always has about two thirds of its TTL
// left, since it is refreshed every third.
func maxGrace(ttl time.Duration) time.Duration { return ttl / 3 }

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
