package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// gate counts raft futures this node is waiting on and refuses new ones
// once closed. raft does not answer a future still queued in its (batched)
// apply channel when it shuts down, so Shutdown closes the gate and waits
// for every pending future before it stops raft; while raft runs, each
// one ends (committed, or failed when leadership is lost).
type gate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *gate) leave() { g.wg.Done() }

// closeAndWait refuses new futures and waits for the pending ones, or for
// ctx to end.
func (g *gate) closeAndWait(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: waiting for pending raft operations: %w", ctx.Err())
	}
}

// trackedFuture leaves the gate once its outcome is known.
type trackedFuture struct {
	raft.ApplyFuture
	once  sync.Once
	leave func()
}

func (f *trackedFuture) Error() error {
	err := f.ApplyFuture.Error()
	f.once.Do(f.leave)
	return err
}

// barrier runs raft's Barrier through the gate.
func (n *Node) barrier() error {
	if !n.gate.enter() {
		return raft.ErrRaftShutdown
	}
	defer n.gate.leave()
	return n.raft.Barrier(n.cfg.ApplyTimeout).Error()
}
