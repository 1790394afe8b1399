// Package handoff is the leader's protocol for acquire requests: how a
// request that may wait for a key is entered, queued, handed the key, and
// cleaned up after, when its client is still there, gone, or has retried
// it beside itself.
//
// One owner may have several requests live at once: a client retries an
// acquire with the same owner after a timeout or a failover, and the
// abandoned request goes on until it notices. Those requests must not undo
// each other. The rules (see Requests) are: the owner's last live request
// to leave cleans up after all of them, and none before it; a request that
// arrives while that clean-up is on its way waits for it to commit; a
// waiting request listens for its hand-off before it reads the table or
// proposes.
//
// The package knows nothing of raft or HTTP: a leadership term is a Port
// (stamp and propose an entry, read the queue, the term's end), so a test
// can drive every interleaving of requests, commits and terms
// (model_test.go).
package handoff

import (
	"context"
	"errors"

	"github.com/zerotal/lock/fsm"
)

// Port is one leadership term as the protocol uses it.
type Port interface {
	// Now is the term's clock, to stamp an entry with (fsm.Entry.Now).
	Now() int64
	// Propose proposes e and waits until it is applied or has failed. An
	// error after which this node no longer leads matches ErrEnded. It
	// answers an applied entry only once every hand-off applied up to it
	// has been delivered (raft's FSM runs the apply hook before it
	// answers): a request that returns a grant handed off to its owner
	// has seen that hand-off recorded, so the clean-up cannot take it
	// for one nobody returned.
	Propose(ctx context.Context, e fsm.Entry) (*fsm.Response, error)
	// Queued reports whether owner is queued for key as the table has it
	// now.
	Queued(ctx context.Context, key, owner string) (bool, error)
	// QueuedOnceDelivered is Queued that, when owner is not queued,
	// returns only once every hand-off applied so far has been delivered
	// (Requests.Deliver): a hand-off that dequeued owner is then known.
	QueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error)
	// Context ends when the term does.
	Context() context.Context
}

// ErrEnded is returned when the leadership term ended while a request
// was served; the client retries at the next leader, whose takeover
// cancels every queued waiter.
var ErrEnded = errors.New("leadership changed; retry")
