package redis_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/proctest"
)

// The test binary doubles as the program of the multi-process tests:
// started with childEnv set, TestMain runs the named child instead of the
// tests. Its Redis is childURL; commands come on stdin, answers on stdout.
const (
	childEnv     = "ZEROTAL_REDIS_CHILD"
	childURL     = "ZEROTAL_REDIS_URL"
	childTimeout = 2 * time.Minute
)

// runChild runs the child named mode and returns its exit status.
func runChild(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	d, err := redis.Open(ctx, redis.Config{URL: os.Getenv(childURL)})
	if err == nil {
		m := lock.New(d, lock.WithPrefix(""))
		switch mode {
		case "waiter":
			err = childWaiter(ctx, m)
		case "hot":
			err = childHot(ctx, m)
		case "capped":
			err = childCapped(ctx, d)
		default:
			err = fmt.Errorf("unknown child %q", mode)
		}
		_ = m.Close()
		_ = d.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

// childWaiter: for each line "wait <key> <ttl ms>" it waits for the key
// (Manager.Block), prints "got <fence>" once it holds it and releases it.
func childWaiter(ctx context.Context, m *lock.Manager) error {
	return eachLine(func(line string) error {
		var key string
		var ttl int64
		if _, err := fmt.Sscanf(line, "wait %s %d", &key, &ttl); err != nil {
			return fmt.Errorf("bad command %q: %w", line, err)
		}
		return m.Block(ctx, key, time.Duration(ttl)*time.Millisecond, func(_ context.Context, l *lock.Lock) error {
			fmt.Printf("got %d\n", l.Fence())
			return nil
		}, lock.WithTimeout(time.Minute))
	})
}

// eachLine runs fn on each line of a child's stdin until it ends or fn
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

// childHot: on "go <key> <workers> <duration ms>" its workers cycle the key
// (Manager.Block, a callback that does nothing) for the duration; then it
// prints "lat" and each cycle's wait for the key in microseconds.
func childHot(ctx context.Context, m *lock.Manager) error {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fmt.Errorf("no command: %v", in.Err())
	}
	var key string
	var workers int
	var dur int64
	if _, err := fmt.Sscanf(in.Text(), "go %s %d %d", &key, &workers, &dur); err != nil {
		return fmt.Errorf("bad command %q: %w", in.Text(), err)
	}
	stop := time.Now().Add(time.Duration(dur) * time.Millisecond)
	lats := make([][]int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				start := time.Now()
				err := m.Block(ctx, key, 10*time.Second, func(context.Context, *lock.Lock) error {
					lats[w] = append(lats[w], time.Since(start).Microseconds())
					return nil
				}, lock.WithTimeout(time.Minute))
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("lat")
	for _, ls := range lats {
		for _, l := range ls {
			b.WriteString(" " + strconv.FormatInt(l, 10))
		}
	}
	fmt.Println(b.String())
	return nil
}

// child is one running child process of the test.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line; closed at its end
}

// startChild starts the test binary as child mode on srv; it is killed
// at the test's end if still running.
func startChild(t testing.TB, srv *redistest.Server, mode string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childURL+"="+srv.URL())
	cmd.Stderr = os.Stderr
	stdin, stdout := proctest.Start(t, cmd)
	c := &child{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		defer close(c.lines)
		s := bufio.NewScanner(stdout)
		s.Buffer(nil, 64<<20)
		for s.Scan() {
			c.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // this test's own child
		_ = cmd.Wait()
	})
	return c
}

func (c *child) send(format string, args ...any) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.stdin, format+"\n", args...); err != nil {
		c.t.Fatalf("write to child %d: %v", c.cmd.Process.Pid, err)
	}
}

// line is the child's next line, failing the test after within.
func (c *child) line(within time.Duration) string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child %d ended", c.cmd.Process.Pid)
		}
		return l
	case <-time.After(within):
		c.t.Fatalf("no line from child %d within %v", c.cmd.Process.Pid, within)
		return ""
	}
}

// subscribers is how many connections listen on key's release channel:
// one per process that waits for the key.
func subscribers(t testing.TB, srv *redistest.Server, key string) int64 {
	t.Helper()
	_, _, ch := redis.KeyNames(key)
	n, err := srv.Client().PubSubNumSub(t.Context(), ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n[ch]
}

// queueChildren has each child wait for key in turn, the next only once
// the one before waits (its process listens on the key's channel, which
// a waiter does after its first attempt: once it has its place).
func queueChildren(t *testing.T, srv *redistest.Server, key string, ttl time.Duration, cs []*child) {
	t.Helper()
	base := subscribers(t, srv, key)
	for i, c := range cs {
		c.send("wait %s %d", key, ttl.Milliseconds())
		waitSubscribers(t, srv, key, base+int64(i)+1)
	}
}

// waitSubscribers waits until at least n processes listen on key's
// release channel.
func waitSubscribers(t *testing.T, srv *redistest.Server, key string, n int64) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d processes waiting for %q", n, key), func() bool {
		return subscribers(t, srv, key) >= n
	})
}

