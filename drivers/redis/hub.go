package redis

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// idleUnsubscribe is how long a key's channel stays subscribed after its
// last local waiter left. Keeping it a while spares a SUBSCRIBE round trip
// when the same key is contended again soon, which is the common case.
const idleUnsubscribe = 30 * time.Second

// earlyNames is how many names of "granted:" messages that found no local
// waiter the hub remembers: a waiter of this process may be named before
// it has joined (its attempt placed it, a release let it in, and the
// message came before the waiter joined its queue).
const earlyNames = 64

// hub is the driver's one pub/sub subscription and its local waiters.
//
// Each lock key has a channel on which releases are published. The hub
// subscribes to the channel of every key that has local waiters, all on a
// single connection, and wakes the waiters a message concerns (queue.go).
type hub struct {
	client goredis.UniversalClient
	log    *slog.Logger
	poll   time.Duration

	// subMu orders SUBSCRIBE and UNSUBSCRIBE writes the same way as the
	// state changes they reflect, so a channel is never left unsubscribed
	// while the hub believes it is subscribed.
	subMu sync.Mutex

	mu     sync.Mutex
	ps     *goredis.PubSub   // nil until the first wait needs it
	queues map[string]*queue // by channel
	early  []string          // the last earlyNames names no waiter took
	closed bool
	wg     sync.WaitGroup // the dispatcher
}

func newHub(client goredis.UniversalClient, poll time.Duration, log *slog.Logger) *hub {
	return &hub{client: client, poll: poll, log: log, queues: make(map[string]*queue)}
}

// join adds w to the queue of each of its keys, subscribing to the
// channels this process did not listen on yet. A waiter named before it
// joined is woken at once.
func (h *hub) join(ctx context.Context, w *waiter) error {
	h.subMu.Lock()
	defer h.subMu.Unlock()

	h.mu.Lock()
	var subscribe []string
	for _, ch := range w.channels {
		q, isNew, err := h.queueLocked(ch)
		if err != nil {
			h.removeLocked(w)
			h.mu.Unlock()
			return err
		}
		if isNew {
			subscribe = append(subscribe, ch)
		}
		q.waiters = append(q.waiters, w)
		q.idleSince = time.Time{}
	}
	if slices.Contains(h.early, w.owner) {
		signal(w)
	}
	ps := h.ps
	h.mu.Unlock()

	for _, ch := range subscribe {
		h.subscribe(ctx, ps, ch)
	}
	return nil
}

// leave removes w from its queues; a release of this process hands it
// nothing after that.
func (h *hub) leave(w *waiter, holding bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.holding = holding
	h.removeLocked(w)
}

func (h *hub) removeLocked(w *waiter) {
	w.gone = true
	for _, ch := range w.channels {
		q := h.queues[ch]
		if q == nil {
			continue
		}
		if i := slices.Index(q.waiters, w); i >= 0 {
			q.waiters = slices.Delete(q.waiters, i, i+1)
			if len(q.waiters) == 0 {
				q.idleSince = time.Now()
			}
		}
	}
}

// queueLocked is channel's queue, made (isNew true: the caller then
// subscribes) when the key has none yet, with the subscription connection
// started on first use. h.mu and h.subMu are held.
func (h *hub) queueLocked(channel string) (q *queue, isNew bool, err error) {
	if h.closed {
		return nil, false, drivers.ErrClosed
	}
	h.startLocked()
	q = h.queues[channel]
	if q == nil {
		q = &queue{channel: channel, pending: 1}
		h.queues[channel] = q
		return q, true, nil
	}
	return q, false, nil
}

// subscribe sends SUBSCRIBE for channel. On failure the subscription is
// still recorded and go-redis subscribes again when it reconnects; until
// then the waiters' timers (and the observers') cover it.
func (h *hub) subscribe(ctx context.Context, ps *goredis.PubSub, channel string) {
	if err := ps.Subscribe(ctx, channel); err != nil {
		h.log.Debug("subscribe failed", "channel", channel, "error", err)
	}
}

