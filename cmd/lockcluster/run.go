package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/cmd/lockcluster/internal/supervise"
)

const runExamples = `  # run a backup; if another host runs one, wait until it is done (cluster from LOCKCLUSTER_ENDPOINTS)
  lockcluster run --key backup --ttl 30s -- ./backup.sh --full

  # run it only if nobody else does right now (cron: skip this round rather than queue up)
  lockcluster run --key backup --no-wait -- ./backup.sh

  # wait at most five minutes, on a SQLite file shared by the processes of this host
  lockcluster run --driver sqlite --sqlite-path /var/lib/app/locks.db --key migrate --ttl 1m --timeout 5m -- ./migrate

  # the command sees the key, its fence and the owner token
  lockcluster run --key report --ttl 10s -- sh -c 'echo "$LOCK_KEY fence $LOCK_FENCE owner $LOCK_OWNER"'

  # no command: hold the lock (refreshed) until Ctrl-C, SIGTERM or its loss, then release it
  lockcluster run --key maintenance --ttl 1m

  # at most three exports at once across the hosts (a semaphore, as "consul lock -n 3")
  lockcluster run -n 3 --key exports -- ./export.sh

  # two accounts at once, all or none
  lockcluster run --key account-7 --key account-9 -- ./transfer.sh

  # readers share the catalog, a writer has it alone (as flock -s and flock -x)
  lockcluster run --shared --key catalog -- ./read-catalog.sh
  lockcluster run --exclusive --key catalog -- ./rebuild-catalog.sh`

const runNotes = `Like flock(1), "etcdctl lock" and "consul lock", run waits for the lock by default;
--timeout bounds the wait and --no-wait (or --timeout 0) fails at once when the lock is held.
While it waits, run says so on stderr, with who holds the key (its holder description,
pid<pid>@<host> unless the holder set one) and how long its lease has left, as every backend
tells.

With --key repeated (run --key a --key b -- CMD), run holds every key or none: in one step on
the memory engine, the cluster, SQLite and Redis (one hash slot), else in sorted order (two runs
naming them in other orders never deadlock); the command gets
LOCK_KEYS and LOCK_FENCES (space-separated, in the order given) beside LOCK_KEY and
LOCK_FENCE (the first), and losing any of them stops the command as losing one lock does.

The lock is refreshed every TTL/3 while it is held, so the TTL only bounds how long a crashed
holder blocks the key. The command's environment gets LOCK_KEY (the key without prefix),
LOCK_FENCE (strictly increasing per grant: pass it to what you protect) and LOCK_OWNER (the
grant's owner token, --owner or a fresh one: with it the command can extend or release the
lock itself through the HTTP API).

Without a command, run acquires the lock, prints "key=K owner=O fence=F" on stdout, holds it
until SIGINT or SIGTERM (then releases it and exits 0) or until it is lost (exit status 76).

The command runs as the leader of a process group of its own, and run treats the group as
one: SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGTSTP and SIGWINCH sent to run
are passed on to the whole group (after SIGINT, SIGTERM or SIGQUIT, the group gets SIGKILL
once --grace has passed; after SIGTSTP the group pauses and run keeps the lock). If the lock is lost,
or refreshes keep failing until the lease is about to run out, the group gets SIGTERM,
then SIGKILL after --grace, and the SIGKILL always goes out a sixth of the TTL before the
lease can run out at the backend. That is why --grace may be at most a third of --ttl.
When the command exits while processes it started still run, they get the same SIGTERM
and SIGKILL. The lock is released only once no process of the group is left. (A process
that leaves the group, with setsid or setpgid, leaves run's control too.) If run itself
dies, even of SIGKILL, a small guard process it started beside the command (in a session
of its own) sees it and stops the group the same way, SIGTERM then SIGKILL after --grace,
before the lease that nobody refreshes any more runs out. run tells the guard the lease's
end after each refresh, so the guard also stops the group when run is stopped (SIGSTOP of
run or of its shell job, a debugger) or wedged: SIGTERM, and SIGKILL a sixth of the TTL
before the lease's end, before the next holder can be granted the key; run, continued,
exits 76. A signal to run's shell job does not reach the guard; a cgroup freezer that
freezes the guard too freezes the command with it, and the guard kills the group as soon
as it is thawed. This holds on every Unix; on Windows run refuses to start a command.
The final release is bounded: run waits at most 2s for it, and 2s more for a retry, then
leaves the lock to its TTL.

With --max-hold D, a cap on total hold time, no grant of the lock lasts longer than D, however
well it is refreshed: the backend records the cap when it grants the key and lets no refresh
pass it, so a command that hangs cannot keep the key. The command's process group gets SIGTERM before the cap, then
SIGKILL after --grace and at the latest a sixth of the TTL before the cap, as on a loss;
run then releases the key and exits 76, and if run is wedged too, the backend ends the grant
at the cap. A backend that cannot enforce a cap refuses it (exit status 78). D must be longer
than a fifth of --ttl.

With -n N (N > 1) the key is a semaphore: up to N runs hold it at once, each with its own
fence. With --shared the key is a read/write lock taken for reading: any number of --shared
runs hold it together, never beside an --exclusive one, which holds it alone. Waiting is
first come, first served: a waiting --exclusive run stops new --shared ones, so writers are
never starved. Every run of one key must say the same: a key held as a semaphore of 3 refuses
-n 4, a mutex or a read/write lock (exit status 64, saying what the key is held as) until
nobody holds or waits for it. "lockcluster locks" lists every holder and waiter.

The lock must be seen by the other processes: run refuses the memory driver (also when no
backend is set) and --sqlite-path :memory:, whose locks no other process sees.

Exit status:
  the command's own status (128+N when it died of signal N), or
  0   no command: the lock was held until SIGINT or SIGTERM, and released
  64  bad flags or arguments
  69  the backend could not be reached, or the cluster has no leader
  78  the backend cannot serve -n, --shared, --exclusive or --max-hold (a cluster member of an older release)
  75  the lock is held by someone else (at once with --no-wait, else after --timeout)
  76  the lock was lost while held (or could not be refreshed before its lease ran out, or
      reached its --max-hold)
  77  the backend refused the credentials (the cluster a token, Redis a password)
  126 the command could not be executed
  127 the command was not found
  130 interrupted (SIGINT/SIGTERM) before the command ran`

