package redis_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// gate is a go-redis hook that holds single script commands, or pipelines,
// until it is opened, and counts the pipelines of scripts it sees.
type gate struct {
	holdSingle, holdPipes bool
	entered               chan struct{} // one per held command or pipeline
	open                  chan struct{}
	pipelines             atomic.Int32
}

func newGate(holdSingle, holdPipes bool) *gate {
	return &gate{holdSingle: holdSingle, holdPipes: holdPipes,
		entered: make(chan struct{}, 64), open: make(chan struct{})}
}

func (g *gate) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (g *gate) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if g.holdSingle && strings.HasPrefix(cmd.Name(), "eval") {
			g.hold()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if len(cmds) > 0 && strings.HasPrefix(cmds[0].Name(), "eval") { // not the connection's set-up
			g.pipelines.Add(1)
			if g.holdPipes {
				g.hold()
			}
		}
		return next(ctx, cmds)
	}
}

func (g *gate) hold() {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
}

// gatedClient is an application's client on srv with g hooked in.
func gatedClient(t *testing.T, srv *redistest.Server, g *gate) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), PoolSize: 16})
	c.AddHook(g)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// An application's client gets the same batching as one opened from a
// URL: the DefaultPipelineAt-th call in flight goes out in a pipeline.
func TestBatch_ApplicationClientBatchesUnderConcurrency(t *testing.T) {
	srv := redistest.Start(t)
	g := newGate(true, false)
	d, err := redis.New(gatedClient(t, srv, g))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	held := make(chan error, redis.DefaultPipelineAt)
	for i := 0; i < redis.DefaultPipelineAt-1; i++ {
		go func() {
			_, _, err := driverstest.Take(t.Context(), d, newKey("held"), token(), time.Minute)
			held <- err
		}()
		<-g.entered
	}
	if n := g.pipelines.Load(); n != 0 {
		t.Fatalf("%d pipelines with %d calls in flight", n, redis.DefaultPipelineAt-1)
	}
	mustAcquire(t, d, newKey("batched"), token(), time.Minute)
	// One pipeline, or two: the server does not know the script yet (the
	// held calls have not reached it), so the first answers NOSCRIPT.
	if n := g.pipelines.Load(); n < 1 || n > 2 {
		t.Fatalf("the call that made %d in flight went out in %d pipelines, want 1 or 2", redis.DefaultPipelineAt, n)
	}
	close(g.open)
	for i := 0; i < redis.DefaultPipelineAt-1; i++ {
		if err := <-held; err != nil {
			t.Fatalf("held Acquire: %v", err)
		}
	}
}

// A call whose context ends while it waits for its batch returns at once,
// and is never sent if no batch had taken it yet; a call whose batch is on
// the wire returns at once too.
func TestBatch_CallGivenUpIsNotSent(t *testing.T) {
	srv := redistest.Start(t)
	g := newGate(false, true)
	d, err := redis.New(gatedClient(t, srv, g), redis.WithPipelineAt(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	first := newKey("first")
	firstDone := make(chan error, 1)
	go func() {
		_, _, err := driverstest.Take(t.Context(), d, first, token(), time.Minute)
		firstDone <- err
	}()
	<-g.entered // the first batch is on the wire, and stays there

	// Given up while its batch is on the wire.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, err = driverstest.Take(ctx, d, newKey("late"), token(), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with an expired ctx behind a stuck batch: %v", err)
	}

	// Given up while queued: never sent.
	queued := newKey("queued")
	qctx, qcancel := context.WithCancel(t.Context())
	queuedDone := make(chan error, 1)
	before := redis.Queued(d)
	go func() {
		_, _, err := driverstest.Take(qctx, d, queued, token(), time.Minute)
		queuedDone <- err
	}()
	poll.Until(t, 5*time.Second, "call queued", func() bool { return redis.Queued(d) > before })
	qcancel()
	if err := <-queuedDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("queued Acquire after cancel: %v", err)
	}

	close(g.open)
	if err := <-firstDone; err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	// Batches go one after the other: once this one is answered, any
	// batch that could have carried the cancelled call has been sent.
	mustAcquire(t, d, newKey("after"), token(), time.Minute)
	raw := srv.Client()
	lockKey, _, _ := redis.KeyNames(queued)
	if n, err := raw.Exists(t.Context(), lockKey).Result(); err != nil || n != 0 {
		t.Fatalf("key of the cancelled call: exists=%d err=%v; want never written", n, err)
	}
	if !poll.Wait(5*time.Second, func() bool { return redis.Queued(d) == 0 }) {
		t.Fatal("calls left queued")
	}
}

// A batch on a connection that breaks answers every call in it with
// ErrUnavailable, never a plain "not acquired".
func TestBatch_BrokenConnectionFailsEveryCall(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv, redis.WithPipelineAt(1))
	key := newKey("broken")
	mustAcquire(t, d, key, token(), time.Minute)
	srv.Kill()
	_, _, err := driverstest.Take(t.Context(), d, key, token(), time.Minute)
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Acquire from a batch with Redis down: %v; want ErrUnavailable", err)
	}
}
