package redis

import (
	"context"
	"log/slog"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// idleUnsubscribe is how long a key's channel stays subscribed after its
// last local waiter left. Keeping it a while spares a SUBSCRIBE round trip
// when the same key is contended again soon, which is the common case.
const idleUnsubscribe = 30 * time.Second

// hub is the driver's one pub/sub subscription and its local waiters.
//
// Each lock key has a channel on which releases are published. The hub
// subscribes to the channel of every key that has local waiters, all on a
// single connection, and keeps per key a FIFO of waiters (queue.go). Only
// the head of a queue competes for the key; the others wait to become head.
type hub struct {
	client goredis.UniversalClient
	poll   time.Duration
	log    *slog.Logger
	// maxHandoffs bounds consecutive direct hand-offs of a key; 0 means
	// no bound (see handoff.go).
	maxHandoffs int

	// subMu orders SUBSCRIBE and UNSUBSCRIBE writes the same way as the
	// state changes they reflect, so a channel is never left unsubscribed
	// while the hub believes it is subscribed.
	subMu sync.Mutex

	mu     sync.Mutex
	ps     *goredis.PubSub   // nil until the first wait needs it
	queues map[string]*queue // by channel
	closed bool
	wg     sync.WaitGroup // the dispatcher
}

func newHub(client goredis.UniversalClient, poll time.Duration, log *slog.Logger) *hub {
	h := &hub{client: client, poll: poll, log: log, queues: make(map[string]*queue)}
	if _, cluster := client.(*goredis.ClusterClient); cluster {
		h.maxHandoffs = clusterMaxHandoffs
	}
	return h
}

// join queues a new waiter for channel, subscribing to it when this is the
// first waiter of the key. When the subscription is already confirmed, a
// new head is told to try at once: a release may have happened between its
// failed attempt and now, and nobody would have woken it.
func (h *hub) join(ctx context.Context, channel, owner string, ttl time.Duration, reused bool) (*waiter, error) {
	h.subMu.Lock()
	defer h.subMu.Unlock()

	h.mu.Lock()
	q, subscribe, err := h.queueLocked(channel)
	if err != nil {
		h.mu.Unlock()
		return nil, err
	}
	w := &waiter{q: q, owner: owner, ttl: ttl, reused: reused, wake: make(chan struct{}, 1)}
	q.waiters = append(q.waiters, w)
	q.idleSince = time.Time{}
	if len(q.waiters) == 1 && q.confirmed {
		signal(w)
	}
	ps := h.ps
	h.mu.Unlock()

	if subscribe {
		h.subscribe(ctx, ps, channel)
	}
	return w, nil
}

// queueLocked is channel's queue, made (subscribe true: the caller then
// subscribes) when the key has none yet, with the subscription connection
// started on first use. h.mu and h.subMu are held.
func (h *hub) queueLocked(channel string) (q *queue, subscribe bool, err error) {
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
		if q := h.queues[m.Channel]; q != nil {
			q.wake(m.Payload)
			if q.changed != nil {
				close(q.changed)
				q.changed = make(chan struct{})
			}
		}
	case *goredis.Subscription:
		// A confirmation also arrives after go-redis reconnected and
		// subscribed again; releases published in between are lost, so
		// the head tries at once either way.
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
