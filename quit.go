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
	mu     sync.Mutex
	quit   bool
	cancel map[*context.CancelFunc]struct{}
	_      [40]byte // keep neighbouring shards off one cache line
}

// add registers cancel until the returned function is called.
func (s *quitSet) add(cancel context.CancelFunc) (remove func()) {
	sh := &s.shards[rand.N(quitShards)]
	key := &cancel
	sh.mu.Lock()
	if sh.quit {
		sh.mu.Unlock()
		cancel()
		return func() {}
	}
	if sh.cancel == nil {
		sh.cancel = make(map[*context.CancelFunc]struct{})
	}
	sh.cancel[key] = struct{}{}
	sh.mu.Unlock()
	return func() {
		sh.mu.Lock()
		delete(sh.cancel, key)
		sh.mu.Unlock()
	}
}

// quit cancels every registered wait, and every wait registered later.
func (s *quitSet) quit() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.quit = true
		for c := range sh.cancel {
			(*c)()
		}
		clear(sh.cancel)
		sh.mu.Unlock()
	}
}