// runOptions are run's own flags.
type runOptions struct {
	driverFlags
	key     string   // the first of keys, or the one a message is about
	keys    []string // every --key, in the order given
	ttl     time.Duration
	timeout time.Duration
	noWait  bool
	grace   time.Duration
	quiet   bool
	owner   string
	// slots (-n), shared and exclusive choose a semaphore or a side of a
	// read/write lock instead of a mutex.
	slots     int
	shared    bool
	exclusive bool
	// maxHold caps each grant's total hold time (--max-hold); 0: none.
	maxHold time.Duration
}

// claim is the lock option the flags name, if any.
func (o *runOptions) claim() (lock.Option, bool, error) {
	switch {
	case o.slots < 1:
		return lock.Option{}, false, fmt.Errorf("-n must be 1 or more, got %d: %w", o.slots, lock.ErrInvalid)
	case o.shared && o.exclusive:
		return lock.Option{}, false, fmt.Errorf("--shared and --exclusive are the two sides of one lock: give one: %w", lock.ErrInvalid)
	case o.slots > 1 && (o.shared || o.exclusive):
		return lock.Option{}, false, fmt.Errorf("-n makes a semaphore, which has no --shared or --exclusive side: %w", lock.ErrInvalid)
	case o.slots > 1:
		return lock.Semaphore(o.slots), true, nil
	case o.shared:
		return lock.Read(), true, nil
	case o.exclusive:
		return lock.Write(), true, nil
	}
	return lock.Option{}, false, nil
}

