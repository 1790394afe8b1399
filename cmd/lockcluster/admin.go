package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
)

// adminFlags are the connection flags of status, locks, join and leave.
type adminFlags struct {
	clientTLSFlags
	addrs   string
	token   string
	timeout time.Duration
	json    bool
}

// register adds the connection flags, and --json for the commands that
// print a table (join and leave print one line and have no --json).
func (a *adminFlags) register(fs *flagSet, e *env, table bool) {
	fs.StringVar(&a.addrs, "addr", envOr(e, "", "LOCK_CLUSTER_ADDRS"),
		"HTTP address(es) of any node(s), comma-separated (env LOCK_CLUSTER_ADDRS)")
	fs.StringVar(&a.token, "token", "", "bearer token (default: env LOCK_CLUSTER_TOKEN or LOCKCLUSTER_TOKEN)")
	fs.DurationVar(&a.timeout, "timeout", 10*time.Second, "give up after this long")
	a.clientTLSFlags.register(fs, e)
	if table {
		fs.BoolVar(&a.json, "json", false, "print JSON instead of a table")
	}
}

// client builds the client from the flags.
func (a *adminFlags) client(e *env, cmd string) (*client.Client, int) {
	addrs := splitList(a.addrs)
	if len(addrs) == 0 {
		return nil, usageError(e, cmd, "no node address: pass --addr or set LOCK_CLUSTER_ADDRS")
	}
	token := a.token
	if token == "" {
		token = envOr(e, "", "LOCK_CLUSTER_TOKEN", "LOCKCLUSTER_TOKEN")
	}
	c, err := client.New(client.Config{Addrs: addrs, Token: token, Timeout: a.timeout,
		CAFile: a.ca, CertFile: a.cert, KeyFile: a.key, ClusterID: a.clusterID})
	if err != nil {
		return nil, usageError(e, cmd, "%v", err)
	}
	return c, 0
}

// failure prints err and returns the matching exit status.
func failure(e *env, cmd string, err error) int {
	fmt.Fprintf(e.stderr, "lockcluster %s: %v\n", cmd, err)
	switch {
	case errors.Is(err, drivers.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, drivers.ErrInvalid):
		return exitUsage
	}
	return exitFailure
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

const statusExamples = `  lockcluster status --addr 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
  LOCK_CLUSTER_ADDRS=127.0.0.1:7001 lockcluster status --json
`

// runStatus asks every given node for its status: each node answers for
// itself, so a table of all of them shows who leads and who lags.
func runStatus(ctx context.Context, e *env, args []string) int {
	var a adminFlags
	fs := newFlagSet(e, "status", "status [--addr A,B,C] [--json]", statusExamples)
	a.register(fs, e, true)
	if code, done := parse(fs, e, args); done {
		return code
	}
	c, code := a.client(e, "status")
	if c == nil {
		return code
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()

	type row struct {
		Addr   string         `json:"addr"`
		Status *client.Status `json:"status,omitempty"`
		Error  string         `json:"error,omitempty"`
	}
	var rows []row
	var peers []client.Peer
	reachable := 0
	for _, addr := range splitList(a.addrs) {
		st, err := c.NodeStatus(ctx, addr)
		if err != nil {
			rows = append(rows, row{Addr: addr, Error: err.Error()})
			continue
		}
		reachable++
		if len(st.Peers) > len(peers) {
			peers = st.Peers
		}
		rows = append(rows, row{Addr: addr, Status: &st})
	}
	if a.json {
		printJSON(e.stdout, rows)
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ADDR\tID\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tKEYS")
		for _, r := range rows {
			if r.Status == nil {
				fmt.Fprintf(tw, "%s\t-\tunreachable\t-\t-\t-\t-\t-\n", r.Addr)
				continue
			}
			s := r.Status
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.Addr, s.ID, s.State, dash(s.LeaderID), s.Term, s.CommitIndex, s.AppliedIndex, s.Keys)
		}
		_ = tw.Flush()
		if len(peers) > 0 {
			fmt.Fprintln(e.stdout, "\nRaft configuration:")
			tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRAFT ADDR\tSUFFRAGE")
			for _, p := range peers {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.ID, p.Addr, p.Suffrage)
			}
			_ = tw.Flush()
		}
	}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(e.stderr, "lockcluster status: %s\n", r.Error)
		}
	}
	if reachable == 0 {
		return exitUnavailable
	}
	return exitOK
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const locksExamples = `  lockcluster locks --addr 127.0.0.1:7001
  lockcluster locks --prefix jobs/ --limit 50
`

