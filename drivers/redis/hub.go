package redis

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// idleUnsubscribe is how long a key's channel stays subscribed after its
// last local waiter left. Keeping it a while spares a SUBSCRIBE round trip
// when the same key is contended again soon, which is the common case.
const idleUnsubscribe = 30 * time.Second

// hub is the driver's one pub/sub subscription and its local waiters.
//
// Each lock key has a channel on which Release and ForceRelease publish.
// The hub subscribes to the channel of every key that has local waiters, on
// a single connection, and keeps per key a FIFO of waiters. Only the head
// of a queue competes for the key; the others wait to become head. So this
// process serves its waiters in arrival order and sends one attempt per
// release rather than one per waiter.
type hub struct {
	client goredis.UniversalClient
	poll   time.Duration
	log    hclog.Logger

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

// queue is the waiters of one key in this process.
type queue struct {
	channel   string
	waiters   []*waiter // arrival order; waiters[0] is the head
	pending   int       // SUBSCRIBE confirmations still to come
	confirmed bool      // Redis has confirmed the subscription
	idleSince time.Time // when the last waiter left; zero while any wait
	// echoes are owners whose release this process already turned into a
	// wake-up; their release message is skipped when it comes back.
	echoes map[string]struct{}
}

// maxEchoes bounds queue.echoes: messages lost while reconnecting never
// come back to remove their entry.
const maxEchoes = 64

// waiter is one AcquireWait call. Its fields other than wake are guarded by
// hub.mu.
type waiter struct {
	q    *queue
	wake chan struct{} // capacity 1: wake-ups coalesce, never block
	// retryAt is when the head should next try the key; zero means at once.
	retryAt time.Time
}

func newHub(client goredis.UniversalClient, poll time.Duration, log hclog.Logger) *hub {
	return &hub{client: client, poll: poll, log: log, queues: make(map[string]*queue)}
}

// join queues a new waiter for channel, subscribing to it when this is the
// first waiter of the key. When the subscription is already confirmed, the
// new head is told to try at once: a release may have happened between its
// failed attempt and now, and nobody would have woken it.
func (h *hub) join(ctx context.Context, channel string) (*waiter, error) {
	h.subMu.Lock()
	defer h.subMu.Unlock()

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, drivers.ErrClosed
	}
	h.startLocked()
	q := h.queues[channel]
	subscribe := q == nil
	if subscribe {
		q = &queue{channel: channel, pending: 1}
		h.queues[channel] = q
	}
	w := &waiter{q: q, wake: make(chan struct{}, 1)}
	q.waiters = append(q.waiters, w)
	q.idleSince = time.Time{}
	if len(q.waiters) == 1 && q.confirmed {
		signal(w)
	}
	ps := h.ps
	h.mu.Unlock()

	if subscribe {
		// On failure the subscription is still recorded and go-redis
		// subscribes again when it reconnects; until then the waiter's
		// timer covers it.
		if err := ps.Subscribe(ctx, channel); err != nil {
			h.log.Debug("subscribe failed", "channel", channel, "error", err)
		}
	}
	return w, nil
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

// leave removes w from its queue. When w was the head, the next waiter
// becomes head: if w was granted the key, the new head waits for the next
// release (or at most ttl); otherwise it tries at once.
func (h *hub) leave(w *waiter, granted bool, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := w.q
	i := indexOf(q.waiters, w)
	if i < 0 {
		return
	}
	q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
	if len(q.waiters) == 0 {
		q.idleSince = time.Now()
		return
	}
	if i == 0 {
		head := q.waiters[0]
		head.retryAt = time.Time{}
		if granted {
			head.retryAt = time.Now().Add(ttl)
		}
		signal(head)
	}
}

// waiting reports whether this process already has waiters for channel.
func (h *hub) waiting(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	return q != nil && len(q.waiters) > 0
}

// released is told of a successful Release by this process. It wakes the
// key's first waiter at once instead of after the message's round trip
// through Redis, and remembers the owner so that the message, when it
// arrives, does not wake the next waiter for nothing.
func (h *hub) released(channel, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil || len(q.waiters) == 0 {
		return
	}
	if q.echoes == nil || len(q.echoes) >= maxEchoes {
		q.echoes = make(map[string]struct{})
	}
	q.echoes[owner] = struct{}{}
	h.wakeHeadLocked(q)
}

// turn reports whether w is the head of its queue and when it should try.
func (h *hub) turn(w *waiter) (head bool, retryAt time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(w.q.waiters) == 0 || w.q.waiters[0] != w {
		return false, time.Time{}
	}
	return true, w.retryAt
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
		if _, echo := q.echoes[m.Payload]; echo {
			delete(q.echoes, m.Payload)
			return
		}
		h.wakeHeadLocked(q)
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
			h.wakeHeadLocked(q)
		}
	}
}

func (h *hub) wakeHeadLocked(q *queue) {
	if len(q.waiters) == 0 {
		return
	}
	head := q.waiters[0]
	head.retryAt = time.Time{}
	signal(head)
}

// sweep unsubscribes from the channels of keys that have had no local
// waiter for idleUnsubscribe.
func (h *hub) sweep() {
	h.subMu.Lock()
	defer h.subMu.Unlock()

	h.mu.Lock()
	var idle []string
	for ch, q := range h.queues {
		if len(q.waiters) == 0 && time.Since(q.idleSince) >= idleUnsubscribe {
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

// signal wakes w without blocking; a pending wake-up already covers it.
func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func indexOf(ws []*waiter, w *waiter) int {
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}
