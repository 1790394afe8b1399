package client

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// watchWait is the wait_ms of one long poll of a key: under the node's
// cap (api.MaxWatchWait), so that a dead connection is noticed within
// it.
const watchWait = 20 * time.Second

// Changed makes the client a drivers.ChangeWatcher: the returned channel
// is closed when key changes hands (a grant, a release, an expiry, a
// hand-off), as the node's long poll of the key (GET /v1/watch) tells,
// so that an election's Observe is told at once rather than at its next
// look. One poll per key runs while anyone watches it, and for
// watchLinger after, so that a watcher that takes a new channel after
// each change finds it still running; Close ends every poll. The channel
// is also closed once a new poll has read the key first, so that a change
// between the caller's own read and the poll's start is not missed; a
// node without the watch (an older release) leaves the caller to its
// timer.
func (c *Client) Changed(key string) (<-chan struct{}, func()) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.watches == nil {
		c.watches = map[string]*keyPoll{}
	}
	p := c.watches[key]
	if p == nil {
		ctx, cancel := context.WithCancel(context.Background())
		p = &keyPoll{ch: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
		c.watches[key] = p
		go c.poll(ctx, key, p)
	}
	p.subs++
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
	var once sync.Once
	return p.ch, func() {
		once.Do(func() {
			c.watchMu.Lock()
			defer c.watchMu.Unlock()
			if p.subs--; p.subs == 0 {
				p.idle = time.AfterFunc(watchLinger, func() { c.endPoll(key, p) })
			}
		})
	}
}

// watchFallback spaces the polls of a node that answers them without
// waiting.
const watchFallback = time.Second

// watchLinger is how long a poll nobody watches keeps running.
const watchLinger = time.Second

// keyPoll is the long poll of one key and its watchers.
type keyPoll struct {
	ch     chan struct{} // closed at the next change; under Client.watchMu
	subs   int
	idle   *time.Timer // ends the poll once nobody watched it for watchLinger
	cancel context.CancelFunc
	done   chan struct{} // closed when poll returns
}

// endPoll ends p if nobody watches it.
func (c *Client) endPoll(key string, p *keyPoll) {
	c.watchMu.Lock()
	if p.subs > 0 || c.watches[key] != p {
		c.watchMu.Unlock()
		return
	}
	delete(c.watches, key)
	c.watchMu.Unlock()
	p.cancel()
	<-p.done
}

// stopWatches ends every poll (Close).
func (c *Client) stopWatches() {
	c.watchMu.Lock()
	polls := c.watches
	c.watches = nil
	c.watchMu.Unlock()
	for _, p := range polls {
		c.watchMu.Lock()
		if p.idle != nil {
			p.idle.Stop()
		}
		c.watchMu.Unlock()
		p.cancel()
		<-p.done
	}
}

// wake closes p's channel and gives it a new one.
func (c *Client) wake(p *keyPoll) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	close(p.ch)
	p.ch = make(chan struct{})
}

// poll long-polls key until ctx ends, waking p's watchers at every change
// of its holders.
func (c *Client) poll(ctx context.Context, key string, p *keyPoll) {
	defer close(p.done)
	seen, first := "-", true // "-" names no holders: the first poll answers at once
	backoff := firstPause
	for ctx.Err() == nil {
		start := time.Now()
		l, held, err := c.watchOnce(ctx, key, seen)
		if errors.Is(err, drivers.ErrUnsupported) || errors.Is(err, drivers.ErrClosed) {
			return // the watchers' timers take over
		}
		if err != nil {
			c.log.Debug("watch failed, polling again", "key", key, "error", err)
			if pause(ctx, backoff) != nil {
				return
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = firstPause
		now := api.HoldersSeen(l, held)
		switch {
		case first || now != seen:
			first, seen = false, now
			c.wake(p)
		case time.Since(start) < watchWait/2:
			// Unchanged, and answered without waiting: a node that has no
			// watch (an older release answers 404, as for a free key).
			// Ask again no more than a fallback look would.
			if pause(ctx, watchFallback) != nil {
				return
			}
		}
	}
}

// watchOnce is one GET /v1/watch of key.
func (c *Client) watchOnce(ctx context.Context, key, seen string) (l api.Lock, held bool, err error) {
	q := api.WatchQuery{Key: key, Seen: seen, WaitMillis: watchWait.Milliseconds()}.Values()
	err = c.call(ctx, request{op: "watch", method: http.MethodGet, path: api.PathWatch, query: q, wait: watchWait}, &l)
	if errors.Is(err, ErrNotFound) {
		return api.Lock{}, false, nil
	}
	return l, err == nil, err
}
