package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/background"
)

// Driver is a lock backend on one Redis deployment. It implements
// drivers.Driver with every capability, drivers.Extender,
// drivers.Inspector, drivers.Lister and drivers.ChangeWatcher. It is safe
// for concurrent use.
type Driver struct {
	client     goredis.UniversalClient
	ownsClient bool
	cluster    bool // a Redis Cluster client: a script's keys share a slot
	cfg        Config

	// batch sends calls in shared pipelines when many are in flight (nil
	// when disabled); inflight counts the calls under way.
	batch    *batcher
	inflight atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	done      chan struct{} // closed by Close; ends every wait

	hub *hub // pushed wake-ups for the requests that wait

	// cleanups are the owner-guarded releases sent in the background for
	// waiters that gave up (leaveAbandoned); Close cancels them and waits
	// before it closes the client. leaving records them by key, for the
	// later calls on the key to wait for.
	cleanups background.Set
	leaving  leaving
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Extender = (*Driver)(nil)
)

// Open returns a Driver for cfg. With a URL it opens its own client, checks
// that Redis answers (ErrUnavailable when it does not) and closes the
// client on Close. With a Client it uses the application's client, which it
// never closes, and does not contact Redis until the first call.
func Open(ctx context.Context, cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	goredisLog.Store(cfg.Logger)
	if cfg.Client != nil {
		return newDriver(cfg.Client, false, cfg), nil
	}
	opts, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	// A lock call must give up when its context does; go-redis otherwise
	// waits for its own socket timeouts.
	opts.ContextTimeoutEnabled = true
	// Drivers do not retry: with go-redis's default of three retries with
	// back-off, a call to a Redis that is down takes almost two seconds to
	// say so. The URL's max_retries option still wins.
	if !hasQueryOption(cfg.URL, "max_retries") {
		opts.MaxRetries = -1
	}
	// Nor does it retry a refused dial (go-redis tries five times, 100 ms
	// apart): a refresh racing its lock's TTL needs the answer now.
	opts.DialerRetries = 1
	// RESP2 unless the URL asks for a protocol: the driver reads no push
	// messages on its command connections (its subscription has a
	// connection of its own), and on RESP3 go-redis looks for them on the
	// socket before every command, a system call each, a sixth of the
	// client's time a contended cycle.
	if !hasQueryOption(cfg.URL, "protocol") {
		opts.Protocol = 2
	}
	client := goredis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, openError(ctx, cfg.URL, err)
	}
	return newDriver(client, true, cfg), nil
}

// openError explains why the first PING failed. A refused password or an
// unknown database is a configuration mistake, not an outage, so only
// network trouble and "cannot serve now" replies match ErrUnavailable.
func openError(ctx context.Context, rawURL string, err error) error {
	where := redactedURL(rawURL)
	if ctx.Err() != nil {
		return fmt.Errorf("redis: open %s: %w", where, ctx.Err())
	}
	var reply goredis.Error
	if errors.As(err, &reply) && isAuthReply(reply.Error()) {
		return fmt.Errorf("redis: open %s: %w: %w", where, drivers.ErrUnauthorized, err)
	}
	if errors.As(err, &reply) && !isUnavailableReply(reply.Error()) {
		return fmt.Errorf("redis: open %s: %w", where, err)
	}
	return drivers.Unavailable("open "+where, err)
}

// New returns a Driver on a client the application already has: a plain,
// failover or cluster client. The driver never closes the client.
func New(client goredis.UniversalClient, opts ...Option) (*Driver, error) {
	cfg := Config{Client: client}
	for _, o := range opts {
		o(&cfg)
	}
	return Open(context.Background(), cfg)
}

func newDriver(client goredis.UniversalClient, owns bool, cfg Config) *Driver {
	d := &Driver{
		client:     client,
		ownsClient: owns,
		cfg:        cfg,
		done:       make(chan struct{}),
	}
	_, d.cluster = client.(*goredis.ClusterClient)
	if cfg.PipelineAt >= 0 {
		d.batch = newBatcher(client)
	}
	d.hub = newHub(client, cfg.PollInterval, cfg.Logger)
	return d
}