func newRunCmd(e *env) *cobra.Command {
	var o runOptions
	cmd, fs := newCommand("run [flags] KEY [-- COMMAND [ARGS...]], or run --key KEY [flags] [-- COMMAND [ARGS...]]",
		"hold a lock while a command runs, or until interrupted", runExamples, runNotes)
	cmd.Long = `run holds a lock while a command runs, and releases it when the command exits; without
a command, it holds the lock until it is interrupted.`
	cmd.Args = cobra.ArbitraryArgs
	cmd.Annotations[annFlagsFirst] = "yes"
	fs.SetInterspersed(false) // what follows the first argument is the command's
	fs.StringArrayVar(&o.keys, "key", nil, "the lock's key (required); repeat it to hold several keys, all or none,\ntaken in sorted order (mutexes only)")
	durationVar(fs, &o.ttl, "ttl", 30*time.Second, "lock TTL; refreshed every TTL/3 while held")
	durationVarP(fs, &o.timeout, "timeout", "w", 0, "wait at most this long for the lock (default: as long as it takes; 0: do not wait)")
	fs.BoolVar(&o.noWait, "no-wait", false, "fail at once (exit status 75) when the lock is held")
	durationVar(fs, &o.grace, "grace", defaultGrace, "after SIGTERM, how long the command's process group has before SIGKILL;\nat most a third of --ttl, which is also the default when shorter than 10s")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing of lockcluster's own on stderr")
	fs.StringVar(&o.owner, "owner", "", "the grant's owner token (default: a fresh random one); the command gets it as LOCK_OWNER")
	fs.IntVarP(&o.slots, "slots", "n", 1, "hold one of N slots of the key: up to N runs at once (a semaphore; 1: a plain lock)")
	fs.BoolVar(&o.shared, "shared", false, "take the key's read side: shared with other --shared runs, never with an --exclusive one")
	fs.BoolVar(&o.exclusive, "exclusive", false, "take the key's write side: alone, and no new --shared run overtakes it while it waits")
	durationVar(fs, &o.maxHold, "max-hold", 0, "hold the lock at most this long however it is refreshed, enforced by the backend:\nthe command is stopped (SIGTERM, SIGKILL after --grace) before the cap (0: no cap)")
	o.driverFlags.register(cmd)
	fs.Lookup("driver").Usage = "backend shared by the processes to keep apart: cluster, redis (URL from the variable\nREDIS_URL), postgres (LOCKCLUSTER_POSTGRES_URL) or sqlite with --sqlite-path; memory is refused"
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		args, err := o.keyFromArgs(cmd, args)
		if err != nil {
			return err
		}
		return runRun(cmd.Context(), e, cmd, &o, args)
	}
	return cmd
}

// keyFromArgs takes the key from the first argument when --key is not
// given (run KEY -- COMMAND, as etcdctl lock NAME COMMAND), reads the flags
// that follow it, and returns the command: what follows "--", or the
// arguments after the key.
func (o *runOptions) keyFromArgs(cmd *cobra.Command, args []string) ([]string, error) {
	if len(o.keys) > 0 || len(args) == 0 || cmd.ArgsLenAtDash() == 0 {
		// --key given, or "--" came first: everything is the command
		// (and a missing key is runRun's to report).
		return args, nil
	}
	o.keys = []string{args[0]}
	if err := cmd.Flags().Parse(args[1:]); err != nil {
		return nil, flagError(cmd, err)
	}
	rest := cmd.Flags().Args()
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	return rest, nil
}

// errLeaseEnding is what run's callback returns when it stopped the command
// because the lock could not be refreshed in time (exit status 76).
var errLeaseEnding = errors.New("the lock could not be refreshed and its lease was about to run out at the backend")

// errMaxHold is what run's callback returns when it stopped the command
// because the lock was about to reach its --max-hold (exit status 76).
var errMaxHold = errors.New("the lock was about to reach its cap on total hold time (--max-hold), which no refresh extends")

// waitForever is the wait of a run without --timeout.
const waitForever = 100 * 365 * 24 * time.Hour

// runRun holds the lock while argv runs, or, without argv, until
// interrupted.
func runRun(ctx context.Context, e *env, cmd *cobra.Command, o *runOptions, argv []string) error {
	r := &runner{e: e, o: o, argv: argv, child: -1}
	wait, err := r.check(cmd)
	if err != nil {
		return err
	}
	m, err := openManager(ctx, r.cfg)
	if err != nil {
		r.say("%s", describeConfig(err))
		return exitStatus(exitCodeFor(err))
	}
	defer closeBounded(m, r.say)
	start := time.Now()
	err = r.acquire(ctx, m, wait)
	return r.exit(ctx, m, err, wait, time.Since(start))
}

