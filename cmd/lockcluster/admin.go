package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/drivers"
)

// adminFlags are the connection flags of status, join and leave.
type adminFlags struct {
	clientTLSFlags
	endpoints string
	token     string
	timeout   time.Duration
	output    string // -o: table or json
}

// json reports whether -o json was asked for.
func (a *adminFlags) json() bool { return a.output == "json" }

// register adds the connection flags, and -o for the commands that print
// a table (join and leave print one line and have no -o).
func (a *adminFlags) register(cmd *cobra.Command, table bool) {
	fs := cmd.Flags()
	fs.StringVar(&a.endpoints, "endpoints", "", "HTTP `address`(es) of any node(s), comma-separated")
	fs.StringVar(&a.token, "token", "", "bearer token the cluster requires (prefer the variable: flags show in the process list)")
	durationVar(fs, &a.timeout, "timeout", 10*time.Second, "give up after this long")
	a.clientTLSFlags.register(cmd)
	if table {
		registerOutput(cmd, &a.output)
	}
	readsEnv(cmd, true)
}

// client builds the client from the flags.
func (a *adminFlags) client() (*client.Client, error) {
	addrs := splitList(a.endpoints)
	if len(addrs) == 0 {
		return nil, usagef("no node address: pass --endpoints or set LOCKCLUSTER_ENDPOINTS")
	}
	c, err := client.New(client.Config{Addrs: addrs, Token: a.token, Timeout: a.timeout,
		CAFile: a.ca, CertFile: a.cert, KeyFile: a.key, ClusterID: a.clusterID})
	if err != nil {
		return nil, &usageError{msg: describe(err)}
	}
	return c, nil
}

// withClient runs fn with a client built from the flags and a context
// bounded by --timeout.
func (a *adminFlags) withClient(ctx context.Context, fn func(context.Context, *client.Client) error) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return fn(ctx, c)
}

// call runs fn as withClient does, and turns its error into what the
// command returns (see failed).
func (a *adminFlags) call(ctx context.Context, e *env, cmd *cobra.Command, fn func(context.Context, *client.Client) error) error {
	return a.withClient(ctx, func(ctx context.Context, c *client.Client) error {
		if err := fn(ctx, c); err != nil {
			return a.failed(ctx, e, cmd, c, err)
		}
		return nil
	})
}

