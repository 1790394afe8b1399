package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channels the listening connection hears. wakeChannel carries a
// key whose waiters should look at it again (written by processes of
// schema 1, which let themselves in); letInChannel the notice of a place
// let in (letInSQL), for its waiter alone.
const (
	wakeChannel  = "zerotal_lock"
	letInChannel = "zerotal_lock_in"
)

// letIn is a place of key let in: its owner, its seq and its grant's
// fence (known once the transaction that let it in has run).
type letIn struct {
	key, owner string
	seq        int64
	fence      *uint64
}

// parseLetIn reads letInSQL's payload, "FENCE SEQ N OWNER KEY".
func parseLetIn(payload string) (key, owner string, seq int64, fence uint64, ok bool) {
	f, rest, _ := strings.Cut(payload, " ")
	sq, rest, _ := strings.Cut(rest, " ")
	n, rest, _ := strings.Cut(rest, " ")
	size, err1 := strconv.Atoi(n)
	fence, err2 := strconv.ParseUint(f, 10, 64)
	seq, err3 := strconv.ParseInt(sq, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || size < 0 || len(rest) < size+1 || rest[size] != ' ' {
		return "", "", 0, 0, false
	}
	return rest[size+1:], rest[:size], seq, fence, true
}

// hub hands what the listening connection hears, and what this handle's
// own transactions did, to this handle's waiters, by key.
type hub struct {
	mu        sync.Mutex
	subs      map[string]map[*sub]struct{}
	listening atomic.Bool // a LISTEN is in place: waiters may look less often
}

// sub is one waiter: woken when one of its keys may have changed, and
// told of its places let in.
type sub struct {
	owner string
	keys  []string
	wake  chan struct{}
	in    map[string]placeIn // by key, the last notice of a place let in (hub.mu)
}

// placeIn is a notice of the place seq let in with the grant of fence.
type placeIn struct {
	seq   int64
	fence uint64
}

func (h *hub) init() { h.subs = map[string]map[*sub]struct{}{} }

// subscribe returns owner's subscription to keys.
func (h *hub) subscribe(keys []string, owner string) *sub {
	s := &sub{owner: owner, keys: keys, wake: make(chan struct{}, 1), in: map[string]placeIn{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[*sub]struct{}{}
		}
		h.subs[k][s] = struct{}{}
	}
	return s
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range s.keys {
		delete(h.subs[k], s)
		if len(h.subs[k]) == 0 {
			delete(h.subs, k)
		}
	}
}

// waits reports whether this handle has a waiter of key.
func (h *hub) waits(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[key]) > 0
}

// wake wakes every waiter of key.
func (h *hub) wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		poke(s.wake)
	}
}

// letIn tells owner's waiters of key that its place seq was let in with
// the grant of fence; the key's other waiters are not woken.
func (h *hub) letIn(key, owner string, seq int64, fence uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[key] {
		if s.owner == owner {
			s.in[key] = placeIn{seq: seq, fence: fence}
			poke(s.wake)
		}
	}
}

// granted is the fence of s's place seq of key if a notice said it was
// let in.
func (h *hub) granted(s *sub, key string, seq int64) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in, ok := s.in[key]
	return in.fence, ok && seq != 0 && in.seq == seq
}

// wakeAll wakes every waiter: notifications may have been missed while
// no connection listened.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.subs {
		for s := range subs {
			poke(s.wake)
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
	for _, ch := range []string{wakeChannel, letInChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	d.hub.listening.Store(true)
	defer d.hub.listening.Store(false)
	d.hub.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel != letInChannel {
			d.hub.wake(n.Payload)
		} else if key, owner, seq, fence, ok := parseLetIn(n.Payload); ok {
			d.hub.letIn(key, owner, seq, fence)
		}
	}
}
