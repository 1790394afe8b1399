package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/fsm"
)

// keyWatches wakes the watches of keys (GET /v1/watch) when an applied
// entry touches them: a grant, a release, an extend, a force-release, an
// expiry or a hand-off. Every node applies every entry, so every node can
// serve a watch from its own table, without the leader.
type keyWatches struct {
	watched atomic.Int64 // keys watched: applied skips its work when 0
	mu      sync.Mutex
	keys    map[string]*keyWatch
}

type keyWatch struct {
	ch   chan struct{} // closed at the key's next applied entry
	subs int
}

// changed returns a channel closed when the next entry touching key is
// applied, and stop, to call once the caller no longer waits for it.
func (w *keyWatches) changed(key string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = map[string]*keyWatch{}
	}
	k := w.keys[key]
	if k == nil {
		k = &keyWatch{ch: make(chan struct{})}
		w.keys[key] = k
		w.watched.Add(1)
	}
	k.subs++
	var once sync.Once
	return k.ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if k.subs--; k.subs == 0 {
				delete(w.keys, key)
				w.watched.Add(-1)
			}
		})
	}
}

// applied wakes the watches of every key a touches. It runs in the FSM
// goroutine (onApply) and never blocks.
func (w *keyWatches) applied(a fsm.Applied) {
	if w.watched.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wake := func(key string) {
		if k := w.keys[key]; k != nil {
			close(k.ch)
			k.ch = make(chan struct{})
		}
	}
	if keys := a.Entry.AcquireKeys(); keys != nil {
		for _, key := range keys {
			wake(key)
		}
	} else if a.Entry.Key != "" {
		wake(a.Entry.Key)
	}
	for _, h := range a.Result.Handoffs {
		if h.Key != a.Entry.Key {
			wake(h.Key)
		}
	}
}

var _ httpapi.Watcher = apiStore{}

// Watch answers when key's holders on this node's table are no longer
// those seen names (api.HoldersSeen), or when wait passes, or ctx
// ends, with the key as it is then. It reads this node's applied table,
// leader or not: a watch wakes its caller, which reads the key again
// (linearizably) if it needs to be sure.
func (s apiStore) Watch(ctx context.Context, key, seen string, wait time.Duration) (api.Lock, bool, error) {
	n := s.n
	if err := n.servingErr(); err != nil {
		return api.Lock{}, false, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		changed, stop := n.watches.changed(key) // before the read: a change after it is not missed
		lock, held, err := n.localLock(ctx, key)
		if err != nil || api.HoldersSeen(lock, held) != seen {
			stop()
			return lock, held, err
		}
		select {
		case <-changed:
			stop()
		case <-timer.C:
			stop()
			return lock, held, nil
		case <-ctx.Done():
			stop()
			return lock, held, nil
		}
	}
}

// localLock reads key from this node's table at its log's time.
func (n *Node) localLock(ctx context.Context, key string) (api.Lock, bool, error) {
	info, ok, err := n.fsm.Get(ctx, key)
	if err != nil {
		return api.Lock{}, false, unavailable("watch", err)
	}
	if !ok {
		return api.Lock{}, false, nil
	}
	lock, held := heldLock(info, n.fsm.Time())
	return lock, held, nil
}
