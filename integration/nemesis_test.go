package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The nemesis suite: a workload of several clients (nemesis_workload_test.go)
// runs against three lockcluster processes built with -tags faults
// (cmd/lockcluster/faults_on.go), whose node-to-node connections go through
// proxies in the test process (proxy_test.go) and whose clocks the test
// skews at run time (nemesis_cluster_test.go). The nemesis
// (nemesis_faults_test.go) kills, restarts, pauses, partitions and skews
// nodes; every operation is recorded (history_test.go) and the history is
// checked by the checker (checker_test.go) and by porcupine against a
// sequential lock model (porcupine_test.go). Besides the workload's own
// clients, rounds steered into a retried waiting acquire racing a
// hand-off run (nemesis_retried_test.go; TestNemesis_RetriedWaits runs
// them alone, with followers killed, stopped and cut off), and clients
// with the default configuration measure what a fault costs an untuned
// user (nemesis_untuned_test.go, report only). The short run is part of
// the ordinary test run; TestSoak (soak_test.go) is the long one.
//
//	go test -race -count=1 -run 'TestNemesis|TestChecker|TestPorcupine' ./integration/
//	ZEROTAL_SOAK=10m go test -race -count=1 -run TestSoak -timeout 0 ./integration/
//	ZEROTAL_RETRIED_WAITS=60s go test -race -count=1 -run TestNemesis_RetriedWaits ./integration/
//
// ZEROTAL_RAFT_LOG=wal (or bolt) puts the nodes' raft log in that store
// (lockcluster agent --raft-log) for every run that does not choose one
// itself: the soak, the retried waits, the clock runs. Unset: the
// agent's default. TestNemesis_FaultsOneAtATimeThenMixed runs on both.
//
//	ZEROTAL_RAFT_LOG=wal ZEROTAL_SOAK=10m go test -race -count=1 -run TestSoak -timeout 0 ./integration/

// holdFor is how long a fault of kind lasts.
func holdFor(kind faultKind) time.Duration {
	switch kind {
	case faultPauseLeader:
		return 3 * time.Second // longer than every hot TTL (2s at most)
	case faultPauseFollower:
		return 3 * time.Second // longer than a forwarded attempt's timeout
	case faultPartitionLeader, faultPartitionFollower, faultPartitionAll:
		return 3 * time.Second
	case faultSlowClock:
		return 4 * time.Second
	case faultKillAll:
		return time.Second
	}
	return 1500 * time.Millisecond
}

// gapBetweenFaults lets the cluster settle and the workload write between
// two faults.
const gapBetweenFaults = 1500 * time.Millisecond

// TestNemesis_FaultsOneAtATimeThenMixed runs the workload against three
// fault-injection nodes while every kind of fault is injected once, then
// a few at random; then stops every node with SIGKILL, starts them again
// and checks the whole history: fences follow real time, never two
// holders, nothing acknowledged lost, and the durable keys' history is
// linearizable for a sequential lock.
//
// On each log store: bolt with every kind of fault, wal with the faults
// that stop processes and lose what was not on disk (a shorter run, to
// keep the ordinary test run short; make soak runs either in full, see
// ZEROTAL_RAFT_LOG above).
func TestNemesis_FaultsOneAtATimeThenMixed(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		runFaultsOneAtATime(t, "bolt", allFaults, 3)
	})
	t.Run("wal", func(t *testing.T) {
		runFaultsOneAtATime(t, "wal", []faultKind{faultKillLeader, faultKillFollower, faultRestart, faultKillAll, faultPartitionLeader}, 1)
	})
}

