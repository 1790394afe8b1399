package sqlite_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

// The test binary doubles as the helper program of the multi-process tests:
// started with helperEnv set, TestMain runs the named workload instead of
// the tests. Parameters travel in environment variables, results on stdout.
const (
	helperEnv     = "ZEROTAL_SQLITE_HELPER"
	envPath       = "ZEROTAL_SQLITE_PATH"
	envJournal    = "ZEROTAL_SQLITE_JOURNAL"
	envKeys       = "ZEROTAL_SQLITE_KEYS"
	envWorkers    = "ZEROTAL_SQLITE_WORKERS"
	envRounds     = "ZEROTAL_SQLITE_ROUNDS"
	envTTL        = "ZEROTAL_SQLITE_TTL"
	envKind       = "ZEROTAL_SQLITE_KIND"
	envDuration   = "ZEROTAL_SQLITE_DURATION"
	envKeyPrefix  = "ZEROTAL_SQLITE_KEY_PREFIX"
	envLapsesOK   = "ZEROTAL_SQLITE_LAPSES_OK"
	envLimit      = "ZEROTAL_SQLITE_LIMIT"
	envMaxHold    = "ZEROTAL_SQLITE_MAX_HOLD"
	helperTimeout = 2 * time.Minute
)

func runHelper(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	// The modes but bench work on one driver of the file at PATH.
	onDriver := map[string]func(context.Context, *sqlite.Driver) error{
		"hammer":    helperHammer,
		"semhammer": helperSemHammer,
		"hold":      helperHold,
		"waiter":    helperWaiter,
		"capped":    helperCapped,
	}
	var err error
	if fn, ok := onDriver[mode]; ok {
		err = withHelperDriver(ctx, fn)
	} else if mode == "bench" {
		err = helperBench(ctx)
	} else {
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDur(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withHelperDriver runs fn on a driver of the file at PATH and closes it.
func withHelperDriver(ctx context.Context, fn func(context.Context, *sqlite.Driver) error) error {
	d, err := sqlite.Open(ctx, sqlite.Config{Path: os.Getenv(envPath)})
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(ctx, d)
}

// helperHammer: WORKERS goroutines each take one of KEYS keys ROUNDS
// times (even workers wait for it, odd ones try again and again) and append "key fence start end pid" to
// the JOURNAL after each hold (start after the grant, end before the
// release), one write per line so that a killed process keeps its lines.
// A release that finds the lock gone is an error, unless LAPSES_OK is set
// (a short TTL), when the hold is left out of the journal: only holds the
// release proved exclusive are checked.
func helperHammer(ctx context.Context, d *sqlite.Driver) error {
	j, err := openJournal()
	if err != nil {
		return err
	}
	defer j.close()
	keys, rounds := envInt(envKeys, 3), envInt(envRounds, 20)
	ttl := envDur(envTTL, 10*time.Second)
	lapsesOK := os.Getenv(envLapsesOK) != ""
	return eachWorker(envInt(envWorkers, 4), func(w int) error {
		for r := range rounds {
			key := fmt.Sprintf("hammer-%d", (w*7+r*3+os.Getpid())%keys)
			owner := newToken()
			fence, err := hammerAcquire(ctx, d, w%2 == 1, key, owner, ttl)
			if err != nil {
				return fmt.Errorf("acquire %s: %w", key, err)
			}
			start := time.Now().UnixNano()
			time.Sleep(time.Duration(r%4) * 50 * time.Microsecond) // the work done under the lock
			end := time.Now().UnixNano()
			ok, err := d.Release(ctx, key, owner)
			if err == nil && !ok && lapsesOK {
				continue // the hold outlived its TTL: not journaled, as it was not exclusive to the end
			}
			if err != nil || !ok {
				return fmt.Errorf("Release %s fence %d = %v, %v; want true", key, fence, ok, err)
			}
			if err := j.hold(key, fence, start, end); err != nil {
				return err
			}
		}
		return nil
	})
}

// journal is the JOURNAL file the hammers append their holds to, one
// write per line so that a killed process keeps its lines.
type journal struct {
	mu sync.Mutex
	f  *os.File
}

func openJournal() (*journal, error) {
	f, err := os.OpenFile(os.Getenv(envJournal), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &journal{f: f}, nil
}

// hold appends "key fence start end pid".
func (j *journal) hold(key string, fence uint64, start, end int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err := fmt.Fprintf(j.f, "%s %d %d %d %d\n", key, fence, start, end, os.Getpid())
	return err
}

func (j *journal) close() { _ = j.f.Close() }

// eachWorker runs fn for workers 0..n-1 at once and returns the first
// error.
func eachWorker(n int, fn func(w int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			if err := fn(w); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// hammerAcquire gets key for owner: by AcquireWait, or, for the workers
// that try, by Acquire repeated until it succeeds.
func hammerAcquire(ctx context.Context, d *sqlite.Driver, try bool, key, owner string, ttl time.Duration) (uint64, error) {
	if !try {
		return driverstest.TakeWait(ctx, d, key, owner, ttl, drivers.WaitOptions{RetryDelay: 20 * time.Millisecond})
	}
	for {
		fence, ok, err := driverstest.Take(ctx, d, key, owner, ttl)
		if err != nil || ok {
			return fence, err
		}
		time.Sleep(200 * time.Microsecond) // the pause of a caller that tries again later
	}
}

// helperHold takes one key for TTL, prints "held <fence> <deadline ns>"
// and waits for stdin to close (or for a SIGKILL).
func helperHold(ctx context.Context, d *sqlite.Driver) error {
	ttl := envDur(envTTL, time.Second)
	sent := time.Now()
	fence, ok, err := driverstest.Take(ctx, d, "held-by-child", newToken(), ttl)
	if err != nil || !ok {
		return fmt.Errorf("Acquire = %v, %v", ok, err)
	}
	fmt.Printf("held %d %d\n", fence, sent.Add(ttl).UnixNano())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return nil
}

// helperWaiter serves the hand-off and FIFO tests: for each "wait <key>"
// line (its grant for TTL, 10s by default) it
// prints "waiting", waits for the key, prints "got <fence> <unix ns>",
// releases it and prints "released".
func helperWaiter(ctx context.Context, d *sqlite.Driver) error {
	return eachLine(func(line string) error {
		key, ok := strings.CutPrefix(line, "wait ")
		if !ok {
			return fmt.Errorf("bad command %q", line)
		}
		owner := newToken()
		fmt.Println("waiting")
		fence, err := driverstest.TakeWait(ctx, d, key, owner, envDur(envTTL, 10*time.Second), drivers.WaitOptions{RetryDelay: 100 * time.Millisecond})
		got := time.Now().UnixNano()
		if err != nil {
			return err
		}
		fmt.Printf("got %d %d\n", fence, got)
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			return fmt.Errorf("Release = %v, %v", ok, err)
		}
		fmt.Println("released")
		return nil
	})
}

// eachLine runs fn on each line of the helper's stdin until it ends or fn
// fails.
func eachLine(fn func(line string) error) error {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := fn(in.Text()); err != nil {
			return err
		}
	}
	return in.Err()
}

// helperCmd prepares a re-execution of the test binary in a helper mode.
func helperCmd(t testing.TB, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// helperSemHammer: WORKERS goroutines each wait ROUNDS times for a slot of
// the semaphore "sem" of LIMIT, hold it a moment and release it, and
// journal each hold as helperHammer does.
func helperSemHammer(ctx context.Context, d *sqlite.Driver) error {
	j, err := openJournal()
	if err != nil {
		return err
	}
	defer j.close()
	rounds := envInt(envRounds, 20)
	claim := drivers.Claim{Kind: drivers.Semaphore, Limit: uint32(envInt(envLimit, 2))}
	return eachWorker(envInt(envWorkers, 4), func(int) error {
		for r := range rounds {
			owner := newToken()
			fence, err := driverstest.TakeSharedWait(ctx, d, "sem", owner, 10*time.Second, claim, drivers.WaitOptions{RetryDelay: 20 * time.Millisecond})
			if err != nil {
				return fmt.Errorf("AcquireSharedWait: %w", err)
			}
			start := time.Now().UnixNano()
			time.Sleep(time.Duration(r%4) * 100 * time.Microsecond) // the work done in the slot
			end := time.Now().UnixNano()
			if ok, err := d.Release(ctx, "sem", owner); err != nil || !ok {
				return fmt.Errorf("Release fence %d = %v, %v; want true", fence, ok, err)
			}
			if err := j.hold("sem", fence, start, end); err != nil {
				return err
			}
		}
		return nil
	})
}
