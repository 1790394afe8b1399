package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/internal/loopback"
)

const devExamples = `  lockcluster dev                      # ports 7001-7003 (HTTP) and 7101-7103 (raft), data in a temp dir
  lockcluster dev --demo               # ... and show contention, hand-off, fencing, refresh and a lost lock
  lockcluster dev --base-port 0        # any free ports
  lockcluster dev --data-dir ./devdata # keep the data: a restart (same --base-port) finds every lock again
Ctrl-C stops the three nodes cleanly.
`

// devNode is one member of the development cluster.
type devNode struct {
	id, raftAddr, httpAddr, dir string
	node                        *cluster.Node
}

// runDev runs three nodes in this process on loopback.
func runDev(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "dev", "dev [--demo] [--base-port N] [--data-dir DIR] [--token T]", devExamples)
	dataDir := fs.String("data-dir", "", "keep the nodes' data here (default: a temp dir removed on exit)")
	basePort := fs.Int("base-port", 7001, "HTTP ports are N, N+1, N+2 and raft ports N+100.. (0: any free ports)")
	token := fs.String("token", "", "require this bearer token (default: env LOCKCLUSTER_TOKEN; empty: no auth)")
	demo := fs.Bool("demo", false, "run a short demo against the cluster once it is up")
	exitAfterDemo := fs.Bool("exit-after-demo", false, "stop the cluster when the demo ends (implies --demo)")
	logLevel := fs.String("log-level", "warn", "node log level: trace, debug, info, warn, error or off")
	if code, done := parse(fs, e, args); done {
		return code
	}
	if *basePort < 0 || *basePort > 65535-102 {
		return usageError(e, "dev", "--base-port %d out of range", *basePort)
	}
	if *token == "" {
		*token = envOr(e, "", "LOCKCLUSTER_TOKEN")
	}
	logger, err := newLogger(e.stderr, "lockcluster", *logLevel)
	if err != nil {
		return usageError(e, "dev", "--log-level: %v", err)
	}
	root := *dataDir
	if root == "" {
		tmp, err := os.MkdirTemp("", "lockcluster-dev-")
		if err != nil {
			fmt.Fprintf(e.stderr, "lockcluster dev: %v\n", err)
			return exitFailure
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	nodes, err := devAddrs(root, *basePort)
	if err != nil {
		fmt.Fprintf(e.stderr, "lockcluster dev: %v\n", err)
		return exitFailure
	}
	peers := make([]cluster.Peer, len(nodes))
	for i, n := range nodes {
		peers[i] = cluster.Peer{ID: n.id, RaftAddr: n.raftAddr, HTTPAddr: n.httpAddr}
	}
	defer stopDev(e, nodes)
	for _, n := range nodes {
		cfg := cluster.Config{ID: n.id, DataDir: n.dir, RaftAddr: n.raftAddr, HTTPAddr: n.httpAddr,
			Token: *token, Logger: logger.Named(n.id),
			// All three stop together: a leadership transfer would have
			// nobody to go to.
			SkipLeadershipTransfer: true}
		if !hasRaftState(n.dir) {
			cfg.Bootstrap = peers
		}
		node, err := cluster.NewNode(ctx, cfg)
		if err != nil {
			fmt.Fprintf(e.stderr, "lockcluster dev: start %s: %v\n", n.id, err)
			return exitFailure
		}
		n.node = node
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.node.WaitForLeader(wctx); err != nil {
			fmt.Fprintf(e.stderr, "lockcluster dev: no leader: %v\n", err)
			return exitFailure
		}
	}
	printDevBanner(e, nodes, root, *dataDir == "", *token)
	if *demo || *exitAfterDemo {
		addrs := make([]string, len(nodes))
		for i, n := range nodes {
			addrs[i] = n.httpAddr
		}
		if err := runDemo(ctx, e.stdout, addrs, *token); err != nil && ctx.Err() == nil {
			fmt.Fprintf(e.stderr, "lockcluster dev: demo: %v\n", err)
			return exitFailure
		}
		if *exitAfterDemo {
			return exitOK
		}
		fmt.Fprintln(e.stdout, "\nThe cluster keeps running: Ctrl-C stops it.")
	}
	<-ctx.Done()
	fmt.Fprintln(e.stdout, "\nstopping the three nodes...")
	return exitOK
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

// stopDev stops the nodes at once (in parallel), so that no node keeps
// handing leadership to a peer that is about to stop too.
func stopDev(e *env, nodes []*devNode) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		if n.node == nil {
			continue
		}
		wg.Go(func() {
			if err := n.node.Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.id, err)
			}
		})
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
	list := strings.Join(addrs, ",")
	auth := ""
	fmt.Fprintln(w, "\nTalk to it from another terminal:")
	fmt.Fprintf(w, "  export LOCK_DRIVER=cluster LOCK_CLUSTER_ADDRS=%s\n", list)
	if token != "" {
		fmt.Fprintln(w, "  export LOCK_CLUSTER_TOKEN=... # the token you passed")
		auth = ` -H "Authorization: Bearer $LOCK_CLUSTER_TOKEN"`
	}
	fmt.Fprintln(w, "  lockcluster status")
	fmt.Fprintln(w, "  lockcluster locks")
	fmt.Fprintln(w, `  lockcluster run --key demo --ttl 10s -- sh -c 'echo "holding $LOCK_KEY with fence $LOCK_FENCE"; sleep 5'`)
	fmt.Fprintf(w, "  curl -s%s -XPOST %s/v1/acquire -d '{\"key\":\"k\",\"owner\":\"me\",\"ttl_ms\":10000}'\n", auth, addrs[0])
	fmt.Fprintf(w, "  curl -s%s '%s/v1/lock?key=k'\n", auth, addrs[0])
	fmt.Fprintf(w, "  curl -s%s -XPOST %s/v1/release -d '{\"key\":\"k\",\"owner\":\"me\"}'\n", auth, addrs[0])
	fmt.Fprintln(w, "Ctrl-C stops all three nodes.")
}
