package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/bench/load"
	"github.com/zerotal/lock/client"
)

// The scale run (-scale): how the cost of each system grows with the
// locks it holds, beside etcd where etcd can do the same, and what a
// large table costs a three-node lockcluster in memory, snapshots,
// restarts, leader changes and an expiry storm. `make bench-scale` runs
// it.

// scaleOptions are the -scale flags.
type scaleOptions struct {
	sizes      []int           // held locks at which lockcluster is measured
	etcdHeld   int             // the largest table etcd is measured at
	window     time.Duration   // measured time of each cycling row
	workers    int             // cycling workers
	storm      int             // locks ending in the same second
	clients    int             // clients holding and refreshing a lock each
	clientsFor time.Duration   // how long they refresh
	steps      map[string]bool // what runs after the held rows (-scale-steps)
}

// heldRow is one system at one table size.
type heldRow struct {
	system  string
	held    int
	fill    float64 // locks per second while filling
	res     load.Result
	rss     []int64 // per member, bytes
	heap    []int64 // per member (lockcluster: go heap in use), bytes
	baseRSS []int64
}

// perLock is the members' RSS growth since baseline, per held lock:
// the largest member's, and the mean.
func (r heldRow) perLock() (maxB, meanB float64) {
	if r.held == 0 || len(r.rss) == 0 {
		return 0, 0
	}
	var sum float64
	for i := range r.rss {
		d := float64(r.rss[i]-r.baseRSS[i]) / float64(r.held)
		sum += d
		maxB = max(maxB, d)
	}
	return maxB, sum / float64(len(r.rss))
}

func scaleMain(ctx context.Context, o options, so scaleOptions, dir string) int {
	// Each client keeps two connections to the node (its request pool and
	// its stream): the clients need twice their number of descriptors here
	// and on the node, which inherits this limit.
	nofile := raiseNoFile(uint64(2*so.clients + 4096))
	largest := 0
	for _, n := range so.sizes {
		largest = max(largest, n)
	}
	// Room for the largest table, the storm and the cycling keys; and for
	// the clients' connections, one each, on top of the default cap (8,192:
	// beyond it new connections wait to be accepted).
	o.lockclusterArgs = append([]string{"--max-keys", strconv.Itoa(largest + so.storm + 100_000),
		"--max-conns", strconv.Itoa(so.clients + 8192)}, o.lockclusterArgs...)
	ec, lc, err := startSystems(ctx, o, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ec.stop()
	defer lc.stop()
	fmt.Printf("scale: three-member etcd %s and three-node lockcluster on one machine (%d CPUs), default settings but lockcluster %q\n",
		ec.version, runtime.NumCPU(), strings.Join(o.lockclusterArgs, " "))
	fmt.Printf("open files (RLIMIT_NOFILE) of this process and the members: %d\n", nofile)
	fmt.Printf("a held lock: lockcluster one key held by one owner for an hour; etcd one lease (TTL 1 h) with one key attached, as concurrency.Mutex holds one\n")
	fmt.Printf("each row: %d workers cycling fresh keys (acquire + release) for %s beside the held locks; memory is each member's RSS (/proc), growth over the empty system per held lock\n\n",
		so.workers, so.window)

	etcdSizes := []int{1_000}
	if so.etcdHeld > 1_000 {
		etcdSizes = append(etcdSizes, so.etcdHeld)
	}
	etcdRows, err := heldRows(ctx, "etcd", ec, etcdSizes, so, func(ctx context.Context, from, to int) (float64, error) {
		return fillEtcd(ctx, ec.cli, from, to)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lcRows, err := heldRows(ctx, "lockcluster", lc, so.sizes, so, func(ctx context.Context, from, to int) (float64, error) {
		return fillLockcluster(ctx, lc.c, from, to)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	held := so.sizes[len(so.sizes)-1]
	rows := append(etcdRows, lcRows...)
	printHeldTable(rows)

	fmt.Printf("\nat %d held locks:\n", held)
	printSnapshots(lc, dir)
	profiles := ""
	if slices.Contains(o.lockclusterArgs, "--pprof") {
		profiles = o.profileDir
		saveProfiles(ctx, lc, profiles, "lockcluster-leader-held")
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"restart", func() error { return restartFollower(ctx, lc, dir) }},
		{"leader", func() error { return killLeader(ctx, lc, dir, held) }},
		{"storm", func() error { return expiryStorm(ctx, lc, so) }},
		{"clients", func() error { return clientsRun(ctx, lc, so.clients, so.clientsFor, profiles) }},
	}
	for _, st := range steps {
		if !so.steps[st.name] {
			continue
		}
		if err := st.run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", st.name, err)
			return 1
		}
	}
	return 0
}

// raiseNoFile raises this process's open-file limit to at least want when
// it can (as root, the hard limit too) and returns the limit in force.
func raiseNoFile(want uint64) uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	if l.Cur >= want {
		return l.Cur
	}
	n := l
	n.Cur = want
	n.Max = max(l.Max, want)
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n) != nil {
		n.Cur, n.Max = min(want, l.Max), l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n)
	}
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Cur
}