// runFaultsOneAtATime injects each of kinds once, then random ones, into
// a cluster whose raft log is in raftLog.
func runFaultsOneAtATime(t *testing.T, raftLog string, kinds []faultKind, random int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	runNemesisOn(t, raftLog, seed, func(ctx context.Context, n *nemesis) error {
		kinds := slices.Clone(kinds)
		for range random {
			kinds = append(kinds, n.randomKind())
		}
		for _, k := range kinds {
			if !sleepCtx(ctx, gapBetweenFaults) {
				return ctx.Err()
			}
			if err := n.inject(ctx, k, holdFor(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// runNemesis runs a workload against a fault cluster while schedule
// injects faults, restarts every node, checks the history and returns the
// report.
func runNemesis(t *testing.T, seed uint64, schedule func(context.Context, *nemesis) error) runReport {
	t.Helper()
	return runNemesisOn(t, envRaftLog(t), seed, schedule)
}

// runNemesisOn is runNemesis with the raft log in raftLog (empty: the
// agent's default).
func runNemesisOn(t *testing.T, raftLog string, seed uint64, schedule func(context.Context, *nemesis) error) runReport {
	t.Helper()
	c := newFaultClusterOn(t, raftLog)
	h := newHistory()
	w := newWorkload(c.addrs(), h)
	w.seed = seed
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	workDone := make(chan error, 1)
	go func() { workDone <- w.run(ctx) }()
	untuned, err := runUntuned(ctx, c.addrs(), h)
	if err != nil {
		t.Fatalf("untuned clients: %v", err)
	}
	// Rounds steered into a retried wait racing a hand-off, beside the
	// workload (nemesis_retried_test.go).
	rw := newRetriedWaits(c, h)
	defer rw.api.Close()
	laneDone := make(chan struct{})
	go func() {
		defer close(laneDone)
		rw.runMixedLane(ctx, seed)
	}()

	rssStart, anonStart := map[string]int{}, map[string]int{}
	sleepCtx(ctx, time.Second) // warm up before measuring memory
	for _, n := range c.nodes {
		rssStart[n.id], anonStart[n.id] = n.rssKiB(), n.anonKiB()
	}
	rssSamples := map[string][]int{}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		sampleRSS(ctx, c, rssSamples)
	}()
	nem := newNemesis(c, h, seed)
	schedErr := schedule(ctx, nem)
	if schedErr == nil {
		sleepCtx(ctx, 2*time.Second) // writes after the last fault
	}
	cancel()
	stoppedAt := h.now()
	<-sampled
	<-laneDone
	if err := <-workDone; err != nil {
		t.Fatalf("workload: %v", err)
	}
	rssEnd, anonEnd := map[string]int{}, map[string]int{}
	for _, n := range c.nodes {
		rssEnd[n.id], anonEnd[n.id] = n.rssKiB(), n.anonKiB()
	}
	if schedErr != nil {
		t.Errorf("nemesis: %v", schedErr)
	}

	// Full stop (SIGKILL: only what reached the disk survives) and
	// restart, then read every durable key.
	restartAt := h.now()
	c.healAll()
	for i, n := range c.nodes {
		c.pause(i, false)
		n.kill()
	}
	for _, n := range c.nodes {
		c.start(n)
	}
	if _, err := c.leader(30 * time.Second); err != nil {
		t.Fatalf("after the full restart: %v", err)
	}
	reads := readDurable(t, w, h)
	ops := h.snapshot()
	var before []op
	for _, o := range ops {
		if o.start < restartAt {
			before = append(before, o)
		}
	}

	rep := buildReport(ops, nem.records)
	rep.Untuned = untuned.stats(nem.records, stoppedAt)
	rep.RSSStart, rep.RSSEnd = rssStart, rssEnd
	rep.AnonStart, rep.AnonEnd = anonStart, anonEnd
	rep.RSSMax, rep.RSSQuarters = map[string]int{}, map[string][3]int{}
	for id, ss := range rssSamples {
		rep.RSSMax[id] = slices.Max(ss)
		rep.RSSQuarters[id] = [3]int{rssAt(ss, len(ss)/4), rssAt(ss, len(ss)/2), rssAt(ss, len(ss)*3/4)}
	}
	vs := checkHistory(ops)
	lost, held := checkDurable(before, reads)
	vs = append(vs, lost...)
	rep.Violations = len(vs)
	rep.DurableHeld = held
	rep.SharedGrants = sharedGrants(ops)
	if len(w.sharedKeys) > 0 && len(rep.SharedGrants) == 0 {
		t.Errorf("the run made no grant of a shared key: the checker's shared rules were not exercised")
	}

	var durable []op
	long := w.longKeys()
	for _, o := range ops {
		if slices.Contains(long, o.key) {
			durable = append(durable, o)
		}
	}
	res := checkLinearizable(durable, 60*time.Second)
	rep.Porcupine = map[porcupine.CheckResult]string{
		porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable", porcupine.Unknown: "timed out (undecided)",
	}[res]
	rep.Porcupine += fmt.Sprintf(" (%d operations on %d long-TTL keys)", len(durable), len(long))

	t.Logf("report:\n%s", rep)
	logSlowRecoveries(t, ops, nem.records)
	if dir := os.Getenv("ZEROTAL_NEMESIS_REPORT_DIR"); dir != "" {
		name := strings.ReplaceAll(t.Name(), "/", "_")
		_ = os.WriteFile(filepath.Join(dir, name+".json"), rep.JSON(), 0o644)
		_ = os.WriteFile(filepath.Join(dir, name+".md"), []byte(rep.String()), 0o644)
		_ = os.WriteFile(filepath.Join(dir, name+".history.txt"), []byte(formatOps(ops)), 0o644)
		for _, n := range c.nodes {
			if b, err := os.ReadFile(n.logPath); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name+"."+n.id+".log"), b, 0o644)
			}
		}
	}
	if len(vs) > 0 {
		t.Errorf("%d violations (seed %d):\n%s", len(vs), seed, formatViolations(vs))
	}
	if res == porcupine.Illegal {
		t.Errorf("porcupine: the durable keys' history is not linearizable (seed %d):\n%s", seed, formatOps(durable))
	}
	if len(rep.Unrecovered) > 0 {
		t.Errorf("the cluster did not write again after: %s", strings.Join(rep.Unrecovered, "; "))
	}
	if rep.Ops["acquire ok"]+rep.Ops["acquire-wait ok"] == 0 {
		t.Errorf("no grant at all: the workload did not run")
	}
	return rep
}

// readDurable reads every durable key after the restart, retrying while
// the answer is unknown, and records the reads in h.
func readDurable(t *testing.T, w *workload, h *history) []op {
	t.Helper()
	cl := &workClient{w: w, id: w.clients}
	var err error
	cl.cl, err = newReadClient(w.addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.cl.Close() }()
	var reads []op
	keys := w.longKeys()
	for _, key := range keys {
		for range 10 {
			r := cl.get(key)
			if r.result != resUnknown {
				reads = append(reads, r)
				break
			}
		}
	}
	if len(reads) != len(keys) {
		t.Errorf("read %d of %d long-TTL keys after the restart", len(reads), len(keys))
	}
	return reads
}

// sampleRSS records each node's resident set size every second until ctx
// ends (0 while the node is down).
func sampleRSS(ctx context.Context, c *faultCluster, samples map[string][]int) {
	for sleepCtx(ctx, time.Second) {
		for _, n := range c.nodes {
			samples[n.id] = append(samples[n.id], n.rssKiB())
		}
	}
}

// logSlowRecoveries shows, for every fault after which writes took more
// than 5s to resume, the faults and the failed operations of that window.
func logSlowRecoveries(t *testing.T, ops []op, faults []faultRecord) {
	t.Helper()
	for _, f := range faults {
		next := time.Duration(-1)
		for _, o := range ops {
			if isWrite(o) && o.start >= f.end && (next < 0 || o.end < next) {
				next = o.end
			}
		}
		if next >= 0 && next-f.end < 5*time.Second {
			continue
		}
		var b strings.Builder
		shown := 0
		for _, o := range ops {
			if o.start >= f.start && o.start <= max(next, f.end+5*time.Second) && o.result == resUnknown && shown < 30 {
				b.WriteString(o.String() + "\n")
				shown++
			}
		}
		t.Logf("slow recovery after %s of %s (%.3fs..%.3fs, leader %s -> %s): next write at %.3fs; unknown operations:\n%s",
			f.kind, f.node, f.start.Seconds(), f.end.Seconds(), f.leaderBefore, f.leaderAfter, next.Seconds(), b.String())
	}
}

// rssAt is the first sample from i on taken while the node was up.
func rssAt(samples []int, i int) int {
	for ; i < len(samples); i++ {
		if samples[i] > 0 {
			return samples[i]
		}
	}
	return 0
}
