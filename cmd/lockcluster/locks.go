package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/drivers"
)

const locksExamples = `  lockcluster locks --endpoints 127.0.0.1:7001
  lockcluster locks --prefix jobs/ --limit 50
  lockcluster locks --holder web-1   # the keys web-1 holds or waits for, and whom it waits for
  lockcluster locks --driver sqlite --sqlite-path /var/lib/app/locks.db -o json
  REDIS_URL=redis://127.0.0.1:6379/0 lockcluster locks`

const locksNotes = `The backend is chosen as run and a program choose it (lock.ConfigFromEnv): --driver, or the
one whose setting is given. The memory driver is refused (exit status 64): its locks live in the
process that holds them, and this one holds none. Keys are shown as the library names them:
without the key prefix LOCKCLUSTER_PREFIX (by default "zerotal_lock:" on sqlite and redis, none
on the cluster), and only the keys under it. On Redis every node's keyspace is scanned, at most
1,048,576 keys each; past that the list says it is truncated.

Below the table, who waits for whom: each waiter of a key (named by its holder, or its owner when it
names none) waits for each holder of the key, and waits that go round in a cycle are flagged: none of
those will be let in while all of them hold on. GET /v1/locks and the node's page /ui show the same
edges (api.WaitsFor), computed from the listed keys: where a backend does not tell its waiters in
order, none are shown. At most 10,000 edges are shown (api.MaxWaitEdges: a semaphore's edges are its
holders times its waiters), the first waiters of every key first; past that the list says more edges
are not shown, and the cycles are those among the edges shown.`

// locksOptions are locks' flags: the backend's (without the key prefix:
// --prefix filters the listing), and the listing's.
type locksOptions struct {
	driverFlags
	timeout time.Duration
	output  string
	prefix  string
	holder  string
	limit   int
}

func newLocksCmd(e *env) *cobra.Command {
	var o locksOptions
	cmd, fs := newCommand("locks [flags]", "list held locks: every holder with its fence and expiry, and the waiters",
		locksExamples, locksNotes)
	o.noKeyPrefix = true
	o.driverFlags.register(cmd)
	fs.Lookup("driver").Usage = "backend to list: cluster, sqlite with --sqlite-path, redis (URL from the variable\nREDIS_URL) or postgres (LOCKCLUSTER_POSTGRES_URL); unset, the one whose setting is given; memory is refused"
	durationVar(fs, &o.timeout, "timeout", 10*time.Second, "give up after this long")
	registerOutput(cmd, &o.output)
	fs.StringVar(&o.prefix, "prefix", "", "only keys starting with this (keys are named as written: \"deploy\" from lockcluster run,\nthe HTTP API and the Go API is one lock)")
	fs.StringVar(&o.holder, "holder", "", "only keys a holder or owner containing this holds or waits for, and their waits")
	fs.IntVar(&o.limit, "limit", 1000, fmt.Sprintf("list at most this many keys (at most %d)", lock.MaxListLimit))
	cliflags.NoEnv(cmd, "prefix", "it filters this listing, and LOCKCLUSTER_PREFIX is an application's key prefix")
	cliflags.NoEnv(cmd, "holder", "it filters this listing")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if o.limit <= 0 || o.limit > lock.MaxListLimit {
			return usagef("--limit must be 1 to %d", lock.MaxListLimit)
		}
		if err := checkOutputFormat(o.output); err != nil {
			return err
		}
		return runLocks(cmd.Context(), e, cmd, &o)
	}
	return cmd
}

// errNothingToList is locks' refusal of a backend whose locks live in the
// process that holds them: a new process has none of another's to list.
var errNothingToList = errors.New("locks lists a backend that processes share: " +
	"--driver cluster with --endpoints (or LOCKCLUSTER_ENDPOINTS), --driver redis with REDIS_URL, " +
	"--driver postgres with LOCKCLUSTER_POSTGRES_URL, or --driver sqlite with --sqlite-path FILE (or LOCKCLUSTER_SQLITE_PATH)")

