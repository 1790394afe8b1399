package sqlite_test

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// hold is one journal line: a critical section as its process saw it.
type hold struct {
	key        string
	fence      uint64
	start, end int64 // Unix ns, host wall clock
	pid        int
}

func readJournal(t *testing.T, path string) []hold {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var holds []hold
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var h hold
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %d %d", &h.key, &h.fence, &h.start, &h.end, &h.pid); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		holds = append(holds, h)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return holds
}

// exclusionViolations checks, per key, that fences strictly increase in the
// order the holds happened and that no two holds overlap in time.
func exclusionViolations(holds []hold) []string {
	byKey := map[string][]hold{}
	for _, h := range holds {
		byKey[h.key] = append(byKey[h.key], h)
	}
	var bad []string
	for key, hs := range byKey {
		slices.SortFunc(hs, func(a, b hold) int { return cmp.Compare(a.fence, b.fence) })
		for i := 1; i < len(hs); i++ {
			prev, cur := hs[i-1], hs[i]
			if cur.fence == prev.fence {
				bad = append(bad, fmt.Sprintf("%s: fence %d granted twice (pids %d, %d)", key, cur.fence, prev.pid, cur.pid))
			}
			if cur.start < prev.end {
				bad = append(bad, fmt.Sprintf("%s: fence %d (pid %d) began %v before fence %d (pid %d) ended",
					key, cur.fence, cur.pid, time.Duration(prev.end-cur.start), prev.fence, prev.pid))
			}
		}
	}
	return bad
}

func TestJournalCheck_FindsOverlapsAndReusedFences(t *testing.T) {
	holds := []hold{
		{key: "a", fence: 1, start: 10, end: 20, pid: 1},
		{key: "a", fence: 2, start: 15, end: 30, pid: 2}, // overlaps fence 1
		{key: "b", fence: 3, start: 10, end: 20, pid: 1},
		{key: "b", fence: 3, start: 30, end: 40, pid: 2}, // fence reused
		{key: "c", fence: 5, start: 10, end: 20, pid: 1},
		{key: "c", fence: 4, start: 30, end: 40, pid: 2}, // fence went down
	}
	if got := exclusionViolations(holds); len(got) != 3 {
		t.Fatalf("violations = %q, want 3", got)
	}
	if got := exclusionViolations(holds[4:5]); len(got) != 0 {
		t.Fatalf("violations of one clean hold = %q", got)
	}
}

// checkFile runs SQLite's integrity check and returns the rows still held.
func checkFile(t *testing.T, path string) (held int) {
	t.Helper()
	db := rawDB(t, path)
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check = %q, %v", res, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM zerotal_locks WHERE expires_us > ?`, time.Now().UnixMicro()).Scan(&held); err != nil {
		t.Fatal(err)
	}
	return held
}

func hammerEnv(path, journal string, keys, workers, rounds int, ttl time.Duration) []string {
	return []string{
		envPath + "=" + path,
		envJournal + "=" + journal,
		envKeys + "=" + strconv.Itoa(keys),
		envWorkers + "=" + strconv.Itoa(workers),
		envRounds + "=" + strconv.Itoa(rounds),
		envTTL + "=" + ttl.String(),
	}
}

