package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cmd/lockcluster/internal/demo"
	"github.com/zerotal/lock/internal/loopback"
)

const devExamples = `  lockcluster dev                      # ports 7001-7003 (HTTP) and 7101-7103 (raft), data in a temp dir
  lockcluster dev --demo               # ... and show contention, hand-off, fencing, refresh and a lost lock
  lockcluster dev --base-port 0        # any free ports
  lockcluster dev --data-dir ./devdata # keep the data: a restart (same --base-port) finds every lock again`

const devNotes = `Ctrl-C stops the three nodes cleanly, and dev exits with status 0.`

// devNode is one member of the development cluster.
type devNode struct {
	id, raftAddr, httpAddr, dir string
	node                        *cluster.Node
}

// devOptions are dev's flags.
type devOptions struct {
	dataDir, token, logLevel, raftLog string
	basePort                          int
	demo, exitAfterDemo               bool
}

func newDevCmd(e *env) *cobra.Command {
	var o devOptions
	cmd, fs := newCommand("dev [--demo] [flags]", "run a three-node cluster on loopback in this process", devExamples, devNotes)
	fs.StringVar(&o.dataDir, "data-dir", "", "keep the nodes' data in this `directory` (default: a temp dir removed on exit)")
	fs.IntVar(&o.basePort, "base-port", 7001, "HTTP ports are N, N+1, N+2 and raft ports N+100.. (0: any free ports)")
	fs.StringVar(&o.token, "token", "", "require this bearer token (empty: no auth)")
	fs.BoolVar(&o.demo, "demo", false, "run a short demo against the cluster once it is up")
	fs.BoolVar(&o.exitAfterDemo, "exit-after-demo", false, "stop the cluster when the demo ends (implies --demo)")
	fs.StringVar(&o.raftLog, "raft-log", "", raftLogUsage)
	_ = cmd.RegisterFlagCompletionFunc("raft-log", raftLogs)
	fs.StringVar(&o.logLevel, "log-level", "warn", "node log level: trace, debug, info, warn, error or off (before the banner, only\nerrors unless given)")
	_ = cmd.RegisterFlagCompletionFunc("log-level", logLevels)
	readsEnv(cmd, false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runDev(cmd.Context(), e, &o, given(cmd, "log-level"))
	}
	return cmd
}

// runDev runs three nodes in this process on loopback until ctx ends
// (Ctrl-C), and then stops them; an interrupted dev exits 0.
//
// The nodes log only errors until the banner is out, unless --log-level
// was given: a fresh cluster's first election is logged by raft as a
// warning ("heartbeat timeout reached, starting election"), which is
// noise before anything was asked of it.
func runDev(ctx context.Context, e *env, o *devOptions, levelGiven bool) error {
	if o.basePort < 0 || o.basePort > 65535-102 {
		return usagef("--base-port %d out of range", o.basePort)
	}
	logger, levelVar, err := newLogger(e.stderr, o.logLevel)
	if err != nil {
		return usagef("--log-level: %v", err)
	}
	level := levelVar.Level()
	if !levelGiven {
		levelVar.Set(max(level, slog.LevelError))
	}
	root := o.dataDir
	if root == "" {
		tmp, err := os.MkdirTemp("", "lockcluster-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	nodes, err := devAddrs(root, o.basePort)
	if err != nil {
		return err
	}
	peers := make([]cluster.Peer, len(nodes))
	for i, n := range nodes {
		peers[i] = cluster.Peer{ID: n.id, RaftAddr: n.raftAddr, HTTPAddr: n.httpAddr}
	}
	defer func() {
		// The three nodes stop together, so raft in each logs, as errors,
		// its peers' connections closing under it: the noise of a clean
		// stop, unless --log-level asked for everything. A failed stop is
		// still reported: stopDev prints it.
		if !levelGiven {
			levelVar.Set(levelOff)
		}
		stopDev(e, nodes)
	}()
	if err := startDevNodes(ctx, o, logger, root, nodes, peers); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}
	printDevBanner(e, nodes, root, o.dataDir == "", o.token)
	levelVar.Set(level)
	if o.demo || o.exitAfterDemo {
		addrs := make([]string, len(nodes))
		for i, n := range nodes {
			addrs[i] = n.httpAddr
		}
		if err := demo.Run(ctx, e.stdout, addrs, o.token); err != nil && ctx.Err() == nil {
			return fmt.Errorf("demo: %w", err)
		}
		if o.exitAfterDemo {
			return nil
		}
		if ctx.Err() == nil {
			fmt.Fprintln(e.stdout, "\nThe cluster keeps running: Ctrl-C stops it.")
		}
	}
	<-ctx.Done()
	fmt.Fprintln(e.stdout, "\nstopping the three nodes...")
	return nil
}

// startDevNodes starts the three nodes and waits until each knows the
// leader.
func startDevNodes(ctx context.Context, o *devOptions, logger *slog.Logger, root string, nodes []*devNode, peers []cluster.Peer) error {
	// The nodes' own credential, apart from any client's: made once per
	// root, so that a restart on the same --data-dir keeps it.
	secret, err := devRaftSecret(root)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		cfg := cluster.Config{ID: n.id, DataDir: n.dir, RaftAddr: n.raftAddr, HTTPAddr: n.httpAddr,
			Token: o.token, RaftSecret: secret, Logger: logger.With("node", n.id), RaftLog: o.raftLog,
			// All three stop together: a leadership transfer would have
			// nobody to go to.
			SkipLeadershipTransfer: true}
		if !hasRaftState(n.dir) {
			// dev bootstraps its three nodes itself: a node of lockcluster
			// agent bootstraps only when told to.
			cfg.Bootstrap = peers
		}
		injectFaults(&cfg)
		node, err := cluster.NewNode(ctx, cfg)
		if err != nil {
			return fmt.Errorf("start %s: %w", n.id, err)
		}
		n.node = node
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.node.WaitForLeader(wctx); err != nil {
			return fmt.Errorf("no leader: %w", err)
		}
	}
	return nil
}

