package lock

import (
	"context"
	"math/rand/v2"
	"sync"
)

// quitShards spreads the registry of waits over this many locks, so that
// many goroutines starting and ending waits at once do not all take one
// lock (context.AfterFunc on one shared context did, and cost a Block
// about a sixth of its time with 32 goroutines on distinct keys).
const quitShards = 32

// quitSet ends every wait in progress when the Manager closes: Block
// registers its wait's cancel function for as long as it waits, and
// Shutdown and Close call quit. A wait registered after quit is cancelled
// at once.
type quitSet struct {
	shards [quitShards]quitShard
}

type quitShard struct {
	mu    sync.Mutex
	quit  bool
	waits map[*quitWait]struct{}
	_     [40]byte // keep neighbouring shards off one cache line
}

// quitWait is one registered wait. It lives in the waiting call's own
// state (a handle waits for one grant at a time, under its op lock), so
// that a registration allocates nothing.
type quitWait struct {
	cancel context.CancelFunc
	shard  *quitShard // nil when not registered
}

// add registers w with cancel until w.remove.
func (s *quitSet) add(w *quitWait, cancel context.CancelFunc) {
	sh := &s.shards[rand.N(quitShards)]
	sh.mu.Lock()
	if sh.quit {
		sh.mu.Unlock()
		cancel()
		return
	}
	if sh.waits == nil {
		sh.waits = make(map[*quitWait]struct{})
	}
	w.cancel, w.shard = cancel, sh
	sh.waits[w] = struct{}{}
	sh.mu.Unlock()
}

// remove ends w's registration, if any.
func (w *quitWait) remove() {
	sh := w.shard
	if sh == nil {
		return
	}
	sh.mu.Lock()
	delete(sh.waits, w)
	sh.mu.Unlock()
	w.cancel, w.shard = nil, nil
}

// quit cancels every registered wait, and every wait registered later.
func (s *quitSet) quit() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.quit = true
		for w := range sh.waits {
			w.cancel()
		}
		clear(sh.waits)
		sh.mu.Unlock()
	}
}
