package cluster

import (
	"context"
	"fmt"

	"github.com/zerotal/lock/cluster/handoff"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// termPort is one leadership term of the node as the hand-off protocol
// sees it: the term's clock, raft through the rounds, and the FSM's queue.
type termPort struct {
	n *Node
	l *leadership
}

var _ handoff.Port = termPort{}

func (p termPort) Now() int64 { return p.l.clock.Now() }

func (p termPort) Context() context.Context { return p.l.ctx }

// Propose proposes e; a single key's mutex acquire goes through
// proposeAcquire, which puts an overdue grant's expiry ahead of it when
// waiters are queued.
func (p termPort) Propose(ctx context.Context, e fsm.Entry) (*fsm.Response, error) {
	var (
		resp *fsm.Response
		err  error
	)
	if key, ok := mutexKey(e); ok {
		resp, err = p.n.proposeAcquire(ctx, e, key)
	} else {
		resp, err = p.n.apply(e)
	}
	if err != nil && leadershipEnded(err) {
		return nil, fmt.Errorf("%w: %w", handoff.ErrEnded, err)
	}
	return resp, err
}

func (p termPort) Queued(ctx context.Context, key, owner string) (bool, error) {
	return p.n.fsm.IsQueued(ctx, key, owner)
}

func (p termPort) QueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error) {
	return p.n.fsm.IsQueuedOnceDelivered(ctx, key, owner)
}

// mutexKey is the key of e when e acquires a single key's mutex.
func mutexKey(e fsm.Entry) (string, bool) {
	if keys := e.AcquireKeys(); len(keys) == 1 && e.Claim == (engine.Claim{}) {
		return keys[0], true
	}
	return "", false
}