// runner is one run of a command under a lock.
type runner struct {
	e      *env
	o      *runOptions
	argv   []string
	cfg    lock.Config
	margin time.Duration // SIGKILL goes out this long before the lease ends

	ran   bool // the lock was granted and the callback ran
	child int  // the command's exit status, once it ran; -1 before
	note  waitNote
}

// say prints a line of run's own on stderr, unless --quiet.
func (r *runner) say(format string, a ...any) {
	if !r.o.quiet {
		fmt.Fprintf(r.e.stderr, "lockcluster run: "+format+"\n", a...)
	}
}

// check refuses flags that do not fit together, fills in the backend's
// Config and the grace, and returns how long to wait for the lock.
func (r *runner) check(cmd *cobra.Command) (time.Duration, error) {
	o := r.o
	if len(o.keys) == 0 || o.keys[0] == "" {
		return 0, usagef("--key is required")
	}
	o.key = o.keys[0]
	if _, claimed, _ := o.claim(); claimed && len(o.keys) > 1 {
		return 0, usagef("several --key are held as plain locks: -n, --shared and --exclusive take one key")
	}
	if o.timeout < 0 || o.grace < 0 || o.maxHold < 0 {
		return 0, usagef("--timeout, --grace and --max-hold must not be negative")
	}
	if o.maxHold > 0 && o.maxHold <= o.ttl/5 {
		return 0, usagef("--max-hold %v is too short for --ttl %v: the command is told a fifth of the TTL (%v) before the cap; give a longer --max-hold or a shorter --ttl",
			o.maxHold, o.ttl, o.ttl/5)
	}
	wait, err := o.waitLimit(cmd)
	if err != nil {
		return 0, err
	}
	if _, _, err := o.claim(); err != nil {
		return 0, &usageError{msg: strings.TrimSuffix(err.Error(), ": "+lock.ErrInvalid.Error())}
	}
	r.cfg = o.config(r.e)
	if err := requireShared(r.cfg); err != nil {
		return 0, &usageError{msg: err.Error()}
	}
	r.margin = o.ttl / 6
	if o.ttl > 0 && o.grace > maxGrace(o.ttl) {
		if given(cmd, "grace") {
			return 0, usagef("--grace %v is too long for --ttl %v: SIGKILL must go out %v (a sixth of the TTL) before the lease can run out, so the grace can be at most a third of the TTL, %v; give a shorter --grace or a longer --ttl",
				o.grace, o.ttl, r.margin, maxGrace(o.ttl))
		}
		o.grace = maxGrace(o.ttl)
	}
	return wait, nil
}

// holding is the callback run holds the lock for: the command, under
// supervision, or nothing until interrupted.
func (r *runner) holding(lctx context.Context, l *lock.Lock) error {
	return r.holdingAll(lctx, []*lock.Lock{l})
}