// runHelpers runs procs helper processes of mode at once (they race to
// create the schema, too), waits for each to finish, and returns the holds
// they journalled, which must be want.
func runHelpers(t *testing.T, procs int, mode, journal string, want int, env []string) []hold {
	t.Helper()
	var children []*child
	for range procs {
		children = append(children, startChild(t, helperCmd(t, mode, env...)))
	}
	for _, c := range children {
		if err := c.wait(90 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	holds := readJournal(t, journal)
	if len(holds) != want {
		t.Fatalf("journal has %d holds, want %d", len(holds), want)
	}
	return holds
}

func TestProcesses_ExclusionOnOneFile(t *testing.T) {
	dir := t.TempDir()
	path, journal := filepath.Join(dir, "locks.db"), filepath.Join(dir, "journal")
	const procs, workers, rounds, keys = 4, 4, 25, 3
	// The processes race to create the schema, too.
	holds := runHelpers(t, procs, "hammer", journal, procs*workers*rounds, hammerEnv(path, journal, keys, workers, rounds, 10*time.Second))
	if bad := exclusionViolations(holds); len(bad) > 0 {
		t.Fatalf("%d violations across processes, first ones: %q", len(bad), bad[:min(5, len(bad))])
	}
	if held := checkFile(t, path); held != 0 {
		t.Fatalf("%d locks still held after every process released", held)
	}
	t.Logf("%d holds by %d processes on %d keys, 0 violations", len(holds), procs, keys)
}

func TestProcesses_KilledHolderFreesAfterTTL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	const ttl = time.Second
	holder := startChild(t, helperCmd(t, "hold", envPath+"="+path, envTTL+"="+ttl.String()))
	var childFence uint64
	var deadlineNS int64
	if _, err := fmt.Sscanf(holder.line(t, 30*time.Second), "held %d %d", &childFence, &deadlineNS); err != nil {
		t.Fatal(err)
	}
	d := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), d, "held-by-child", "someone-else", time.Minute); err != nil || ok {
		t.Fatalf("Acquire while the child holds the key = %v, %v; want not acquired", ok, err)
	}
	holder.kill()
	if err := holder.wait(10 * time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("holder after SIGKILL: %v", err)
	}
	if held, err := d.Exists(t.Context(), "held-by-child"); err != nil || (!held && time.Now().UnixNano() < deadlineNS) {
		t.Fatalf("Exists right after the kill = %v, %v; the lock must outlive its holder until the TTL", held, err)
	}
	fence, err := driverstest.TakeWait(t.Context(), d, "held-by-child", "next-owner", time.Minute, drivers.WaitOptions{RetryDelay: 50 * time.Millisecond})
	got := time.Now()
	if err != nil {
		t.Fatalf("AcquireWait after the holder died: %v", err)
	}
	if got.UnixNano() < deadlineNS {
		t.Fatalf("granted %v before the dead holder's TTL ran out", time.Duration(deadlineNS-got.UnixNano()))
	}
	if late := got.Sub(time.Unix(0, deadlineNS)); late > 2*time.Second {
		t.Fatalf("granted %v after the dead holder's TTL ran out", late)
	}
	if fence <= childFence {
		t.Fatalf("fence after take-over = %d, want > %d", fence, childFence)
	}
	if held := checkFile(t, path); held != 1 {
		t.Fatalf("%d locks held, want the one just taken over", held)
	}
}

func TestProcesses_HammerSurvivesAKilledProcess(t *testing.T) {
	dir := t.TempDir()
	path, journal := filepath.Join(dir, "locks.db"), filepath.Join(dir, "journal")
	// The victim's TTL is short, so that the key it dies holding frees soon;
	// under load one of its holds may outlast it, which it skips. The
	// survivors' TTL is long, so each of their releases must find the lock.
	const victimTTL, survivorTTL = time.Second, 10 * time.Second
	d := openT(t, sqlite.Config{Path: path}) // creates the schema before the processes start
	victim := startChild(t, helperCmd(t, "hammer", append(hammerEnv(path, journal, 2, 4, 100000, victimTTL), envLapsesOK+"=1")...))
	var survivors []*child
	for range 3 {
		survivors = append(survivors, startChild(t, helperCmd(t, "hammer", hammerEnv(path, journal, 2, 3, 40, survivorTTL)...)))
	}
	// Kill the victim once it has done some work, most likely holding a key.
	if !poll.Wait(60*time.Second, func() bool { return victimHolds(t, journal, victim.pid()) >= 20 }) {
		t.Fatalf("victim made fewer than 20 holds in 60s; stderr:\n%s", victim.stderr.String())
	}
	victim.kill()
	for _, c := range survivors {
		if err := c.wait(90 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	holds := readJournal(t, journal)
	if bad := exclusionViolations(holds); len(bad) > 0 {
		t.Fatalf("%d violations, first ones: %q", len(bad), bad[:min(5, len(bad))])
	}
	if err := victim.wait(10 * time.Second); err == nil {
		t.Fatal("victim exited cleanly; it was meant to be killed mid-run")
	}
	if held := checkFile(t, path); held > 1 {
		t.Fatalf("%d locks held after the survivors finished; at most the victim's may remain until its TTL", held)
	}
	// The handle opened before the kill still works.
	if _, ok, err := driverstest.Take(t.Context(), d, "after-kill", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after the kill = %v, %v", ok, err)
	}
	t.Logf("%d holds, victim killed after %d, 0 violations", len(holds), victimHolds(t, journal, victim.pid()))
}

func victimHolds(t *testing.T, journal string, pid int) int {
	t.Helper()
	b, err := os.ReadFile(journal)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), " "+strconv.Itoa(pid)+"\n")
}

