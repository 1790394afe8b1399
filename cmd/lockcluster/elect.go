package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/cmd/lockcluster/internal/supervise"
	"github.com/zerotal/lock/election"
)

const electExamples = `  # run the scheduler on one host at a time; the others stand by and take over
  lockcluster elect scheduler --value "$(hostname)" -- ./scheduler

  # on a SQLite file shared by the processes of this host, with a 5s lease
  lockcluster elect --driver sqlite --sqlite-path /var/lib/app/locks.db --ttl 5s compactor -- ./compact

  # who leads, and each change as it happens
  lockcluster leader scheduler
  lockcluster leader scheduler --watch`

const electNotes = `elect campaigns for NAME and runs the command while it leads. Candidates wait in arrival
order; the one that leads runs the command with ELECTION_NAME, ELECTION_VALUE and
ELECTION_TERM (strictly increasing: pass it to what must refuse a deposed leader's writes) in
its environment.

The lease is refreshed every TTL/3. If leadership is lost, or refreshes keep failing until
the lease is about to run out, the command's process group gets SIGTERM, then SIGKILL after
--grace and always a sixth of the TTL before the lease can run out; elect then stands again,
and runs the command anew when it leads again. If elect itself dies, even of SIGKILL, or
is stopped (SIGSTOP, a debugger) so that it cannot refresh the lease, a guard process stops
the group the same way, before the next candidate can lead (as for run). When the command
exits on its own, elect resigns (the next candidate leads at once) and exits with the
command's status.
SIGINT and SIGTERM are passed on to the group, and elect resigns once it is gone.

A candidate killed without resigning is replaced once its lease runs out: within --ttl.

Exit status:
  the command's own status (128+N when it died of signal N), or
  64  bad flags or arguments
  69  the backend could not be reached
  77  the backend refused the credentials
  126 the command could not be executed
  127 the command was not found
  130 interrupted before the command ran`

// electOptions are elect's flags.
type electOptions struct {
	driverFlags
	value string
	ttl   time.Duration
	grace time.Duration
	quiet bool
}

func newElectCmd(e *env) *cobra.Command {
	var o electOptions
	cmd, fs := newCommand("elect [flags] NAME -- COMMAND [ARGS...]",
		"run a command on one process at a time: the leader of an election", electExamples, electNotes)
	cmd.Args = cobra.ArbitraryArgs
	cmd.Annotations[annFlagsFirst] = "yes"
	fs.StringVar(&o.value, "value", "", "what this candidate tells the others when it leads (an address, a host name)")
	durationVar(fs, &o.ttl, "ttl", election.DefaultTTL, "the leader's lease, refreshed every TTL/3; a leader killed without resigning is replaced within it")
	durationVar(fs, &o.grace, "grace", defaultGrace, "after SIGTERM, how long the command's process group has before SIGKILL;\nat most a third of --ttl, which is also the default when shorter than 10s")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing of lockcluster's own on stderr")
	o.driverFlags.register(cmd)
	fs.Lookup("driver").Usage = "backend shared by the candidates: cluster, redis (URL from the variable REDIS_URL),\npostgres (LOCKCLUSTER_POSTGRES_URL) or sqlite with --sqlite-path; memory is refused"
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("NAME is required: lockcluster elect NAME -- COMMAND")
		}
		name, argv := args[0], args[1:]
		if len(argv) > 0 && argv[0] == "--" {
			argv = argv[1:]
		}
		if len(argv) == 0 {
			return usagef("a COMMAND to run while leading is required: lockcluster elect %s -- COMMAND", name)
		}
		return runElect(cmd.Context(), e, cmd, &o, name, argv)
	}
	return cmd
}

// elector is one elect: a candidate that runs a command while it leads.
type elector struct {
	e     *env
	o     *electOptions
	name  string
	argv  []string
	child int // the command's last exit status; -1 before it ran
}

func (r *elector) say(format string, a ...any) {
	if !r.o.quiet {
		fmt.Fprintf(r.e.stderr, "lockcluster elect: "+format+"\n", a...)
	}
}

func runElect(ctx context.Context, e *env, cmd *cobra.Command, o *electOptions, name string, argv []string) error {
	r := &elector{e: e, o: o, name: name, argv: argv, child: -1}
	if o.ttl <= 0 || o.grace < 0 {
		return usagef("--ttl must be positive and --grace not negative")
	}
	if o.grace > maxGrace(o.ttl) {
		if given(cmd, "grace") {
			return usagef("--grace %v is too long for --ttl %v: SIGKILL must go out a sixth of the TTL before the lease can run out, so the grace can be at most a third of the TTL, %v",
				o.grace, o.ttl, maxGrace(o.ttl))
		}
		o.grace = maxGrace(o.ttl)
	}
	cfg := o.config(e)
	if err := requireShared(cfg); err != nil {
		return &usageError{msg: err.Error()}
	}
	m, err := openManager(ctx, cfg)
	if err != nil {
		r.say("%s", describeConfig(err))
		return exitStatus(exitCodeFor(err))
	}
	defer closeBounded(m, r.say)
	el, err := election.New(m, name, o.ttl)
	if err != nil {
		r.say("%s", describe(err))
		return exitStatus(exitCodeFor(err))
	}
	for {
		r.say("standing for %q", name)
		l, err := el.Campaign(ctx, o.value)
		if err != nil {
			if ctx.Err() != nil {
				r.say("interrupted while standing for %q", name)
				return exitStatus(exitInterrupted)
			}
			r.say("%s", describe(err))
			return exitStatus(exitCodeFor(err))
		}
		r.say("leading %q at term %d", name, l.Term())
		cause, err := r.lead(l)
		_ = l.Resign(context.WithoutCancel(ctx)) // the group is gone: hand over at once
		switch {
		case err != nil:
			r.say("%s", describe(err))
			return exitStatus(exitCodeFor(err))
		case cause == supervise.None || cause == supervise.Requested:
			r.say("the command exited (status %d); resigned %q", r.child, name)
			return exitStatus(r.child)
		}
		if ctx.Err() != nil {
			return exitStatus(r.child)
		}
		r.say("lost the leadership of %q (term %d); standing again", name, l.Term())
	}
}