// holdingAll is holding for every lock of several --key.
func (r *runner) holdingAll(lctx context.Context, locks []*lock.Lock) error {
	r.ran = true
	r.note.granted()
	if len(r.argv) == 0 {
		return hold(lctx, r.e, locks, r.say)
	}
	first := locks[0]
	c := exec.Command(r.argv[0], r.argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = r.e.stdin, r.e.stdout, r.e.stderr
	c.Env = append(append([]string(nil), r.e.environ...),
		"LOCK_KEY="+first.Key(), "LOCK_FENCE="+strconv.FormatUint(first.Fence(), 10), "LOCK_OWNER="+first.Owner())
	if len(locks) > 1 {
		keys, fences := make([]string, len(locks)), make([]string, len(locks))
		for i, l := range locks {
			keys[i], fences[i] = l.Key(), strconv.FormatUint(l.Fence(), 10)
		}
		c.Env = append(c.Env, "LOCK_KEYS="+strings.Join(keys, " "), "LOCK_FENCES="+strings.Join(fences, " "))
	}
	c.WaitDelay = supervise.PipeDrain
	// From here on run passes its signals on to the command's group
	// instead of dying of them and leaving the group running.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, supervise.Signals...)
	defer signal.Stop(sigs)
	if lctx.Err() != nil {
		return context.Cause(lctx) // interrupted or lost before the start
	}
	g := &supervise.Group{Cmd: c, Grace: r.o.grace, Margin: r.margin, Lease: earliestExpiry(locks), Cap: earliestCap(locks), Signals: sigs, Say: r.say, Who: "run"}
	waitErr, cause, err := g.Supervise(lctx)
	if err != nil {
		return &cliexplain.StartError{Err: err}
	}
	r.child = supervise.StatusOf(c, waitErr)
	switch cause {
	case supervise.LeaseEnding:
		return errLeaseEnding
	case supervise.MaxHold:
		return errMaxHold
	}
	return nil
}

// earliestCap is the earliest of locks' caps on total hold time
// (Lock.MaxHoldAt), or the zero time when they have none.
func earliestCap(locks []*lock.Lock) func() time.Time {
	return func() time.Time {
		var first time.Time
		for _, l := range locks {
			if t := l.MaxHoldAt(); !t.IsZero() && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
		return first
	}
}

// earliestExpiry is the estimated end of the first of locks' leases to
// end (the zero time once one is gone): the command must stop before it.
func earliestExpiry(locks []*lock.Lock) func() time.Time {
	return func() time.Time {
		var first time.Time
		for _, l := range locks {
			t := l.ExpiresAt()
			if t.IsZero() {
				return t
			}
			if first.IsZero() || t.Before(first) {
				first = t
			}
		}
		return first
	}
}

// acquire takes the lock (every --key), waiting up to wait, and runs
// holding under it.
func (r *runner) acquire(ctx context.Context, m *lock.Manager, wait time.Duration) error {
	o := r.o
	opts := []lock.Option{lock.WithRefresh(), lock.WithReleaseTimeout(finalRelease)}
	if o.owner != "" {
		opts = append(opts, lock.WithOwner(o.owner))
	}
	if o.maxHold > 0 {
		opts = append(opts, lock.WithMaxHold(o.maxHold))
	}
	if c, ok, err := o.claim(); err != nil {
		return err
	} else if ok {
		opts = append(opts, c)
	}
	try := func() error { return m.Try(ctx, o.key, o.ttl, r.holding, opts...) }
	block := func() error { return m.Block(ctx, o.key, o.ttl, r.holding, append(opts, lock.WithTimeout(wait))...) }
	if len(o.keys) > 1 {
		try = func() error { return r.blocker(m.TryAll(ctx, o.keys, o.ttl, r.holdingAll, opts...)) }
		block = func() error {
			return r.blocker(m.BlockAll(ctx, o.keys, o.ttl, r.holdingAll, append(opts, lock.WithTimeout(wait))...))
		}
	}
	switch wait {
	case 0:
		return try()
	case waitForever:
		// Try first: a free lock is taken at once, and a backend that
		// cannot be reached is reported without a wait's longer time
		// budget.
		err := try()
		if !errors.Is(err, lock.ErrNotAcquired) || r.ran {
			return err
		}
		na, _ := errors.AsType[*lock.NotAcquiredError](err)
		msg := fmt.Sprintf("%q is held by another owner%s", o.key, holderNamed(na))
		if left, ok := refusedLeft(ctx, m, o.key, na); ok {
			msg += "; its lease " + leaseEnds(left)
		}
		r.say("%s; waiting", msg)
		return block()
	}
	// The wait bounds the whole acquisition, so Block at once; say that
	// run waits if the lock is not granted within a second.
	stop := r.note.after(time.Second, func(nctx context.Context) string {
		if left, ok := holderLeft(nctx, m, o.key); ok {
			return fmt.Sprintf("waiting for %q, up to %s; it is held by another owner, whose lease %s", o.key, formatDuration(wait), leaseEnds(left))
		}
		return fmt.Sprintf("waiting for %q, up to %s", o.key, formatDuration(wait))
	}, r.say)
	defer stop()
	return block()
}

// blocker makes the key a NotAcquiredError of several --key names the one
// run's messages speak of: the key that was held.
func (r *runner) blocker(err error) error {
	if na, ok := errors.AsType[*lock.NotAcquiredError](err); ok {
		r.o.key = na.Key
	}
	return err
}

// exit says what became of the run and returns its exit status.
func (r *runner) exit(ctx context.Context, m *lock.Manager, err error, wait, waited time.Duration) error {
	switch {
	case (errors.Is(err, lock.ErrLost) || errors.Is(err, errLeaseEnding) || errors.Is(err, errMaxHold)) && r.child >= 0:
		// Why was said as the group got its SIGTERM (supervise.Group).
		r.say("the command's process group is gone; exit status %d (lock lost)", exitLost)
		return exitStatus(exitLost)
	case errors.Is(err, lock.ErrLost):
		r.say("%s", describe(err)) // lost "K" (fence F): why
		return exitStatus(exitLost)
	case errors.Is(err, errLeaseEnding), errors.Is(err, errMaxHold):
		r.say("stopped the command on %q: %v", r.o.key, err)
		return exitStatus(exitLost)
	case errors.Is(err, lock.ErrNotAcquired) && !r.ran:
		// A wait that ran out may have failed to reach the cluster at all.
		if msg, code, ok := explainManager(ctx, m, r.cfg); ok {
			r.say("%s", msg)
			return exitStatus(code)
		}
		r.say("%s", r.o.notAcquired(ctx, m, err, wait, waited))
		return exitStatus(exitNotAcquired)
	case r.child >= 0:
		return exitStatus(r.child)
	case err == nil:
		return nil
	case ctx.Err() != nil && !r.ran:
		r.say("interrupted while waiting for %q, after %s", r.o.key, formatDuration(waited.Round(time.Millisecond)))
		return exitStatus(exitInterrupted)
	case errors.Is(err, lock.ErrUnavailable):
		if msg, code, ok := explainManager(ctx, m, r.cfg); ok {
			r.say("%s", msg)
			return exitStatus(code)
		}
	}
	r.say("%s", describe(err))
	return exitStatus(exitCodeFor(err))
}

// waitLimit is how long run waits for the lock: waitForever by default, 0
// with --no-wait, else --timeout. A --timeout and a --no-wait from the same
// source contradict each other; the command line wins over the
// environment.
func (o *runOptions) waitLimit(cmd *cobra.Command) (time.Duration, error) {
	t, n := cliflags.FlagSource(cmd, "timeout"), cliflags.FlagSource(cmd, "no-wait")
	switch {
	case o.noWait && t != cliflags.Unset && t == n:
		return 0, usagef("--no-wait and --timeout contradict each other: give one")
	case o.noWait && n >= t:
		return 0, nil
	case t != cliflags.Unset:
		return o.timeout, nil
	}
	return waitForever, nil
}

// notAcquired says that the lock was not acquired: how long run waited,
// how long the holder has left when the backend tells, and how to wait
// longer.
func (o *runOptions) notAcquired(ctx context.Context, m *lock.Manager, err error, wait, waited time.Duration) string {
	na, _ := errors.AsType[*lock.NotAcquiredError](err)
	var b strings.Builder
	fmt.Fprintf(&b, "%q is held by another owner%s", o.key, holderNamed(na))
	switch {
	case wait == 0 && o.noWait:
		b.WriteString("; did not wait (--no-wait)")
	case wait == 0:
		b.WriteString("; did not wait (--timeout 0)")
	default:
		fmt.Fprintf(&b, "; gave up after waiting %s (--timeout %s)", formatDuration(waited.Round(time.Millisecond)), formatDuration(wait))
	}
	if left, ok := refusedLeft(ctx, m, o.key, na); ok {
		b.WriteString("; the holder's lease " + leaseEnds(left))
	}
	switch {
	case wait == 0 && o.noWait:
		b.WriteString("; to wait for it, leave out --no-wait, or give a --timeout")
	case wait == 0:
		b.WriteString("; to wait for it, give a longer --timeout, or none to wait as long as it takes")
	default:
		b.WriteString("; to wait longer, give a longer --timeout, or none to wait as long as it takes")
	}
	return b.String()
}

// waitNote says, once, that run waits for the lock, unless the lock is
// granted first.
type waitNote struct {
	mu   sync.Mutex
	done bool // granted, or said
}

// granted records that the lock was granted: nothing is said after it.
func (n *waitNote) granted() {
	n.mu.Lock()
	n.done = true
	n.mu.Unlock()
}

// after says msg() after d unless the lock was granted by then; msg's
// context ends when the returned stop is called. stop returns once
// nothing more can be said.
func (n *waitNote) after(d time.Duration, msg func(context.Context) string, say func(string, ...any)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	fired := make(chan struct{})
	t := time.AfterFunc(d, func() {
		defer close(fired)
		text := msg(ctx) // may ask the backend: outside the lock
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.done {
			n.done = true
			say("%s", text)
		}
	})
	return func() {
		n.granted() // the wait is over either way
		cancel()
		if !t.Stop() {
			<-fired
		}
	}
}

// lockGetter reads a held key's holder and remaining time (a
// *client.Client does).
type lockGetter interface {
	Get(ctx context.Context, key string) (api.Lock, bool, error)
}

// holderNamed is " (deploy@host-3)" when the refusal na says who holds
// the key, "" otherwise.
func holderNamed(na *lock.NotAcquiredError) string {
	if na == nil || na.Holder == "" {
		return ""
	}
	return " (" + na.Holder + ")"
}

// refusedLeft is how long the holder has left as the refusal na tells it,
// or, when it does not, as the backend tells it now (holderLeft).
func refusedLeft(ctx context.Context, m *lock.Manager, key string, na *lock.NotAcquiredError) (time.Duration, bool) {
	if na != nil && na.HolderTTL > 0 {
		return na.HolderTTL, true
	}
	return holderLeft(ctx, m, key)
}

// holderLeft is how long the holder of key has before its lease ends
// unless refreshed, when the backend tells (the cluster does).
func holderLeft(ctx context.Context, m *lock.Manager, key string) (time.Duration, bool) {
	g, ok := m.Driver().(lockGetter)
	if !ok {
		return 0, false
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, found, err := g.Get(gctx, m.Prefix()+key)
	if err != nil || !found {
		return 0, false
	}
	return info.Remaining, true
}

// leaseEnds says when a lease of d ends: "ends in 17.6s unless it is
// refreshed".
func leaseEnds(d time.Duration) string {
	return "ends in " + formatDuration(d.Round(100*time.Millisecond)) + " unless it is refreshed"
}

// hold is run without a command: it says what it holds on stdout, a line
// per key, and holds it until ctx ends. A signal ends it with a release
// (nil); a loss comes back from Try or Block as the *LostError.
func hold(ctx context.Context, e *env, locks []*lock.Lock, say func(string, ...any)) error {
	names := make([]string, len(locks))
	for i, l := range locks {
		fmt.Fprintf(e.stdout, "key=%s owner=%s fence=%d\n", quoteIfNeeded(l.Key()), quoteIfNeeded(l.Owner()), l.Fence())
		names[i] = strconv.Quote(l.Key())
	}
	what := strings.Join(names, ", ")
	say("holding %s until SIGINT or SIGTERM (refreshed every %s)", what, formatDuration((locks[0].TTL() / 3).Round(time.Millisecond)))
	<-ctx.Done()
	var sig supervise.Interrupted
	if errors.As(context.Cause(ctx), &sig) {
		say("%s: releasing %s", strings.ToLower(sig.Sig.String()), what)
	}
	return nil
}

// quoteIfNeeded quotes s when a shell's word splitting or a key=value
// reader would not take it as it is.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == '=' || r == '\'' || r > '~' }) {
		return strconv.Quote(s)
	}
	return s
}

// finalRelease bounds run's release of the lock at its end, and then again
// the release retried in the background: a backend that does not answer
// holds run up for at most twice this, and the lock expires by its TTL.
const finalRelease = 2 * time.Second

// closeBounded closes m once the releases it sends in the background are
// done, or finalRelease has passed.
func closeBounded(m *lock.Manager, say func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), finalRelease)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		say("the release of the lock got no answer in %s; it expires by its TTL", formatDuration(finalRelease))
	}
	_ = m.Close()
}

// defaultGrace is --grace when not given (and a third of --ttl is longer).
const defaultGrace = 10 * time.Second

// maxGrace is the longest --grace that leaves room for SIGKILL a sixth of
// the TTL before the lease's end, without stopping a command whose refresh
// is merely slow: a healthy lock always has about two thirds of its TTL
// left, since it is refreshed every third.
func maxGrace(ttl time.Duration) time.Duration { return ttl / 3 }