func TestProcesses_FencesSurviveRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	var last uint64
	for round := range 3 {
		// A process takes the key and dies without releasing it.
		holder := startChild(t, helperCmd(t, "hold", envPath+"="+path, envTTL+"=1ms"))
		var fence uint64
		var deadlineNS int64
		if _, err := fmt.Sscanf(holder.line(t, 30*time.Second), "held %d %d", &fence, &deadlineNS); err != nil {
			t.Fatal(err)
		}
		holder.kill()
		_ = holder.wait(10 * time.Second)
		if fence <= last {
			t.Fatalf("round %d: fence %d after %d", round, fence, last)
		}
		last = fence
		// A new handle in this process continues the sequence.
		d, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		f, err := driverstest.TakeWait(t.Context(), d, "held-by-child", "parent", time.Minute, drivers.WaitOptions{RetryDelay: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if f <= last {
			t.Fatalf("round %d: fence %d after %d", round, f, last)
		}
		last = f
		if ok, err := d.Release(t.Context(), "held-by-child", "parent"); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// mostAtOnce is the largest number of holds that overlap in time, and the
// fences granted more than once.
func mostAtOnce(holds []hold) (most int, reused []uint64) {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	seen := map[uint64]bool{}
	for _, h := range holds {
		edges = append(edges, edge{h.start, 1}, edge{h.end, -1})
		if seen[h.fence] {
			reused = append(reused, h.fence)
		}
		seen[h.fence] = true
	}
	// An end and a start at one instant: the end first.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	n := 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most, reused
}

// A semaphore of 2 on one file, its slots taken by the waiting workers of
// four processes: never more than two holds overlap, every fence is its
// own, and every worker got its turns.
func TestProcesses_SemaphoreAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	path, journal := filepath.Join(dir, "locks.db"), filepath.Join(dir, "journal")
	const procs, workers, rounds, limit = 4, 3, 15, 2
	env := append(hammerEnv(path, journal, 1, workers, rounds, 10*time.Second), envLimit+"="+strconv.Itoa(limit))
	holds := runHelpers(t, procs, "semhammer", journal, procs*workers*rounds, env)
	most, reused := mostAtOnce(holds)
	if most > limit || len(reused) > 0 {
		t.Fatalf("%d holds at once (limit %d), fences granted twice: %v", most, limit, reused)
	}
	t.Logf("%d holds by %d processes, at most %d at once (limit %d)", len(holds), procs, most, limit)
}

func TestJournalCheck_CountsOverlaps(t *testing.T) {
	holds := []hold{{fence: 1, start: 0, end: 10}, {fence: 2, start: 5, end: 15}, {fence: 3, start: 6, end: 7}, {fence: 3, start: 20, end: 30}}
	if most, reused := mostAtOnce(holds); most != 3 || len(reused) != 1 {
		t.Fatalf("mostAtOnce = %d, %v; want 3 and fence 3 reused", most, reused)
	}
}
