package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/background"
)

// Driver is a lock backend on one Redis deployment. It implements
// drivers.Driver, drivers.Extender and drivers.Waiter. It is safe for
// concurrent use.
type Driver struct {
	client     goredis.UniversalClient
	ownsClient bool
	cfg        Config

	// batch sends calls in shared pipelines when many are in flight (nil
	// when disabled); inflight counts the calls under way.
	batch    *batcher
	inflight atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	done      chan struct{} // closed by Close; ends every wait

	hub *hub // pushed wake-ups for AcquireWait

	// cleanups are the owner-guarded releases sent in the background for
	// waiters that gave up (releaseAbandoned); Close cancels them and waits
	// before it closes the client.
	cleanups background.Set
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
	if cfg.PipelineAt >= 0 {
		d.batch = newBatcher(client)
	}
	d.hub = newHub(client, cfg.PollInterval, cfg.Logger)
	return d
}

// acquireKeyHolder is Acquire that, when another owner holds the key, also
// says who (drivers.HolderOf its value) and its PTTL (0 for a key without
// one, which someone else wrote), from the same script.
func (d *Driver) acquireKeyHolder(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, drivers.HeldBy, error) {
	fence, ok, held, err := d.acquire(ctx, key, owner, ttl)
	held.TTL = max(held.TTL, 0)
	return fence, ok, held, err
}

// acquire is Acquire that also reports, when the key is held by another
// owner, who and how long that holder has left (negative when unknown).
func (d *Driver) acquire(ctx context.Context, key, owner string, ttl time.Duration) (fence uint64, ok bool, held drivers.HeldBy, err error) {
	if err := d.usable(ctx, "acquire", key); err != nil {
		return 0, false, held, err
	}
	ks := keysFor(key)
	res, err := d.run(ctx, acquireScript, []string{ks.lock, ks.fence}, owner, millis(ttl)).Slice()
	if isWrongType(err) {
		return 0, false, held, mutexOnShared(key)
	}
	if err != nil {
		return 0, false, held, d.translate(ctx, "acquire", key, err)
	}
	var granted, n int64
	okReply := len(res) >= 2
	if okReply {
		var ok0, ok1 bool
		granted, ok0 = res[0].(int64)
		n, ok1 = res[1].(int64)
		okReply = ok0 && ok1
	}
	if !okReply {
		return 0, false, held, fmt.Errorf("redis: acquire %q: unexpected reply %v", key, res)
	}
	if granted == 1 {
		return uint64(n), true, held, nil
	}
	if len(res) > 2 {
		holder, _ := res[2].(string)
		held.Holder = drivers.HolderOf(holder)
	}
	if n < 0 { // the holder's key has no TTL: someone else wrote it
		held.TTL = -1
		return 0, false, held, nil
	}
	held.TTL = time.Duration(n) * time.Millisecond
	return 0, false, held, nil
}

// Release deletes key if owner holds it and wakes the key's waiters. When
// the releasing process itself has waiters for the key and no other process
// waits for it, the key goes straight to the first of them in the same
// script (see handoff.go).
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.usable(ctx, "release", key); err != nil {
		return false, err
	}
	ks := keysFor(key)
	if w, ownSubs := d.hub.beginHandoff(ks.channel); w != nil {
		return d.handOff(ctx, key, owner, ks, w, ownSubs)
	}
	return d.releaseFor(ctx, key, ks, owner)
}

// releaseFor is the plain owner-guarded release, published to waiters.
func (d *Driver) releaseFor(ctx context.Context, key string, ks keyspace, owner string) (bool, error) {
	res, err := d.run(ctx, releaseScript, []string{ks.lock, ks.fence}, owner, ks.channel, ks.shared, d.hub.ownSubs(ks.shared)).Result()
	if err != nil {
		return false, d.translate(ctx, "release", key, err)
	}
	if shared, ok := res.([]any); ok {
		return d.releasedShared(ks, shared), nil
	}
	n, _ := res.(int64)
	return n == 1, nil
}

// Extend sets key's TTL to ttl from now if owner still holds it. It never
// creates the key.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.usable(ctx, "extend", key); err != nil {
		return false, err
	}
	ks := keysFor(key)
	n, err := d.run(ctx, extendScript, []string{ks.lock, ks.fence}, owner, millis(ttl), ks.shared).Int64()
	if err != nil {
		return false, d.translate(ctx, "extend", key, err)
	}
	return n == 1, nil
}

// ForceRelease deletes key whoever holds it and wakes its waiters.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.usable(ctx, "force release", key); err != nil {
		return err
	}
	ks := keysFor(key)
	if err := d.run(ctx, forceReleaseScript, []string{ks.lock}, ks.channel).Err(); err != nil {
		return d.translate(ctx, "force release", key, err)
	}
	// A shared key's waiters listen on a channel of their own.
	_ = d.client.Publish(ctx, ks.shared, "forced").Err()
	return nil
}

// Exists reports whether key is held. A single EXISTS is already atomic,
// and Redis never reports a key whose TTL has passed.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.usable(ctx, "exists", key); err != nil {
		return false, err
	}
	n, err := d.client.Exists(ctx, keysFor(key).lock).Result()
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