// devAddrs lays out ids, directories and loopback addresses.
func devAddrs(root string, basePort int) ([]*devNode, error) {
	nodes := make([]*devNode, 3)
	for i := range nodes {
		n := &devNode{id: fmt.Sprintf("n%d", i+1), dir: filepath.Join(root, fmt.Sprintf("n%d", i+1))}
		if basePort > 0 {
			n.httpAddr = fmt.Sprintf("127.0.0.1:%d", basePort+i)
			n.raftAddr = fmt.Sprintf("127.0.0.1:%d", basePort+100+i)
		} else {
			var err error
			if n.httpAddr, err = loopback.FreeAddr(); err != nil {
				return nil, err
			}
			if n.raftAddr, err = loopback.FreeAddr(); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	return nodes, nil
}

// hasRaftState reports whether dir holds a previous run's data, in which
// case the node restarts from it instead of bootstrapping.
func hasRaftState(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) > 0
}

// stopDev stops the leader first, then the followers at once (in
// parallel), so that no node keeps handing leadership to a peer that is
// about to stop too. A follower stopped while the leader still ran would
// break the leader's replication to it, which raft logs as an error
// ("failed to heartbeat to ... EOF") on an ordinary stop; followers
// stopped after the leader only miss heartbeats, for less than an
// election timeout.
func stopDev(e *env, nodes []*devNode) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errs := make([]error, len(nodes))
	stop := func(i int) {
		if err := nodes[i].node.Shutdown(ctx); err != nil {
			errs[i] = fmt.Errorf("%s: %w", nodes[i].id, err)
		}
	}
	for i, n := range nodes {
		if n.node != nil && n.node.IsLeader() {
			stop(i)
		}
	}
	var wg sync.WaitGroup
	for i, n := range nodes {
		if n.node == nil {
			continue
		}
		wg.Go(func() { stop(i) }) // Shutdown is idempotent: the leader's returns at once
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(e.stderr, "lockcluster dev: shutdown: %v\n", err)
	}
}

func printDevBanner(e *env, nodes []*devNode, root string, temp bool, token string) {
	w := e.stdout
	where := root
	if temp {
		where += " (removed on exit)"
	}
	fmt.Fprintf(w, "lockcluster dev: three nodes on loopback, data in %s\n", where)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.httpAddr
		role := "follower"
		if n.node.IsLeader() {
			role = "leader"
		}
		fmt.Fprintf(w, "  %s  http %-16s raft %-16s %s\n", n.id, n.httpAddr, n.raftAddr, role)
	}
	self := e.self
	if self == "" {
		self = "lockcluster"
	}
	auth := ""
	fmt.Fprintln(w, "\nTalk to it from another terminal:")
	fmt.Fprintf(w, "  export LOCKCLUSTER_ENDPOINTS=%s\n", strings.Join(addrs, ","))
	if token != "" {
		fmt.Fprintln(w, "  export LOCKCLUSTER_TOKEN=... # the token you passed")
		auth = ` -H "Authorization: Bearer $LOCKCLUSTER_TOKEN"`
	}
	if strings.HasPrefix(self, "go run") {
		fmt.Fprintln(w, "  # from the repository's root; or \"make build\", then bin/lockcluster instead of go run ./cmd/lockcluster")
	}
	fmt.Fprintf(w, "  %s status\n", self)
	fmt.Fprintf(w, "  %s locks\n", self)
	fmt.Fprintf(w, "  %s run --key demo --ttl 10s -- sh -c 'echo \"holding $LOCK_KEY with fence $LOCK_FENCE\"; sleep 5'\n", self)
	fmt.Fprintf(w, "  curl -s%s -XPOST %s/v1/acquire -d '{\"key\":\"k\",\"owner\":\"me\",\"ttl_ms\":10000}'\n", auth, addrs[0])
	fmt.Fprintf(w, "  curl -s%s '%s/v1/lock?key=k'\n", auth, addrs[0])
	fmt.Fprintf(w, "  curl -s%s -XPOST %s/v1/release -d '{\"key\":\"k\",\"owner\":\"me\"}'\n", auth, addrs[0])
	fmt.Fprintln(w, "Ctrl-C stops all three nodes.")
}

// devRaftSecret is the raft secret of the dev cluster under root: read
// from root/raft-secret, or made (32 random bytes, hex) and written there
// (mode 0600) on the first start.
func devRaftSecret(root string) (string, error) {
	path := filepath.Join(root, "raft-secret")
	if b, err := os.ReadFile(path); err == nil {
		if s := strings.TrimSpace(string(b)); len(s) >= cluster.MinRaftSecretLen {
			return s, nil
		}
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(buf)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the raft secret: %w", err)
	}
	return secret, nil
}