// lead runs the command while l lasts, and says why it stopped.
func (r *elector) lead(l *election.Leadership) (supervise.Cause, error) {
	c := exec.Command(r.argv[0], r.argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = r.e.stdin, r.e.stdout, r.e.stderr
	c.Env = append(append([]string(nil), r.e.environ...),
		"ELECTION_NAME="+r.name, "ELECTION_VALUE="+l.Value(), "ELECTION_TERM="+strconv.FormatUint(l.Term(), 10))
	c.WaitDelay = supervise.PipeDrain
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, supervise.Signals...)
	defer signal.Stop(sigs)
	g := &supervise.Group{Cmd: c, Grace: r.o.grace, Margin: r.o.ttl / 6, Lease: l.ExpiresAt, Signals: sigs, Say: r.say, Who: "elect"}
	waitErr, cause, err := g.Supervise(l.Context())
	if err != nil {
		return cause, &cliexplain.StartError{Err: err}
	}
	r.child = supervise.StatusOf(c, waitErr)
	if cause == supervise.Requested && l.Context().Err() != nil && !isInterrupt(context.Cause(l.Context())) {
		// Not a signal (those reach the group through sigs, and do not
		// end the leadership's context): the leadership ended.
		return supervise.Lost, nil
	}
	return cause, nil
}

// isInterrupt reports whether cause is a signal elect received.
func isInterrupt(cause error) bool {
	var sig supervise.Interrupted
	return errors.As(cause, &sig)
}

const leaderNotes = `Prints "value=V term=T remaining=R" for the leader, or "no leader" (exit status 75).
With --watch, one line per change until interrupted (exit status 0): a new term, a new value,
or nobody leading. With -o json each is the HTTP API's lock object (GET /v1/lock) of the
election: {"key":NAME,"holder":VALUE,"fence":TERM,"remaining_ms":...}, without the owner;
fence 0 when nobody leads.`

func newLeaderCmd(e *env) *cobra.Command {
	var d driverFlags
	var watch bool
	var output string
	cmd, fs := newCommand("leader [flags] NAME", "who leads an election: its value, term and lease; --watch for each change",
		electExamples, leaderNotes)
	cmd.Args = cobra.ArbitraryArgs
	fs.BoolVar(&watch, "watch", false, "print each change of leader until interrupted")
	registerOutput(cmd, &output)
	d.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("give the election's NAME: lockcluster leader NAME")
		}
		if err := checkOutputFormat(output); err != nil {
			return err
		}
		// show writes one state: a line, or with -o json an api.Lock
		// (one line each, so that --watch prints JSON lines).
		show := func(l election.Leader, leading bool) {
			switch {
			case output == "json":
				b, _ := json.Marshal(leaderLock(args[0], l, leading))
				fmt.Fprintf(e.stdout, "%s\n", b)
			case leading:
				fmt.Fprintln(e.stdout, leaderLine(l))
			default:
				fmt.Fprintln(e.stdout, "no leader")
			}
		}
		ctx := cmd.Context()
		cfg := d.config(e)
		if err := requireShared(cfg); err != nil {
			return &usageError{msg: err.Error()}
		}
		m, err := openOrExplain(ctx, e, cmd, cfg)
		if err != nil {
			return err
		}
		defer m.Close()
		el, err := election.New(m, args[0], 0)
		if err != nil {
			fmt.Fprintf(e.stderr, "lockcluster leader: %s\n", describe(err))
			return exitStatus(exitCodeFor(err))
		}
		if !watch {
			l, err := el.Leader(ctx)
			if errors.Is(err, election.ErrNoLeader) {
				show(l, false)
				return exitStatus(exitNotAcquired)
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "lockcluster leader: %s\n", describe(err))
				return exitStatus(exitCodeFor(err))
			}
			show(l, true)
			return nil
		}
		for c := range el.Observe(ctx, 0) {
			show(c.Leader, c.Leading)
		}
		return nil
	}
	return cmd
}

func leaderLine(l election.Leader) string {
	return fmt.Sprintf("value=%s term=%d remaining=%s", quoteIfNeeded(l.Value), l.Term, formatDuration(l.Remaining.Round(time.Millisecond)))
}
