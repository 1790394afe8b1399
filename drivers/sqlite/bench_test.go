package sqlite_test

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers/driverstest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/sqlite"
)

// The benchmarks run each workload in helper processes for a fixed time
// (ZEROTAL_BENCH_PHASE, default 2s) and compare them side by side in one
// run, as ratios. Run them once each:
//
//	go test -run '^$' -bench . -benchtime 1x ./drivers/sqlite/
//
// One cycle = one successful acquire followed by one release. Kinds:
//   - driver: sqlite.Driver, one handle per process shared by its workers;
//     Acquire on distinct keys, AcquireWait on one key.
//   - driver-durable: the same with Config.Durable (an fsync per commit).
//   - sql: the bare SQL a cycle needs, no lock logic: INSERT the key, DELETE
//     it, each its own transaction, busy_timeout 5000, a pool per process;
//     on one key a worker repeats INSERT OR IGNORE until it inserts.
//   - flock: flock(2) on one file per key, for context.

const benchPhaseEnv = "ZEROTAL_BENCH_PHASE"

// benchResult is what a helper process reports.
type benchResult struct {
	Cycles    int64   `json:"cycles"`
	Seconds   float64 `json:"seconds"`
	Quantiles []int64 `json:"quantiles"` // acquire latency, ns, evenly spaced quantiles
}

type scenario struct {
	procs, workers int
	oneKey         bool
}

// phase is the merged outcome of one kind over all processes.
type phase struct {
	rate     float64 // cycles per second, all processes together
	p50, p99 time.Duration
	fairness float64 // cycles of the slowest process / of the fastest
}

func runPhase(b *testing.B, kind string, sc scenario, dir string) phase {
	b.Helper()
	dur := envDur(benchPhaseEnv, 2*time.Second)
	var children []*child
	for i := range sc.procs {
		keyMode := "distinct"
		if sc.oneKey {
			keyMode = "one"
		}
		cmd := helperCmd(b, "bench",
			envKind+"="+kind,
			envPath+"="+filepath.Join(dir, kind+".db"),
			envWorkers+"="+strconv.Itoa(sc.workers),
			envKeys+"="+keyMode,
			envKeyPrefix+"="+fmt.Sprintf("p%d-", i),
			envDuration+"="+dur.String(),
		)
		children = append(children, startChild(b, cmd))
	}
	for _, c := range children {
		if l := c.line(b, time.Minute); l != "ready" {
			b.Fatalf("%s helper said %q", kind, l)
		}
	}
	for _, c := range children {
		c.send(b, "go")
	}
	var results []benchResult
	for _, c := range children {
		var r benchResult
		if err := json.Unmarshal([]byte(c.line(b, dur+time.Minute)), &r); err != nil {
			b.Fatal(err)
		}
		if err := c.wait(time.Minute); err != nil {
			b.Fatal(err)
		}
		results = append(results, r)
	}
	return mergePhase(results)
}