// gotFences reads each child's "got <fence>".
func gotFences(t *testing.T, cs []*child, within time.Duration) []uint64 {
	t.Helper()
	fences := make([]uint64, len(cs))
	for i, c := range cs {
		l := c.line(within)
		if _, err := fmt.Sscanf(l, "got %d", &fences[i]); err != nil {
			t.Fatalf("child %d said %q", i, l)
		}
	}
	return fences
}

// TestProcesses_MutexWaitersFirstComeFirstServed queues waiters of five
// processes for one held mutex, one after the other, and releases it: each
// gets the key in its order of arrival (its fence is larger than those of
// every process that came before it), in two rounds.
func TestProcesses_MutexWaitersFirstComeFirstServed(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	m := lock.New(d, lock.WithPrefix(""))
	t.Cleanup(func() { _ = m.Close() })
	cs := make([]*child, 5)
	for i := range cs {
		cs[i] = startChild(t, srv, "waiter")
	}
	for round := range 2 {
		key := newKey(fmt.Sprint("fifo-", round))
		l := m.Make(key, time.Minute)
		if ok, err := l.Acquire(t.Context()); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		queueChildren(t, srv, key, time.Minute, cs)
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		fences := gotFences(t, cs, 30*time.Second)
		if !slices.IsSorted(fences) {
			t.Fatalf("round %d: fences in the processes' order of arrival %v; want increasing (first come, first served)", round, fences)
		}
	}
}

// TestProcesses_KilledWaiterDoesNotStallTheQueue kills the first of three
// waiting processes (SIGKILL, its place still in the queue) and releases
// the key: the next waiter gets it within the dead one's lease, not its
// TTL of a minute, and the third after it.
func TestProcesses_KilledWaiterDoesNotStallTheQueue(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	m := lock.New(d, lock.WithPrefix(""))
	t.Cleanup(func() { _ = m.Close() })
	cs := []*child{startChild(t, srv, "waiter"), startChild(t, srv, "waiter"), startChild(t, srv, "waiter")}
	key := newKey("killed-waiter")
	l := m.Make(key, time.Minute)
	if ok, err := l.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	queueChildren(t, srv, key, time.Minute, cs)
	if err := cs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cs[0].cmd.Wait()
	released := time.Now()
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	fences := gotFences(t, cs[1:], 20*time.Second)
	t.Logf("the live waiters got the key %v after the release", time.Since(released))
	if !slices.IsSorted(fences) {
		t.Fatalf("fences of the live waiters %v; want their order of arrival", fences)
	}
}

// BenchmarkProcesses_HotKey: 4 processes of 4 workers cycle one mutex
// (Manager.Block, an empty callback) for 3 s each round; it reports the
// cycles per second and the p50 and p99 of a cycle's wait for the key.
func BenchmarkProcesses_HotKey(b *testing.B) {
	const procs, workers, dur = 4, 4, 3 * time.Second
	srv := redistest.Start(b)
	var total int
	var lats []int64
	var wall time.Duration
	for range max(b.N, 1) {
		cs := make([]*child, procs)
		for i := range cs {
			cs[i] = startChild(b, srv, "hot")
		}
		key := newKey("hot")
		start := time.Now()
		for _, c := range cs {
			c.send("go %s %d %d", key, workers, dur.Milliseconds())
		}
		for _, c := range cs {
			f := strings.Fields(c.line(dur + time.Minute))
			if len(f) == 0 || f[0] != "lat" {
				b.Fatalf("child said %q", f)
			}
			for _, s := range f[1:] {
				n, _ := strconv.ParseInt(s, 10, 64)
				lats = append(lats, n)
			}
		}
		wall += time.Since(start)
		total = len(lats)
	}
	slices.Sort(lats)
	b.ReportMetric(float64(total)/wall.Seconds(), "cycles/s")
	b.ReportMetric(float64(lats[len(lats)/2])/1000, "p50-ms")
	b.ReportMetric(float64(lats[len(lats)*99/100])/1000, "p99-ms")
}

// BenchmarkUncontended: one caller's cycles of a free mutex through the
// Manager, by Try and by Block, alternating the rows each round.
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.Start(b)
	d, err := redis.Open(context.Background(), redis.Config{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	m := lock.New(d, lock.WithPrefix(""))
	defer func() { _ = m.Close(); _ = d.Close() }()
	ctx := context.Background()
	noop := func(context.Context, *lock.Lock) error { return nil }
	rows := []struct {
		name  string
		cycle func(key string) error
	}{
		{"try", func(key string) error { return m.Try(ctx, key, 10*time.Second, noop) }},
		{"block", func(key string) error { return m.Block(ctx, key, 10*time.Second, noop, lock.WithTimeout(time.Second)) }},
	}
	const perRound = 2000
	took := make([]time.Duration, len(rows))
	key := newKey("free")
	rounds := max(b.N, 1)
	b.ResetTimer()
	for range rounds {
		for i, r := range rows {
			start := time.Now()
			for range perRound {
				if err := r.cycle(key); err != nil {
					b.Fatal(err)
				}
			}
			took[i] += time.Since(start)
		}
	}
	b.StopTimer()
	for i, r := range rows {
		b.ReportMetric(float64(took[i].Microseconds())/float64(rounds*perRound), r.name+"-us/cycle")
	}
}
