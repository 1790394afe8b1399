package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// maxBatch bounds how many calls share one pipeline. A batch is whatever
// queued up while the previous one was on the wire, so it only reaches
// this with hundreds of calls in flight; the bound keeps one write and
// one reply buffer of a sensible size.
const maxBatch = 256

// batcher sends the scripts of concurrent calls together, one pipeline per
// round trip (group commit). While a batch is on the wire the calls that
// arrive queue up, and the next batch takes all of them: there is no
// waiting window, so a batch is never held back for calls that may not
// come, and the busier the driver, the larger the batches. Redis spends
// most of a small script's cost reading and writing the connection, which
// a batch pays once.
//
// It uses only the client's Pipeline, which every client has (plain,
// failover, cluster: a cluster pipeline splits by node), and leaves nothing
// behind on it: an application's client is not changed by the driver. The
// goroutine that sends batches runs only while calls are queued.
type batcher struct {
	client goredis.UniversalClient

	mu       sync.Mutex
	queue    []*batchCall
	flushing bool // a flush goroutine is running

	spare []*batchCall // the flush goroutine's batch buffer, reused
}

// batchCall is one script call waiting for its batch.
type batchCall struct {
	ctx    context.Context
	script *goredis.Script
	keys   []string
	args   []any

	cmd  *goredis.Cmd  // the result; set before done is closed
	done chan struct{} // closed when the batch has been answered

	// gone is set when the caller gave up before a batch took the call,
	// which is then never sent. Guarded by batcher.mu.
	gone bool
}

func newBatcher(client goredis.UniversalClient) *batcher {
	return &batcher{client: client}
}

// run queues a script call for the next batch and waits for its result or
// the end of ctx. A call given up on may still have been sent: like any
// command whose reply was not awaited, its outcome is unknown.
func (b *batcher) run(ctx context.Context, s *goredis.Script, keys []string, args []any) *goredis.Cmd {
	c := &batchCall{ctx: ctx, script: s, keys: keys, args: args, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	select {
	case <-c.done:
		return c.cmd
	case <-ctx.Done():
		b.mu.Lock()
		c.gone = true
		b.mu.Unlock()
		select {
		case <-c.done: // answered all the same: a grant the caller can use or release
			return c.cmd
		default:
		}
		cmd := goredis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// flush sends batches until the queue is empty.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		batch := b.spare[:0]
		n := 0
		for _, c := range b.queue {
			if len(batch) == maxBatch {
				break
			}
			n++
			if !c.gone {
				batch = append(batch, c)
			}
		}
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		if len(batch) == 0 && rest == 0 {
			b.flushing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()

		if len(batch) > 0 {
			b.exec(batch)
			for _, c := range batch {
				close(c.done)
			}
		}
		clear(batch)
		b.spare = batch
	}
}

// exec sends one batch. Scripts go by SHA; those the server does not know
// (after a restart or SCRIPT FLUSH) did not run, and are sent again in
// full, which also loads them.
func (b *batcher) exec(batch []*batchCall) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	pipe := b.client.Pipeline()
	for _, c := range batch {
		c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error

	var retry []*batchCall
	for _, c := range batch {
		if goredis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			retry = append(retry, c)
		}
	}
	if len(retry) == 0 {
		return
	}
	pipe = b.client.Pipeline()
	for _, c := range retry {
		c.cmd = c.script.Eval(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
}

// batchContext bounds a batch by the latest deadline among its callers,
// so that it lasts as long as any of them still waits for it. With a
// caller that has no deadline the batch has none either, and the client's
// own read and write timeouts bound it. It carries no caller's values or
// cancellation: it serves them all.
func batchContext(batch []*batchCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range batch {
		dl, ok := c.ctx.Deadline()
		if !ok {
			return context.Background(), func() {}
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
