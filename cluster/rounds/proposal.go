package rounds

import (
	"errors"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/fsm"
)

// Proposal is one entry on its way through raft, and the one future type
// of a node: Rounds answer it once raft has answered its entry (or
// at once, when it failed before reaching raft). It satisfies
// raft.ApplyFuture so fsm.Await can read it; any number of goroutines may
// wait on it (raft's own futures allow one).
type Proposal struct {
	data []byte
	lazy bool          // rides with the next round rather than starting one
	done chan struct{} // closed once the fields below are set
	err  error
	resp interface{}
	idx  uint64
}

var _ raft.ApplyFuture = (*Proposal)(nil)

func newProposal(data []byte, lazy bool) *Proposal {
	return &Proposal{data: data, lazy: lazy, done: make(chan struct{})}
}

// Failed is a proposal that never reached raft: it is answered with err.
func Failed(err error) *Proposal {
	p := &Proposal{err: err, done: make(chan struct{})}
	close(p.done)
	return p
}

// answer records raft's outcome for the proposal's entry and wakes its
// waiters. Called once.
func (p *Proposal) answer(f raft.ApplyFuture) {
	p.err = f.Error()
	if p.err == nil {
		p.resp, p.idx = f.Response(), f.Index()
	}
	close(p.done)
}

// Wait blocks until the entry is applied (or failed) and returns the
// FSM's response, merging its error into the result as fsm.Await does.
func (p *Proposal) Wait() (*fsm.Response, error) { return fsm.Await(p) }

// Error, Response and Index make a Proposal a raft.ApplyFuture; each
// blocks until the proposal is answered.
func (p *Proposal) Error() error {
	<-p.done
	return p.err
}

func (p *Proposal) Response() interface{} {
	<-p.done
	return p.resp
}

func (p *Proposal) Index() uint64 {
	<-p.done
	return p.idx
}

// Unavailable reports the raft errors that mean "no leader here now": a
// proposal failed with one may be retried, on this node or another.
func Unavailable(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, raft.ErrEnqueueTimeout) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) ||
		errors.Is(err, raft.ErrAbortedByRestore)
}