// Release ends owner's grant of key and lets in the waiters that now fit.
// A waiter of this process is handed the key in the same script, sparing
// it the round trips of a wake-up and an attempt.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.usable(ctx, "release", key); err != nil {
		return false, err
	}
	if err := d.after(ctx, "release", key); err != nil {
		return false, err
	}
	ks := keysFor(key)
	locals := d.hub.locals(ks.channel)
	args := make([]any, 0, 2+len(locals))
	args = append(args, owner, 1)
	for _, w := range locals {
		args = append(args, w.owner)
	}
	res, err := d.run(ctx, releaseScript, ks.names(), args...).Slice()
	if err != nil {
		return false, d.translate(ctx, "release", key, err)
	}
	for i := 1; i+1 < len(res); i += 2 {
		o, _ := res[i].(string)
		f, _ := res[i+1].(int64)
		j := slices.IndexFunc(locals, func(w *waiter) bool { return w.owner == o })
		if j >= 0 && d.hub.handOver(locals[j], uint64(f)) {
			// The waiter gave up while its grant was on the way; free the
			// key for the others rather than leave it blocked for a TTL.
			d.leave([]string{key}, func(ctx context.Context, _ string) {
				_ = releaseScript.Run(ctx, d.client, ks.names(), o, 1).Err()
			})
		}
	}
	n, _ := res[0].(int64)
	return n == 1, nil
}

// Extend sets owner's grant of key to end ttl from now if it still holds
// it. It never creates a grant.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.usable(ctx, "extend", key); err != nil {
		return false, err
	}
	if err := d.after(ctx, "extend", key); err != nil {
		return false, err
	}
	ks := keysFor(key)
	n, err := d.run(ctx, extendScript, ks.names(), owner, millis(ttl)).Int64()
	if err != nil {
		return false, d.translate(ctx, "extend", key, err)
	}
	return n == 1, nil
}

// ForceRelease ends every grant of key whoever holds it and lets its
// waiters in.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.usable(ctx, "force release", key); err != nil {
		return err
	}
	ks := keysFor(key)
	if err := d.run(ctx, forceReleaseScript, ks.names()).Err(); err != nil {
		return d.translate(ctx, "force release", key, err)
	}
	return nil
}

// Exists reports whether key has a grant that has not lapsed.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.usable(ctx, "exists", key); err != nil {
		return false, err
	}
	if err := d.after(ctx, "exists", key); err != nil {
		return false, err
	}
	n, err := d.run(ctx, existsScript, []string{keysFor(key).lock}).Int64()
	if err != nil {
		return false, d.translate(ctx, "exists", key, err)
	}
	return n > 0, nil
}

// Close ends every wait with ErrClosed, drops the wake-up subscription and
// closes the client if the driver opened it. It is idempotent.
func (d *Driver) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.done)
		d.cleanups.Close()
		d.hub.close()
		if d.ownsClient {
			err = d.client.Close()
		}
	})
	return err
}

// run runs a script, in a shared pipeline (batch.go) when at least
// PipelineAt calls are in flight. Alone, a call goes straight to a
// connection: the hand-over to the goroutine that sends batches would only
// add latency to a chain of calls that wait for each other, such as a lock
// handed from one waiter to the next. Many concurrent calls share few
// writes and reads instead of one each, which is what Redis spends most of
// its time on.
func (d *Driver) run(ctx context.Context, s *goredis.Script, keys []string, args ...any) *goredis.Cmd {
	n := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	if d.batch != nil && n >= int64(d.pipelineAt()) {
		return d.batch.run(ctx, s, keys, args)
	}
	return s.Run(ctx, d.client, keys, args...)
}

func (d *Driver) pipelineAt() int {
	if d.cfg.PipelineAt > 0 {
		return d.cfg.PipelineAt
	}
	return DefaultPipelineAt
}

// usable reports, before any network call, a closed driver or a context
// that has already ended.
func (d *Driver) usable(ctx context.Context, op, key string) error {
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redis: %s %q: %w", op, key, err)
	}
	return nil
}

// millis converts a TTL to whole milliseconds for PX and PEXPIRE, rounding
// up: the holder's own estimate of its deadline is measured from when it
// sent the request, so a slightly longer TTL at the server keeps that
// estimate on the safe side.
func millis(ttl time.Duration) int64 {
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	return ms
}