// runLocks lists the held keys through the backend's Manager.
func runLocks(ctx context.Context, e *env, cmd *cobra.Command, o *locksOptions) error {
	cfg := o.config(e)
	if why, private := privateBackend(cfg); private {
		return &usageError{msg: why + ": " + errNothingToList.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	m, err := openOrExplain(ctx, e, cmd, cfg)
	if err != nil {
		return err
	}
	defer m.Close()
	listed, truncated, err := m.List(ctx, o.prefix, o.limit)
	if err != nil {
		if errors.Is(err, lock.ErrUnavailable) {
			// The cluster's nodes say why ("no leader"), in a moment more
			// than --timeout, not as long again.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(time.Second, o.timeout))
			defer cancel()
			if msg, code, ok := explainManager(pctx, m, cfg); ok {
				fmt.Fprintf(e.stderr, "%s: %s\n", cmd.CommandPath(), msg)
				return exitStatus(code)
			}
		}
		return err
	}
	locks := make([]api.Lock, len(listed))
	for i, l := range listed {
		locks[i] = apiLock(l)
	}
	list := api.ListOf(locks, truncated, o.holder)
	locks = list.Locks
	if o.output == "json" {
		// The schema of GET /v1/locks: key, owner, fence, remaining_ms,
		// and the wait-for edges and cycles.
		printJSON(e.stdout, list)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tKIND\tHOLDER\tOWNER\tFENCE\tEXPIRES IN\tWAITERS")
	for _, l := range locks {
		printLockRows(tw, l)
	}
	_ = tw.Flush()
	switch {
	case truncated && len(locks) >= o.limit:
		fmt.Fprintf(e.stdout, "(truncated at %d keys: use --prefix or --limit)\n", o.limit)
	case truncated:
		// A bound of the backend's own: a Redis scan, a cluster's answer
		// size. --limit would not help.
		fmt.Fprintf(e.stdout, "(truncated: the backend stopped looking before %d keys; more may be held)\n", o.limit)
	}
	if len(locks) == 0 && !truncated {
		fmt.Fprintln(e.stdout, "(no locks held)")
	}
	printWaits(e.stdout, list)
	return nil
}

// printWaits prints who waits for whom, and the cycles, when any waits.
func printWaits(w io.Writer, list api.LockList) {
	if len(list.Edges) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAITER\tWAITS FOR\tKEY\t")
	for _, e := range list.Edges {
		flag := ""
		if e.InCycle {
			flag = "cycle"
		}
		fmt.Fprintf(tw, "%s\t%s\t%q\t%s\n", e.From, e.To, e.Key, flag)
	}
	_ = tw.Flush()
	if list.EdgesTruncated {
		fmt.Fprintf(w, "(more edges not shown: only the first %d waits, the first waiters of every key first; the cycles are among those shown)\n", api.MaxWaitEdges)
	}
	for _, c := range list.Cycles {
		fmt.Fprintf(w, "wait cycle: %s (none of them will be let in while all hold on)\n", strings.Join(c, " <-> "))
	}
}

// apiLock is l as the HTTP API's lock object, as a node answers it for
// GET /v1/locks: a shared key's Owner, Fence and Remaining are those of
// the holder whose grant ends first.
func apiLock(l lock.Listed) api.Lock {
	out := api.Lock{Key: l.Key, Waiters: l.WaiterCount}
	if l.Claim.Kind == drivers.Mutex {
		if len(l.Holders) > 0 {
			h := l.Holders[0]
			out.Owner, out.Holder, out.Fence, out.Remaining = h.Owner, drivers.HolderOf(h.Owner), h.Fence, h.Remaining
		}
		for _, w := range l.Waiters {
			out.Queue = append(out.Queue, api.Waiting{Owner: w.Owner, Holder: api.WaiterHolder(w.Owner, drivers.HolderOf(w.Owner))})
		}
		return out
	}
	out.Kind, out.Limit = api.KindSemaphore, l.Claim.Limit
	if l.Claim.Kind == drivers.RWLock {
		out.Kind = api.KindRWLock
	}
	mode := func(write bool) string {
		switch {
		case l.Claim.Kind != drivers.RWLock:
			return ""
		case write:
			return api.ModeWrite
		}
		return api.ModeRead
	}
	for i, h := range l.Holders {
		out.Holders = append(out.Holders, api.Holder{Owner: h.Owner, Holder: drivers.HolderOf(h.Owner), Fence: h.Fence, Remaining: h.Remaining, Mode: mode(h.Write)})
		if i == 0 || h.Remaining < out.Remaining {
			out.Owner, out.Holder, out.Fence, out.Remaining = h.Owner, drivers.HolderOf(h.Owner), h.Fence, h.Remaining
		}
	}
	for _, w := range l.Waiters {
		out.Queue = append(out.Queue, api.Waiting{Owner: w.Owner, Holder: api.WaiterHolder(w.Owner, drivers.HolderOf(w.Owner)), Mode: mode(w.Write)})
	}
	return out
}

// printLockRows prints one row per holder of l: a mutex's one, every
// holder of a semaphore or read/write lock. The first row counts the
// waiters and names them in queue order where the backend tells them.
func printLockRows(tw io.Writer, l api.Lock) {
	waiters := strconv.Itoa(l.Waiters)
	if len(l.Queue) > 0 {
		names := make([]string, len(l.Queue))
		for i, q := range l.Queue {
			names[i] = q.Owner
			if q.Mode != "" {
				names[i] += " (" + q.Mode + ")"
			}
		}
		waiters += ": " + strings.Join(names, ", ")
	}
	if l.Kind == "" {
		fmt.Fprintf(tw, "%q\tmutex\t%s\t%s\t%d\t%s\t%s\n", l.Key, holderColumn(l.Owner), l.Owner, l.Fence, l.Remaining.Round(time.Millisecond), waiters)
		return
	}
	for i, h := range l.Holders {
		kind := fmt.Sprintf("semaphore/%d", l.Limit)
		if l.Kind == api.KindRWLock {
			kind = h.Mode
		}
		if i > 0 {
			waiters = ""
		}
		fmt.Fprintf(tw, "%q\t%s\t%s\t%s\t%d\t%s\t%s\n", l.Key, kind, holderColumn(h.Owner), h.Owner, h.Fence, h.Remaining.Round(time.Millisecond), waiters)
	}
}

// holderColumn is who the owner says holds the grant (drivers.HolderOf),
// or "-".
func holderColumn(owner string) string {
	if h := drivers.HolderOf(owner); h != "" {
		return h
	}
	return "-"
}