// mergePhase adds the rates and takes percentiles over every process's
// quantiles, each weighted by the cycles it stands for.
func mergePhase(rs []benchResult) phase {
	type sample struct {
		ns int64
		w  float64
	}
	var ph phase
	var samples []sample
	var total float64
	for _, r := range rs {
		if r.Seconds > 0 {
			ph.rate += float64(r.Cycles) / r.Seconds
		}
		for _, q := range r.Quantiles {
			w := float64(r.Cycles) / float64(len(r.Quantiles))
			samples = append(samples, sample{q, w})
			total += w
		}
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, r := range rs {
		lo, hi = min(lo, r.Cycles), max(hi, r.Cycles)
	}
	if hi > 0 {
		ph.fairness = float64(lo) / float64(hi)
	}
	slices.SortFunc(samples, func(a, b sample) int { return cmp.Compare(a.ns, b.ns) })
	at := func(p float64) time.Duration {
		var acc float64
		for _, s := range samples {
			if acc += s.w; acc >= p*total {
				return time.Duration(s.ns)
			}
		}
		return 0
	}
	ph.p50, ph.p99 = at(0.50), at(0.99)
	return ph
}

func benchScenario(b *testing.B, sc scenario, durable bool) {
	dir := b.TempDir()
	if err := createBaselineTable(filepath.Join(dir, "sql.db")); err != nil {
		b.Fatal(err)
	}
	base := runPhase(b, "sql", sc, dir)
	drv := runPhase(b, "driver", sc, dir)
	fl := runPhase(b, "flock", sc, dir)
	if durable {
		dur := runPhase(b, "driver-durable", sc, dir)
		b.ReportMetric(dur.rate, "durable-cycles/s")
		b.ReportMetric(dur.rate/base.rate, "durable/sql")
	}
	b.ReportMetric(1e9/drv.rate, "ns/op")
	b.ReportMetric(drv.rate, "driver-cycles/s")
	b.ReportMetric(base.rate, "sql-cycles/s")
	b.ReportMetric(fl.rate, "flock-cycles/s")
	b.ReportMetric(drv.rate/base.rate, "driver/sql")
	b.ReportMetric(float64(drv.p50.Microseconds()), "driver-p50-µs")
	b.ReportMetric(float64(drv.p99.Microseconds()), "driver-p99-µs")
	b.ReportMetric(float64(base.p50.Microseconds()), "sql-p50-µs")
	b.ReportMetric(float64(base.p99.Microseconds()), "sql-p99-µs")
	if sc.procs > 1 {
		b.ReportMetric(drv.fairness, "driver-min/max-proc")
		b.ReportMetric(base.fairness, "sql-min/max-proc")
	}
}

// BenchmarkCycle_Spread4x8: 4 processes x 8 workers, each worker its own key.
func BenchmarkCycle_Spread4x8(b *testing.B) {
	benchScenario(b, scenario{procs: 4, workers: 8}, true)
}

// BenchmarkCycle_Hot1x8: one process, 8 workers contending for one key.
func BenchmarkCycle_Hot1x8(b *testing.B) {
	benchScenario(b, scenario{procs: 1, workers: 8, oneKey: true}, false)
}

// BenchmarkCycle_Hot4x2: 4 processes x 2 workers contending for one key.
func BenchmarkCycle_Hot4x2(b *testing.B) {
	benchScenario(b, scenario{procs: 4, workers: 2, oneKey: true}, false)
}

// BenchmarkHandOff: release in this process -> grant to a waiter in
// another process, over 100 rounds.
func BenchmarkHandOff(b *testing.B) {
	lat := measureHandOff(b, filepath.Join(b.TempDir(), "locks.db"), 100)
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "handoff-p99-µs")
	b.ReportMetric(float64(percentile(lat, 0.5).Nanoseconds()), "ns/op")
}

const baselineDSN = "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)"