// startLocked opens the subscription connection and its dispatcher on
// first use, so a driver that never waits holds no extra connection.
func (h *hub) startLocked() {
	if h.ps != nil {
		return
	}
	h.ps = h.client.Subscribe(context.Background())
	msgs := h.ps.ChannelWithSubscriptions(goredis.WithChannelSize(1024))
	h.wg.Add(1)
	go h.dispatch(msgs)
}

// dispatch routes messages from the subscription to the queues until the
// subscription is closed.
func (h *hub) dispatch(msgs <-chan interface{}) {
	defer h.wg.Done()
	sweep := time.NewTicker(idleUnsubscribe / 3)
	defer sweep.Stop()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			h.handle(m)
		case <-sweep.C:
			h.sweep()
		}
	}
}

func (h *hub) handle(m interface{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m := m.(type) {
	case *goredis.Message:
		q := h.queues[m.Channel]
		if q == nil {
			return
		}
		for _, o := range q.wake(m.Payload) {
			if len(h.early) == earlyNames {
				h.early = h.early[1:]
			}
			h.early = append(h.early, o)
		}
		if q.changed != nil {
			close(q.changed)
			q.changed = make(chan struct{})
		}
	case *goredis.Subscription:
		// A confirmation also arrives after go-redis reconnected and
		// subscribed again; messages published in between are lost, so
		// the waiters try at once either way.
		if m.Kind != "subscribe" {
			return
		}
		if q := h.queues[m.Channel]; q != nil {
			if q.pending > 0 {
				q.pending--
			}
			if q.pending == 0 {
				q.confirmed = true
			}
			q.wake("")
		}
	}
}

// sweep unsubscribes from the channels of keys that have had no local
// waiter for idleUnsubscribe.
func (h *hub) sweep() {
	// A SUBSCRIBE under way may be waiting for a dial; rather than stall
	// the dispatcher behind it, sweep next time.
	if !h.subMu.TryLock() {
		return
	}
	defer h.subMu.Unlock()

	h.mu.Lock()
	var idle []string
	for ch, q := range h.queues {
		if len(q.waiters) == 0 && q.watchers == 0 && time.Since(q.idleSince) >= idleUnsubscribe {
			idle = append(idle, ch)
			delete(h.queues, ch)
		}
	}
	ps, closed := h.ps, h.closed
	h.mu.Unlock()

	if len(idle) == 0 || closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.poll)
	defer cancel()
	if err := ps.Unsubscribe(ctx, idle...); err != nil {
		h.log.Debug("unsubscribe failed", "channels", len(idle), "error", err)
	}
}

// subscribedChannels is the number of channels the hub keeps subscribed.
func (h *hub) subscribedChannels() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues)
}

// close drops the subscription and waits for the dispatcher to end.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	ps := h.ps
	h.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
	h.wg.Wait()
}

// watch subscribes to channel, like a waiter's join, for a Changed
// caller: the channel it returns is closed at the next message on it.
func (h *hub) watch(ctx context.Context, channel string) (<-chan struct{}, func(), error) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	h.mu.Lock()
	q, subscribe, err := h.queueLocked(channel)
	if err != nil {
		h.mu.Unlock()
		return nil, nil, err
	}
	if q.changed == nil {
		q.changed = make(chan struct{})
	}
	q.watchers++
	q.idleSince = time.Time{}
	changed, ps := q.changed, h.ps
	h.mu.Unlock()
	if subscribe {
		h.subscribe(ctx, ps, channel)
	}
	var once sync.Once
	return changed, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if q.watchers--; q.watchers == 0 && len(q.waiters) == 0 {
				q.idleSince = time.Now()
			}
		})
	}, nil
}

var _ drivers.ChangeWatcher = (*Driver)(nil)

// Changed tells when key is released (drivers.ChangeWatcher): it listens
// on the key's channel, which a release that lets nobody in, a force
// release and a release that lets a waiter of another process in publish
// to. A grant that lapses publishes nothing. The subscription is the one
// the driver's waiters for the key share, kept a while after the last
// watcher or waiter leaves.
func (d *Driver) Changed(key string) (<-chan struct{}, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.PollInterval)
	defer cancel()
	ch, stop, err := d.hub.watch(ctx, keysFor(key).channel)
	if err != nil {
		return nil, func() {} // closed: the observer reads on its timer
	}
	return ch, stop
}