// failed turns an error of a cluster call into what the command returns:
// when the cluster is unavailable, the nodes are asked why, so that the
// message says "no leader" rather than the last node's connection refused.
func (a *adminFlags) failed(ctx context.Context, e *env, cmd *cobra.Command, c *client.Client, err error) error {
	if errors.Is(err, drivers.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		// Asking the nodes why may take a moment more than --timeout, not
		// as long again.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(time.Second, a.timeout))
		defer cancel()
		if msg, code, ok := cliexplain.ExplainUnavailable(pctx, c, splitList(a.endpoints)); ok {
			fmt.Fprintf(e.stderr, "%s: %s\n", cmd.CommandPath(), msg)
			return exitStatus(code)
		}
	}
	return err
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

const statusExamples = `  lockcluster status --endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
  LOCKCLUSTER_ENDPOINTS=127.0.0.1:7001 lockcluster status -o json`

const statusNotes = `Each node answers for itself, so a table of all of them shows who leads and who lags.
A node that refuses the token shows as "unauthorized", one whose role lacks the right as
"forbidden", one that cannot be reached as "unreachable". Exit status: 0 when a node answers
and knows a leader, 69 when none answers or none knows a leader (election in progress or no
quorum), 77 when every node that answers refuses the token or its right.`

func newStatusCmd(e *env) *cobra.Command {
	var a adminFlags
	cmd, _ := newCommand("status [flags]", "show every node's raft state and the leader", statusExamples, statusNotes)
	a.register(cmd, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutputFormat(a.output); err != nil {
			return err
		}
		return runStatus(cmd.Context(), e, cmd, &a)
	}
	return cmd
}

// runStatus asks every given node for its status, then every member the
// raft configuration lists that was not given (at its HTTP address from
// the member map), so that a member that is down shows even when only one
// endpoint was given.
func runStatus(ctx context.Context, e *env, cmd *cobra.Command, a *adminFlags) error {
	return a.withClient(ctx, func(ctx context.Context, c *client.Client) error {
		probes, memberOnly, peers := probeCluster(ctx, c, a)
		return printStatus(e, cmd, a, probes, memberOnly, peers)
	})
}

// printStatus prints what probeCluster found and says what is wrong.
func printStatus(e *env, cmd *cobra.Command, a *adminFlags, probes []cliexplain.Probe, memberOnly int, peers []client.Peer) error {
	st := statusRows(probes, memberOnly)
	if a.json() {
		printJSON(e.stdout, st.rows)
	} else {
		st.print(e.stdout, peers)
	}
	name := cmd.CommandPath()
	if len(st.failed) > 0 {
		// Said once when every node fails the same way: the fix is the same.
		fmt.Fprintf(e.stderr, "%s: %s\n", name, cliexplain.SayOnce(st.failed))
	}
	for _, r := range st.rows {
		if r.Status != nil {
			switch r.Status.Membership {
			case api.MemberWaiting:
				fmt.Fprintf(e.stderr, "%s: %s (%s) is waiting to be added to a cluster: lockcluster join --id %s --raft-addr RAFT --http-addr %s\n",
					name, r.Addr, r.Status.ID, r.Status.ID, r.Addr)
			case api.MemberRemoved:
				fmt.Fprintf(e.stderr, "%s: %s (%s) was removed from the cluster and serves nothing\n", name, r.Addr, r.Status.ID)
			}
		}
	}
	switch {
	case st.answered == 0:
		return exitStatus(cliexplain.FailureCode(st.failed))
	case st.leader == "":
		fmt.Fprintf(e.stderr, "%s: %s\n", name, cliexplain.MsgNoLeader)
		return exitStatus(exitUnavailable)
	}
	return nil
}

// probeCluster asks the nodes given, then the members of the raft
// configuration they report that were not given (from memberOnly on in
// probes), and returns the largest configuration seen.
func probeCluster(ctx context.Context, c *client.Client, a *adminFlags) (probes []cliexplain.Probe, memberOnly int, peers []client.Peer) {
	given := splitList(a.endpoints)
	probes = cliexplain.ProbeNodes(ctx, c, given, a.timeout)
	seen := map[string]bool{}
	for _, addr := range given {
		seen[addr] = true
	}
	for _, p := range probes {
		if p.Err == nil && len(p.Status.Peers) > len(peers) {
			peers = p.Status.Peers
		}
	}
	var more []string
	for _, p := range peers {
		if p.HTTPAddr != "" && !seen[p.HTTPAddr] {
			seen[p.HTTPAddr] = true
			more = append(more, p.HTTPAddr)
		}
	}
	memberOnly = len(probes)
	return append(probes, cliexplain.ProbeNodes(ctx, c, more, a.timeout)...), memberOnly, peers
}

// statusRow is one node in status's answer (-o json prints these).
type statusRow struct {
	Addr   string         `json:"addr"`
	Member bool           `json:"member_only,omitempty"` // listed by the configuration, not given
	Status *client.Status `json:"status,omitempty"`
	State  string         `json:"state,omitempty"` // when it did not answer: unauthorized, unreachable ...
	Error  string         `json:"error,omitempty"`
}

// clusterStatus is what the probes found.
type clusterStatus struct {
	rows         []statusRow
	failed       []cliexplain.Probe
	answered     int
	leader       string // the leader's id, as the nodes that answered name it
	leaderCommit uint64
	memberOnly   int // rows from here on were not given
}

// statusRows turns the probes into rows.
func statusRows(probes []cliexplain.Probe, memberOnly int) clusterStatus {
	st := clusterStatus{memberOnly: memberOnly}
	for i, p := range probes {
		r := statusRow{Addr: p.Addr, Member: i >= memberOnly}
		switch {
		case p.Err == nil:
			st.answered++
			if p.Status.LeaderID != "" {
				st.leader = p.Status.LeaderID
			}
			if p.Status.State == "leader" {
				st.leaderCommit = p.Status.CommitIndex
			}
			r.Status = &p.Status
		case errors.Is(p.Err, client.ErrUnauthorized):
			r.State = "unauthorized"
		case errors.Is(p.Err, client.ErrWrongCluster):
			r.State = "wrong-cluster"
		case errors.Is(p.Err, client.ErrForbidden):
			r.State = "forbidden" // it knows the credential, which lacks the status right
		case errors.Is(p.Err, client.ErrTLS):
			r.State = "tls-error"
		case errors.As(p.Err, new(*client.APIError)):
			r.State = "error" // it answered, with another refusal: the error says which
		default:
			r.State = "unreachable"
		}
		if p.Err != nil {
			r.Error = cliexplain.NodeReason(p) // the words of the summary line
			st.failed = append(st.failed, p)
		}
		st.rows = append(st.rows, r)
	}
	return st
}

// print writes the table of nodes and the raft configuration.
func (st clusterStatus) print(w io.Writer, peers []client.Peer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDR\tID\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tLAG\tKEYS")
	for _, r := range st.rows {
		addr := r.Addr
		if r.Member {
			addr += " *"
		}
		if r.Status == nil {
			fmt.Fprintf(tw, "%s\t-\t%s\t-\t-\t-\t-\t-\t-\n", addr, r.State)
			continue
		}
		s := r.Status
		state := s.State
		if s.Membership != "" && s.Membership != api.MemberOf {
			state = s.Membership // waiting to be added, or removed: what the operator acts on
		}
		lag := "-"
		if st.leaderCommit > 0 {
			lag = strconv.FormatUint(st.leaderCommit-min(st.leaderCommit, s.AppliedIndex), 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%d\n", addr, s.ID, state, dash(s.LeaderID), s.Term, s.CommitIndex, s.AppliedIndex, lag, s.Keys)
	}
	_ = tw.Flush()
	if st.memberOnly < len(st.rows) {
		fmt.Fprintln(w, "(* a member the raft configuration lists, not among the endpoints given)")
	}
	if len(peers) > 0 {
		fmt.Fprintln(w, "\nRaft configuration:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRAFT ADDR\tHTTP ADDR\tSUFFRAGE")
		for _, p := range peers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Addr, dash(p.HTTPAddr), p.Suffrage)
		}
		_ = tw.Flush()
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const joinExamples = `  # 1. on the new machine: an empty data dir, neither --bootstrap nor --join; it waits to be added
  lockcluster agent --id n4 --data-dir /var/lib/lock/n4 --raft-addr 10.0.0.4:7101 --http-addr 10.0.0.4:7001
  # 2. anywhere, with an operator's token: the leader asks n4 first, then adds it
  lockcluster join --endpoints 10.0.0.1:7001 --id n4 --raft-addr 10.0.0.4:7101 --http-addr 10.0.0.4:7001`

const joinNotes = `The leader asks the node at --http-addr what it is, then the node at --raft-addr over raft,
before adding it, and refuses (exit status 65) a node that has raft state of its own (it
bootstrapped, or it was a member of any cluster), belongs to another cluster, answers to another
id, advertises another raft address, uses other --max-keys or --max-waiters, or cannot be
reached: adding a node with a log would fork the lock table. A --raft-addr that is another
member's is refused too: a join never removes a member to make room. Joining a member again at the
same address does nothing. It needs an operator's token; the node asked is sent none.`

func newJoinCmd(e *env) *cobra.Command {
	var a adminFlags
	var id, raftAddr, httpAddr string
	cmd, fs := newCommand("join --id ID --raft-addr HOST:PORT --http-addr HOST:PORT [flags]",
		"add a node that waits to be added to the cluster", joinExamples, joinNotes)
	a.register(cmd, false)
	fs.StringVar(&id, "id", "", "id of the node to add (required)")
	fs.StringVar(&raftAddr, "raft-addr", "", "raft address of the node to add, as its peers dial it (required)")
	fs.StringVar(&httpAddr, "http-addr", "", "HTTP address of the node to add: the leader asks it there first (required)")
	// LOCKCLUSTER_ID and LOCKCLUSTER_RAFT_ADDR configure an agent: a shell
	// set up for one must not make join act on it unasked.
	cliflags.NoEnv(cmd, "id", "it names the node to act on")
	cliflags.NoEnv(cmd, "raft-addr", "it names the node to act on")
	cliflags.NoEnv(cmd, "http-addr", "it names the node to act on")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if id == "" || raftAddr == "" || httpAddr == "" {
			return usagef("--id, --raft-addr and --http-addr are required")
		}
		err := a.call(cmd.Context(), e, cmd, func(ctx context.Context, c *client.Client) error {
			return c.Join(ctx, id, raftAddr, httpAddr)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "node %s (%s) is a member\n", id, raftAddr)
		return nil
	}
	return cmd
}

const leaveExamples = `  lockcluster leave --endpoints 127.0.0.1:7001 --id n3`

const leaveNotes = `An id that is no member of the cluster is an error (exit status 67), so a typo is not
taken for a removal.`

func newLeaveCmd(e *env) *cobra.Command {
	var a adminFlags
	var id string
	cmd, fs := newCommand("leave --id ID [flags]", "remove a node from the cluster", leaveExamples, leaveNotes)
	a.register(cmd, false)
	fs.StringVar(&id, "id", "", "id of the node to remove (required)")
	cliflags.NoEnv(cmd, "id", "it names the node to act on")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if id == "" {
			return usagef("--id is required")
		}
		err := a.call(cmd.Context(), e, cmd, func(ctx context.Context, c *client.Client) error {
			return c.Leave(ctx, id)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "node %s removed\n", id)
		return nil
	}
	return cmd
}