// heldRows fills l to each size in turn (fill adds the locks from..to-1)
// and measures a row at each; lockcluster's rows also carry each node's
// Go heap.
func heldRows(ctx context.Context, name string, l locker, sizes []int, so scaleOptions,
	fill func(ctx context.Context, from, to int) (float64, error)) ([]heldRow, error) {
	base := rssOf(l.members())
	var rows []heldRow
	held := 0
	for _, n := range sizes {
		rate, err := fill(ctx, held, n)
		if err != nil {
			return nil, fmt.Errorf("%s fill: %w", name, err)
		}
		held = n
		r, err := heldRun(ctx, name, l, n, so)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.fill, r.baseRSS = rate, base
		if lc, ok := l.(*lockCluster); ok {
			r.heap = heapOf(ctx, lc)
		}
		rows = append(rows, r)
		printHeld(r)
	}
	return rows, nil
}

// heldRun measures workers cycling fresh keys on l beside n held locks.
func heldRun(ctx context.Context, name string, l locker, n int, so scaleOptions) (heldRow, error) {
	var seq atomic.Int64
	sc := scenario{name: "fresh", workers: so.workers, keyFor: func(w int) string {
		return fmt.Sprintf("cycle-%d-%d", w, seq.Add(1))
	}}
	m, err := run(ctx, l, sc, time.Second, so.window)
	if err != nil {
		return heldRow{}, err
	}
	if m.Errors > 0 {
		return heldRow{}, fmt.Errorf("%d errors cycling, the first: %v", m.Errors, m.FirstErr)
	}
	return heldRow{system: name, held: n, res: m.Result, rss: rssOf(l.members())}, nil
}

// fillers is how many concurrent calls fill a table.
const fillers = 128

// fillLockcluster holds keys held-from .. held-to-1 for an hour.
func fillLockcluster(ctx context.Context, c *client.Client, from, to int) (float64, error) {
	return fill(ctx, from, to, func(ctx context.Context, i int) error {
		ok, err := take(ctx, c, "held-"+strconv.Itoa(i), "scale-holder-0123456789abcdef0123", time.Hour)
		if err == nil && !ok {
			err = fmt.Errorf("held-%d: not granted", i)
		}
		return err
	})
}

// fillEtcd makes the locks from .. to-1, each a lease with a key.
func fillEtcd(ctx context.Context, cli *clientv3.Client, from, to int) (float64, error) {
	return fill(ctx, from, to, func(ctx context.Context, i int) error {
		lease, err := cli.Grant(ctx, 3600)
		if err != nil {
			return err
		}
		_, err = cli.Put(ctx, "/held/"+strconv.Itoa(i), "scale-holder", clientv3.WithLease(lease.ID))
		return err
	})
}

// fill runs one(i) for i in from..to-1 on fillers goroutines and returns
// the rate. Each call is bounded; the first error stops the fill.
func fill(ctx context.Context, from, to int, one func(context.Context, int) error) (float64, error) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	for range fillers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := one(cctx, i)
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					next.Store(int64(to))
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return float64(to-from) / time.Since(start).Seconds(), firstErr
}

// rssOf is each process's resident set size, in bytes (0 when unknown).
func rssOf(ps []*proc) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				out[i] = kb << 10
			}
		}
	}
	return out
}

// heapOf is each node's Go heap in use, from its /metrics.
func heapOf(ctx context.Context, lc *lockCluster) []int64 {
	out := make([]int64, len(lc.addrs))
	for i, a := range lc.addrs {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		b, err := lc.c.NodeMetrics(cctx, a)
		cancel()
		if err != nil {
			continue
		}
		out[i] = int64(metricValue(b, "go_memstats_heap_inuse_bytes"))
	}
	return out
}

// metricValue reads one unlabelled sample from a Prometheus text page.
func metricValue(page []byte, name string) float64 {
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return 0
}

func mb(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }

