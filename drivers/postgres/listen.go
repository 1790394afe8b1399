package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// hub hands the notifications of the listening connection to this
// handle's waiters, by key.
type hub struct {
	mu        sync.Mutex
	subs      map[string]map[chan struct{}]struct{}
	listening atomic.Bool // a LISTEN is in place: waiters may look less often
}

func (h *hub) init() { h.subs = map[string]map[chan struct{}]struct{}{} }

// subscribe returns a channel that receives a wake-up when one of keys
// may have been released.
func (h *hub) subscribe(keys []string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[chan struct{}]struct{}{}
		}
		h.subs[k][ch] = struct{}{}
	}
	return ch
}

func (h *hub) unsubscribe(keys []string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		delete(h.subs[k], ch)
		if len(h.subs[k]) == 0 {
			delete(h.subs, k)
		}
	}
}

func (h *hub) wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[key] {
		poke(ch)
	}
}

// wakeAll wakes every waiter: notifications may have been missed while
// no connection listened.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.subs {
		for ch := range subs {
			poke(ch)
		}
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// listen keeps one connection LISTENing on the channel the driver's
// transactions notify, until ctx ends, reconnecting after a failure.
func (d *Driver) listen(ctx context.Context) {
	url := d.cfg.ListenURL
	if url == "" {
		url = d.cfg.URL
	}
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, url)
		if ctx.Err() != nil {
			return
		}
		d.cfg.Logger.Warn("postgres: the listening connection failed; waiters poll until it is back", "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (d *Driver) listenOnce(ctx context.Context, url string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(cctx, url)
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN zerotal_lock"); err != nil {
		return err
	}
	d.hub.listening.Store(true)
	defer d.hub.listening.Store(false)
	d.hub.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		d.hub.wake(n.Payload)
	}
}