// runLocks lists the held keys.
func runLocks(ctx context.Context, e *env, args []string) int {
	var a adminFlags
	fs := newFlagSet(e, "locks", "locks [--addr A] [--prefix P] [--limit N] [--json]", locksExamples)
	a.register(fs, e, true)
	prefix := fs.String("prefix", "", "only keys starting with this (keys are named as written: \"deploy\" from lockcluster run, the HTTP API and the Go API is one lock)")
	limit := fs.Int("limit", 1000, "list at most this many keys")
	if code, done := parse(fs, e, args); done {
		return code
	}
	if *limit <= 0 {
		return usageError(e, "locks", "--limit must be positive")
	}
	c, code := a.client(e, "locks")
	if c == nil {
		return code
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	locks, truncated, err := c.List(ctx, *prefix, *limit)
	if err != nil {
		return failure(e, "locks", err)
	}
	if a.json {
		printJSON(e.stdout, map[string]any{"locks": locks, "truncated": truncated})
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tOWNER\tFENCE\tEXPIRES IN\tWAITERS")
	for _, l := range locks {
		waiters := fmt.Sprint(l.Waiters)
		if len(l.WaiterOwners) > 0 {
			waiters = fmt.Sprintf("%d %v", l.Waiters, l.WaiterOwners)
		}
		fmt.Fprintf(tw, "%q\t%s\t%d\t%s\t%s\n", l.Key, l.Owner, l.Fence, l.Remaining.Round(time.Millisecond), waiters)
	}
	_ = tw.Flush()
	if truncated {
		fmt.Fprintf(e.stdout, "(truncated at %d keys: use --prefix or --limit)\n", *limit)
	}
	if len(locks) == 0 {
		fmt.Fprintln(e.stdout, "(no locks held)")
	}
	return exitOK
}

const joinExamples = `  # on the new node: lockcluster agent --id n4 --raft-addr 127.0.0.1:7104 --http-addr 127.0.0.1:7004 --data-dir /var/lib/lock/n4
  lockcluster join --addr 127.0.0.1:7001 --id n4 --raft-addr 127.0.0.1:7104
`

// runJoin adds a voter. The node itself can also ask at start with
// "agent --join".
func runJoin(ctx context.Context, e *env, args []string) int {
	var a adminFlags
	fs := newFlagSet(e, "join", "join --addr A --id ID --raft-addr HOST:PORT", joinExamples)
	a.register(fs, e, false)
	id := fs.String("id", "", "id of the node to add (required)")
	raftAddr := fs.String("raft-addr", "", "raft address of the node to add (required)")
	if code, done := parse(fs, e, args); done {
		return code
	}
	if *id == "" || *raftAddr == "" {
		return usageError(e, "join", "--id and --raft-addr are required")
	}
	c, code := a.client(e, "join")
	if c == nil {
		return code
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := c.Join(ctx, *id, *raftAddr); err != nil {
		return failure(e, "join", err)
	}
	fmt.Fprintf(e.stdout, "node %s (%s) is a member\n", *id, *raftAddr)
	return exitOK
}

const leaveExamples = `  lockcluster leave --addr 127.0.0.1:7001 --id n3
`

// runLeave removes a node from the raft configuration.
func runLeave(ctx context.Context, e *env, args []string) int {
	var a adminFlags
	fs := newFlagSet(e, "leave", "leave --addr A --id ID", leaveExamples)
	a.register(fs, e, false)
	id := fs.String("id", "", "id of the node to remove (required)")
	if code, done := parse(fs, e, args); done {
		return code
	}
	if *id == "" {
		return usageError(e, "leave", "--id is required")
	}
	c, code := a.client(e, "leave")
	if c == nil {
		return code
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := c.Leave(ctx, *id); err != nil {
		return failure(e, "leave", err)
	}
	fmt.Fprintf(e.stdout, "node %s removed\n", *id)
	return exitOK
}