func printHeld(r heldRow) {
	maxB, meanB := r.perLock()
	fmt.Fprintf(os.Stderr, "%s held=%d: filled at %.0f/s; %.0f cycles/s, p50 %s p99 %s; RSS/lock max %.0f B mean %.0f B\n",
		r.system, r.held, r.fill, r.res.PerSecond(), fmtDur(load.Percentile(r.res.Acquire, 50)),
		fmtDur(load.Percentile(r.res.Acquire, 99)), maxB, meanB)
}

func printHeldTable(rows []heldRow) {
	fmt.Println("| system | held locks | filled at | cycles/s | ratio to 1 k | acquire p50 | acquire p99 | RSS per member (MB) | RSS growth per held lock (largest member, mean) | Go heap in use per node (MB) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|---|---|")
	base := map[string]float64{}
	for _, r := range rows {
		if r.held == 1_000 {
			base[r.system] = r.res.PerSecond()
		}
	}
	for _, r := range rows {
		maxB, meanB := r.perLock()
		var rss, heap []string
		for _, b := range r.rss {
			rss = append(rss, mb(b))
		}
		for _, b := range r.heap {
			heap = append(heap, mb(b))
		}
		ratio := "-"
		if b := base[r.system]; b > 0 {
			ratio = fmt.Sprintf("%.2f", r.res.PerSecond()/b)
		}
		perLock := "-"
		if r.held >= 10_000 { // below, the growth is noise
			perLock = fmt.Sprintf("%.0f B, %.0f B", maxB, meanB)
		}
		fmt.Printf("| %s | %d | %.0f/s | %.0f | %s | %s | %s | %s | %s | %s |\n", r.system, r.held, r.fill,
			r.res.PerSecond(), ratio, fmtDur(load.Percentile(r.res.Acquire, 50)), fmtDur(load.Percentile(r.res.Acquire, 99)),
			strings.Join(rss, " / "), perLock, orDash(strings.Join(heap, " / ")))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// saveProfiles saves the leader's heap profile (its --pprof) in dir as
// <name>-heap.pb.gz, for go tool pprof -sample_index=inuse_space (where the
// bytes go), and its runtime.MemStats as <name>-memstats.txt (goroutine
// stacks are not in the heap profile: StackInuse is).
func saveProfiles(ctx context.Context, lc *lockCluster, dir, name string) {
	li := leaderIndex(ctx, lc)
	if li < 0 {
		fmt.Println("- profiles: no leader")
		return
	}
	heap := filepath.Join(dir, name+"-heap.pb.gz")
	stats := filepath.Join(dir, name+"-memstats.txt")
	base := "http://" + lc.addrs[li] + "/debug/pprof/"
	if err := saveURL(ctx, base+"heap?gc=1", heap); err != nil {
		fmt.Println("- heap profile:", err)
		return
	}
	if err := saveURL(ctx, base+"heap?debug=1", stats); err != nil {
		fmt.Println("- memstats:", err)
		return
	}
	fmt.Printf("- the leader's heap profile: %s (go tool pprof -sample_index=inuse_space -top %s); MemStats at the end of %s\n", heap, heap, stats)
}

// saveURL writes the body of a GET of url to path.
func saveURL(ctx context.Context, url, path string) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// printSnapshots prints the size of each node's latest snapshot on disk.
func printSnapshots(lc *lockCluster, dir string) {
	var parts []string
	for i := range lc.procs {
		id := fmt.Sprintf("n%d", i+1)
		matches, _ := filepath.Glob(filepath.Join(dir, "lockcluster", id, "snapshots", "*", "state.bin"))
		var newest os.FileInfo
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && (newest == nil || fi.ModTime().After(newest.ModTime())) {
				newest = fi
			}
		}
		if newest == nil {
			parts = append(parts, id+" none")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MB", id, float64(newest.Size())/(1<<20)))
	}
	fmt.Printf("- latest snapshot on disk: %s\n", strings.Join(parts, ", "))
}

// status asks one node for its status.
func status(ctx context.Context, lc *lockCluster, addr string) (client.Status, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return lc.c.NodeStatus(cctx, addr)
}

// leaderIndex is the member index of the leader, or -1.
func leaderIndex(ctx context.Context, lc *lockCluster) int {
	for i, a := range lc.addrs {
		if lc.procs[i].exited() {
			continue
		}
		if st, err := status(ctx, lc, a); err == nil && st.State == "leader" {
			return i
		}
	}
	return -1
}

// restartNode starts member i again with its data, as startLockcluster
// first started it.
func restartNode(lc *lockCluster, i int, dir string) error {
	old := lc.procs[i]
	p, err := startProc(old.name, filepath.Join(dir, "lockcluster", fmt.Sprintf("n%d.log", i+1)), old.cmd.Path, old.cmd.Args[1:]...)
	if err != nil {
		return err
	}
	lc.procs[i] = p
	return nil
}

// ready reports whether addr answers /readyz with 200.
func ready(ctx context.Context, addr string) bool {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// restartFollower kills a follower with SIGKILL, starts it again on its
// data and times how long until it is ready and has applied what the
// leader had committed when it died.
func restartFollower(ctx context.Context, lc *lockCluster, dir string) error {
	li := leaderIndex(ctx, lc)
	if li < 0 {
		return fmt.Errorf("no leader")
	}
	fi := (li + 1) % len(lc.procs)
	lst, err := status(ctx, lc, lc.addrs[li])
	if err != nil {
		return err
	}
	_ = lc.procs[fi].cmd.Process.Kill()
	<-lc.procs[fi].done
	start := time.Now()
	if err := restartNode(lc, fi, dir); err != nil {
		return err
	}
	deadline := start.Add(5 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if lc.procs[fi].exited() {
			return fmt.Errorf("the restarted node exited; see %s", lc.procs[fi].log)
		}
		if st, err := status(ctx, lc, lc.addrs[fi]); err == nil && st.AppliedIndex >= lst.CommitIndex && ready(ctx, lc.addrs[fi]) {
			fmt.Printf("- a follower killed (SIGKILL) and started again on its data: ready with every entry the leader had committed after %s (RSS %s MB)\n",
				time.Since(start).Round(time.Millisecond), mb(rssOf(lc.procs[fi : fi+1])[0]))
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the restarted follower was not ready within 5 minutes")
}

// killLeader kills the leader with SIGKILL and times how long until a
// write succeeds through the others, and checks that the held locks are
// all still held afterwards (a leader change must not end them early).
func killLeader(ctx context.Context, lc *lockCluster, dir string, held int) error {
	li := leaderIndex(ctx, lc)
	if li < 0 {
		return fmt.Errorf("no leader")
	}
	_ = lc.procs[li].cmd.Process.Kill()
	<-lc.procs[li].done
	start := time.Now()
	var took time.Duration
	for i := 0; ; i++ {
		if time.Since(start) > 2*time.Minute || ctx.Err() != nil {
			return fmt.Errorf("no write succeeded within 2 minutes of the leader's death")
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		ok, err := take(cctx, lc.c, fmt.Sprintf("after-kill-%d", i), "scale", time.Minute)
		cancel()
		if err == nil && ok {
			took = time.Since(start)
			break
		}
	}
	var keys int
	for i, a := range lc.addrs {
		if i == li {
			continue
		}
		if st, err := status(ctx, lc, a); err == nil && st.State == "leader" {
			keys = st.Keys
		}
	}
	fmt.Printf("- the leader killed (SIGKILL): the next write succeeded after %s; the new leader holds %d keys (%d held before, none may have ended)\n",
		took.Round(time.Millisecond), keys, held)
	if keys < held {
		return fmt.Errorf("%d held locks ended at the leader change", held-keys)
	}
	return restartNode(lc, li, dir)
}

// expiryStorm holds so.storm locks that all end within the same second
// and compares the workers' rate during that second with their rate
// before it.
func expiryStorm(ctx context.Context, lc *lockCluster, so scaleOptions) error {
	var seq atomic.Int64
	sc := scenario{name: "fresh", workers: so.workers, keyFor: func(w int) string {
		return fmt.Sprintf("storm-cycle-%d-%d", w, seq.Add(1))
	}}
	quiet, err := run(ctx, lc, sc, time.Second, 3*time.Second)
	if err != nil {
		return err
	}
	// Every lock's TTL ends at the same instant: filling takes a while,
	// so the later ones get shorter TTLs.
	end := time.Now().Add(90 * time.Second)
	rate, err := fill(ctx, 0, so.storm, func(ctx context.Context, i int) error {
		ttl := time.Until(end).Truncate(time.Millisecond)
		ok, err := take(ctx, lc.c, "storm-"+strconv.Itoa(i), "storm-holder", ttl)
		if err == nil && !ok {
			err = fmt.Errorf("storm-%d: not granted", i)
		}
		return err
	})
	if err != nil {
		return err
	}
	if time.Until(end) < 5*time.Second {
		return fmt.Errorf("filling %d locks took too long (%.0f/s) to measure before they end", so.storm, rate)
	}
	time.Sleep(time.Until(end.Add(-time.Second))) // the storm's moment, not synchronisation
	storm, err := run(ctx, lc, sc, 0, 4*time.Second)
	if err != nil {
		return err
	}
	li := leaderIndex(ctx, lc)
	left := -1
	if li >= 0 {
		if st, err := status(ctx, lc, lc.addrs[li]); err == nil {
			left = st.Keys
		}
	}
	fmt.Printf("- expiry storm: %d locks ending in the same second; %d workers cycling other keys: %.0f cycles/s before, %.0f/s over the 4 s around it (%.2fx), acquire p99 %s → %s; keys left after: %d\n",
		so.storm, so.workers, quiet.PerSecond(), storm.PerSecond(), storm.PerSecond()/quiet.PerSecond(),
		fmtDur(load.Percentile(quiet.Acquire, 99)), fmtDur(load.Percentile(storm.Acquire, 99)), left)
	return nil
}

// clientsRun opens n clients, each its own connection to one node (the
// leader), each holding a lock of its own and refreshing it every ttl/3
// for d, and reports the refresh latency, refusals and the node's memory.
func clientsRun(ctx context.Context, lc *lockCluster, n int, d time.Duration, profiles string) error {
	li := leaderIndex(ctx, lc)
	if li < 0 {
		return fmt.Errorf("no leader")
	}
	addr := lc.addrs[li]
	before := rssOf(lc.procs[li : li+1])[0]
	const ttl = 30 * time.Second
	clients := make([]*client.Client, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
	}()
	var granted atomic.Int64
	opened := time.Now()
	if _, err := fill(ctx, 0, n, func(ctx context.Context, i int) error {
		c, err := client.New(client.Config{Addrs: []string{addr}})
		if err != nil {
			return err
		}
		clients[i] = c
		ok, err := take(ctx, c, "client-"+strconv.Itoa(i), "client-owner", ttl)
		if err == nil && !ok {
			err = fmt.Errorf("client-%d: not granted", i)
		}
		if err == nil {
			granted.Add(1)
		}
		return err
	}); err != nil {
		return fmt.Errorf("after %d clients held their lock (%s): %w", granted.Load(), time.Since(opened).Round(time.Millisecond), err)
	}
	openTook := time.Since(opened)
	held := rssOf(lc.procs[li : li+1])[0]

	// Each client refreshes every ttl/3, the first ones spread over the
	// first period, for d.
	period := ttl / 3
	var mu sync.Mutex
	var lat []time.Duration
	var refused, failed atomic.Int64
	errs := map[string]int{}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(period * time.Duration(i) / time.Duration(n))
			for {
				wait := time.Until(next)
				if time.Now().Add(wait).After(end) || ctx.Err() != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				next = next.Add(period)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t0 := time.Now()
				ok, err := c.Extend(cctx, "client-"+strconv.Itoa(i), "client-owner", ttl)
				took := time.Since(t0)
				cancel()
				switch {
				case err != nil:
					failed.Add(1)
					mu.Lock()
					errs[errClass(err)]++
					mu.Unlock()
				case !ok:
					refused.Add(1)
				default:
					mu.Lock()
					lat = append(lat, took)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	during := rssOf(lc.procs[li : li+1])[0]
	if profiles != "" {
		saveProfiles(ctx, lc, profiles, "lockcluster-leader-clients")
	}
	fmt.Printf("- %d clients, each its own connection to the leader and one lock of %s refreshed every %s, for %s: opened and granted in %s; %d refreshes, p50 %s p99 %s max %s; %d refused, %d failed; the leader's RSS %s MB → %s MB holding → %s MB refreshing\n",
		n, ttl, period, d, openTook.Round(time.Millisecond), len(lat), fmtDur(load.Percentile(lat, 50)), fmtDur(load.Percentile(lat, 99)),
		fmtDur(lastOf(lat)), refused.Load(), failed.Load(), mb(before), mb(held), mb(during))
	for e, n := range errs {
		fmt.Printf("  - %d failed with: %s\n", n, e)
	}
	if refused.Load() > 0 || failed.Load() > 0 {
		return fmt.Errorf("%d refreshes refused and %d failed", refused.Load(), failed.Load())
	}
	return nil
}

// errClass is err's message without the numbers in it (ports, ids,
// durations), so that failures of one kind are counted together.
func errClass(err error) string {
	msg := []rune(err.Error())
	out := make([]rune, 0, len(msg))
	for _, r := range msg {
		if r >= '0' && r <= '9' {
			if len(out) > 0 && out[len(out)-1] == '#' {
				continue
			}
			r = '#'
		}
		out = append(out, r)
	}
	if len(out) > 300 {
		out = append(out[:300], '…')
	}
	return string(out)
}

func lastOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)-1]
}