func createBaselineTable(path string) error {
	db, err := sql.Open("sqlite", path+baselineDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE bench_locks (key TEXT PRIMARY KEY, owner TEXT NOT NULL) WITHOUT ROWID`)
	return err
}

// cycleFunc runs one cycle for worker w and returns the acquire latency.
type cycleFunc func(ctx context.Context, w int, i int64) (time.Duration, error)

// helperBench prints "ready", waits for "go" on stdin, runs the workload
// for the configured time and prints a benchResult as JSON.
func helperBench(ctx context.Context) error {
	workers := envInt(envWorkers, 8)
	prefix := os.Getenv(envKeyPrefix)
	oneKey := os.Getenv(envKeys) == "one"
	keyOf := func(w int) string {
		if oneKey {
			return "hot"
		}
		return prefix + strconv.Itoa(w)
	}
	cycle, closeFn, err := benchCycle(ctx, os.Getenv(envKind), os.Getenv(envPath), workers, oneKey, keyOf)
	if err != nil {
		return err
	}
	defer closeFn()

	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	dur := envDur(envDuration, 2*time.Second)
	start := time.Now()
	stop := start.Add(dur)
	lats := make([][]time.Duration, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); time.Now().Before(stop); i++ {
				lat, err := cycle(ctx, w, i)
				if err != nil {
					errs <- err
					return
				}
				lats[w] = append(lats[w], lat)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	all := slices.Concat(lats...)
	slices.Sort(all)
	r := benchResult{Cycles: int64(len(all)), Seconds: elapsed.Seconds()}
	const nq = 2000
	for q := range min(nq, len(all)) {
		idx := int(math.Floor(float64(q) / float64(min(nq, len(all))) * float64(len(all))))
		r.Quantiles = append(r.Quantiles, int64(all[idx]))
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

func benchCycle(ctx context.Context, kind, path string, workers int, oneKey bool, keyOf func(int) string) (cycleFunc, func(), error) {
	owner := func(w int, i int64) string { return fmt.Sprintf("%d.%d.%d", os.Getpid(), w, i) }
	switch kind {
	case "driver", "driver-durable":
		d, err := sqlite.Open(ctx, sqlite.Config{Path: path, Durable: kind == "driver-durable"})
		if err != nil {
			return nil, nil, err
		}
		cycle := func(ctx context.Context, w int, i int64) (time.Duration, error) {
			key, o := keyOf(w), owner(w, i)
			t0 := time.Now()
			if oneKey {
				if _, err := driverstest.TakeWait(ctx, d, key, o, time.Minute, drivers.WaitOptions{RetryDelay: 100 * time.Millisecond}); err != nil {
					return 0, err
				}
			} else if _, ok, err := driverstest.Take(ctx, d, key, o, time.Minute); err != nil || !ok {
				return 0, fmt.Errorf("Acquire of a key of its own = %v, %v", ok, err)
			}
			lat := time.Since(t0)
			if ok, err := d.Release(ctx, key, o); err != nil || !ok {
				return 0, fmt.Errorf("Release = %v, %v", ok, err)
			}
			return lat, nil
		}
		return cycle, func() { _ = d.Close() }, nil
	case "sql":
		db, err := sql.Open("sqlite", path+baselineDSN)
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(workers)
		db.SetMaxIdleConns(workers)
		cycle := func(ctx context.Context, w int, i int64) (time.Duration, error) {
			key, o := keyOf(w), owner(w, i)
			t0 := time.Now()
			for {
				res, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO bench_locks (key, owner) VALUES (?, ?)`, key, o)
				if err != nil {
					if isBusyErr(err) {
						continue
					}
					return 0, err
				}
				if n, _ := res.RowsAffected(); n == 1 {
					break
				}
			}
			lat := time.Since(t0)
			for {
				_, err := db.ExecContext(ctx, `DELETE FROM bench_locks WHERE key = ? AND owner = ?`, key, o)
				if err == nil {
					break
				}
				if !isBusyErr(err) {
					return 0, err
				}
			}
			return lat, nil
		}
		return cycle, func() { _ = db.Close() }, nil
	case "flock":
		fds := make([]int, workers)
		for w := range workers {
			fd, err := syscall.Open(filepath.Join(filepath.Dir(path), "flock-"+keyOf(w)), syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
			if err != nil {
				return nil, nil, err
			}
			fds[w] = fd
		}
		cycle := func(_ context.Context, w int, _ int64) (time.Duration, error) {
			t0 := time.Now()
			if err := syscall.Flock(fds[w], syscall.LOCK_EX); err != nil {
				return 0, err
			}
			lat := time.Since(t0)
			return lat, syscall.Flock(fds[w], syscall.LOCK_UN)
		}
		return cycle, func() {
			for _, fd := range fds {
				_ = syscall.Close(fd)
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("unknown bench kind %q", kind)
}

func isBusyErr(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == 5
}

// BenchmarkCycle_Serial: one worker in this process, one key. The kinds
// take turns in chunks of 100 cycles, so that a burst of load from
// elsewhere on the host falls on all of them alike; at least 3000 cycles
// each, whatever b.N.
func BenchmarkCycle_Serial(b *testing.B) {
	dir := b.TempDir()
	if err := createBaselineTable(filepath.Join(dir, "sql.db")); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keyOf := func(int) string { return "serial" }
	kinds := []string{"sql", "driver", "flock"}
	cycles := make([]cycleFunc, len(kinds))
	for i, kind := range kinds {
		cycle, closeFn, err := benchCycle(ctx, kind, filepath.Join(dir, kind+".db"), 1, false, keyOf)
		if err != nil {
			b.Fatal(err)
		}
		defer closeFn()
		cycles[i] = cycle
	}
	const chunk = 100
	n := max(b.N, 3000)
	spent := make([]time.Duration, len(kinds))
	for done := 0; done < n; done += chunk {
		for k, cycle := range cycles {
			start := time.Now()
			for i := range chunk {
				if _, err := cycle(ctx, 0, int64(done+i)); err != nil {
					b.Fatal(err)
				}
			}
			spent[k] += time.Since(start)
		}
	}
	per := func(k int) float64 { return float64(spent[k].Nanoseconds()) / float64(n) }
	base, drv, fl := per(0), per(1), per(2)
	b.ReportMetric(drv, "ns/op")
	b.ReportMetric(1e9/drv, "driver-cycles/s")
	b.ReportMetric(1e9/base, "sql-cycles/s")
	b.ReportMetric(1e9/fl, "flock-cycles/s")
	b.ReportMetric(base/drv, "driver/sql")
}

// BenchmarkShared: semaphore and read-lock cycles beside the mutex's
// (manager.BenchShared), on one file with the default settings.
func BenchmarkShared(b *testing.B) {
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "locks.db")})
	if err != nil {
		b.Fatal(err)
	}
	manager.BenchShared(b, d, 2*time.Second)
}
