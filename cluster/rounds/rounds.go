package rounds

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/fsm"
)

// Defaults of Config.
const (
	// DefaultDepth is how many rounds may be in raft at once. One keeps
	// the leader loop free to process a commit the moment it arrives;
	// measured on three nodes sharing one disk it beat two and unbounded.
	DefaultDepth = 1
	// DefaultStall is how long a round may hold its slot. raft answers
	// every future while it runs, normally within milliseconds; should
	// one take this long anyway (a stalled disk), the next round goes in
	// regardless rather than the node stalling with it. Rounds only pace
	// proposals: any number of them in flight is correct.
	DefaultStall = time.Second
	// DefaultLinger bounds how long a lazy proposal waits for a round to
	// join.
	DefaultLinger = 3 * time.Millisecond
)

// Config configures Rounds; zero durations and depth take the defaults.
type Config struct {
	// Apply hands one entry to raft: raft.Raft.Apply.
	Apply func(data []byte, timeout time.Duration) raft.ApplyFuture
	// Timeout is passed to Apply (0: none).
	Timeout time.Duration
	Depth   int
	Linger  time.Duration
	Stall   time.Duration
	// Unbatched writes every proposal as its own entry, never as a batch
	// entry (for tests and measurements).
	Unbatched bool
}

// Rounds paces proposals into raft in rounds, with at most depth rounds
// in flight; the proposals that arrive meanwhile wait and go in together
// as the next round. It also counts the proposals raft has not answered,
// for a node's shutdown (Close).
//
// Why rounds: raft's leader loop writes a batch to disk and processes
// commits in one goroutine. Fed freely under load, it writes many small
// batches, and each write holds up the commit of the batch before it; the
// followers likewise sync one small batch after another, all on the same
// disks. Rounds make the batches large, so fsyncs are shared by many
// requests and a commit seldom waits behind a write. With nothing in
// flight a proposal goes straight in, so a lone request pays nothing.
//
// A lazy proposal (an acquire that will only join a key's queue) does not
// start a round of its own: it rides with the next one, or goes alone
// after Config.Linger. On a contended key the holder's release usually
// follows within a moment, and the two then share one commit instead of
// the release waiting behind the queueing.
//
// Why the count: raft does not answer a future still queued in its
// (batched) apply channel when it shuts down, so Shutdown closes the
// Rounds, which then refuse new proposals, and waits until raft has
// answered every pending one before it stops raft. While raft runs, each
// one ends (committed, or failed when leadership is lost).
type Rounds struct {
	apply     func(data []byte, timeout time.Duration) raft.ApplyFuture
	timeout   time.Duration
	depth     int
	wait      time.Duration // how long lazy proposals wait
	stall     time.Duration
	unbatched bool

	mu       sync.Mutex
	closed   bool           // close was called: refuse new proposals
	pending  sync.WaitGroup // proposals and barriers raft has not answered
	inflight int
	queue    []*Proposal // in arrival order
	eager    int         // proposals in queue that are not lazy
	linger   *time.Timer // armed while only lazy proposals wait
}

// New returns Rounds that hand entries to cfg.Apply.
func New(cfg Config) *Rounds {
	r := &Rounds{apply: cfg.Apply, timeout: cfg.Timeout, depth: cfg.Depth, wait: cfg.Linger, stall: cfg.Stall, unbatched: cfg.Unbatched}
	if r.depth <= 0 {
		r.depth = DefaultDepth
	}
	if r.wait <= 0 {
		r.wait = DefaultLinger
	}
	if r.stall <= 0 {
		r.stall = DefaultStall
	}
	return r
}

// Propose queues data and starts a round when one is free (unless lazy).
// Proposals of one goroutine enter raft in the order made. After Close it
// returns a proposal failed with raft.ErrRaftShutdown.
func (r *Rounds) Propose(data []byte, lazy bool) *Proposal {
	p := newProposal(data, lazy)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Failed(raft.ErrRaftShutdown)
	}
	r.pending.Add(1)
	r.queue = append(r.queue, p)
	if !lazy {
		r.eager++
	}
	if r.inflight >= r.depth {
		r.mu.Unlock() // a round in flight takes it when done
		return p
	}
	if lazy {
		r.armLocked()
		r.mu.Unlock()
		return p
	}
	round := r.takeLocked()
	r.mu.Unlock()
	r.run(round)
	return p
}

// Counted runs op (a raft call that must end before raft stops, such as
// a barrier), counted like a pending proposal; after Close it returns
// raft.ErrRaftShutdown without running op.
func (r *Rounds) Counted(op func() error) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return raft.ErrRaftShutdown
	}
	r.pending.Add(1)
	r.mu.Unlock()
	defer r.pending.Done()
	return op()
}

// Close refuses new proposals and waits until raft has answered every
// pending one, or ctx ends.
func (r *Rounds) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		r.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("rounds: waiting for pending raft operations: %w", ctx.Err())
	}
}

// startIdle starts a round for proposals left waiting, when a round is free.
func (r *Rounds) startIdle() {
	r.mu.Lock()
	r.linger = nil
	if r.inflight >= r.depth || len(r.queue) == 0 {
		r.mu.Unlock()
		return
	}
	round := r.takeLocked()
	r.mu.Unlock()
	r.run(round)
}

// armLocked makes sure lazy proposals left waiting go within r.wait.
func (r *Rounds) armLocked() {
	if r.linger == nil {
		r.linger = time.AfterFunc(r.wait, r.startIdle)
	}
}

// takeLocked takes the queue as a new round.
func (r *Rounds) takeLocked() []*Proposal {
	round := r.queue
	r.queue, r.eager = nil, 0
	r.inflight++
	if r.linger != nil {
		r.linger.Stop()
		r.linger = nil
	}
	return round
}

// run hands a round to raft, in order, and answers it in the background.
func (r *Rounds) run(round []*Proposal) {
	go r.await(r.submit(round))
}

// entry is one raft entry of a round: a proposal alone, or a run of lock
// proposals written as one fsm.Batch entry.
type entry struct {
	f     raft.ApplyFuture
	props []*Proposal // the proposal, or the batch's parts in order
	batch bool
}

// submit hands the proposals of a round to raft, in order. Consecutive
// lock proposals go as one batch entry (up to fsm.MaxBatchParts each):
// raft stores, replicates and applies one entry for them. A proposal
// alone keeps its own entry, the cheapest to write and apply.
func (r *Rounds) submit(round []*Proposal) []entry {
	entries := make([]entry, 0, 1)
	for i := 0; i < len(round); {
		j := i
		for !r.unbatched && j < len(round) && j-i < fsm.MaxBatchParts && fsm.Batchable(round[j].data) {
			j++
		}
		if j-i >= 2 {
			parts := make([][]byte, j-i)
			for k, p := range round[i:j] {
				parts[k] = p.data
			}
			if b, err := fsm.EncodeBatch(parts); err == nil {
				entries = append(entries, entry{f: r.apply(b, r.timeout), props: round[i:j], batch: true})
				i = j
				continue
			}
		}
		entries = append(entries, entry{f: r.apply(round[i].data, r.timeout), props: round[i : i+1]})
		i++
	}
	return entries
}

// answer answers the proposals of e once raft has answered its entry:
// a batch's parts each with their own part of the FSM's response.
func (e entry) answer() {
	err := e.f.Error()
	var resp interface{}
	var idx uint64
	if err == nil {
		resp, idx = e.f.Response(), e.f.Index()
	}
	if !e.batch {
		e.props[0].answer(err, resp, idx)
		return
	}
	br, _ := resp.(*fsm.Response)
	if err == nil && (br == nil || len(br.Parts) != len(e.props)) {
		err = fmt.Errorf("rounds: a batch of %d answered with %T %+v", len(e.props), resp, resp)
	}
	for j, p := range e.props {
		if err != nil {
			p.answer(err, nil, 0)
			continue
		}
		p.answer(nil, &br.Parts[j], idx)
	}
}

// await answers every proposal of a round (raft answers each entry, also
// when leadership is lost), then runs the proposals queued meanwhile as
// the next round, until no eager one is left.
func (r *Rounds) await(entries []entry) {
	for {
		// freed is set by whoever gives up the round's slot first: this
		// goroutine when the round ends, or the stall timer.
		var freed atomic.Bool
		stall := time.AfterFunc(r.stall, func() {
			if freed.CompareAndSwap(false, true) {
				r.endRound()
			}
		})
		for _, e := range entries {
			e.answer()
			for range e.props {
				r.pending.Done()
			}
		}
		stall.Stop()
		if !freed.CompareAndSwap(false, true) {
			return // the next round went in already
		}
		r.mu.Lock()
		next, ok := r.finishLocked()
		r.mu.Unlock()
		if !ok {
			return
		}
		entries = r.submit(next)
	}
}

// endRound gives up a stalled round's slot and starts the next round if
// eager proposals wait.
func (r *Rounds) endRound() {
	r.mu.Lock()
	round, ok := r.finishLocked()
	r.mu.Unlock()
	if ok {
		r.run(round)
	}
}

// finishLocked gives up one round's slot and, when an eager proposal
// waits, takes the queue as the next round. With nothing, or only lazy
// proposals, waiting, those keep waiting for a companion, within r.wait.
func (r *Rounds) finishLocked() ([]*Proposal, bool) {
	r.inflight--
	if r.eager == 0 {
		if len(r.queue) > 0 {
			r.armLocked()
		}
		return nil, false
	}
	return r.takeLocked(), true
}

// Proposal is one entry on its way through raft, and the one future type
// of a node: Rounds answer it once raft has answered its entry (or at
// once, when it failed before reaching raft). Any number of goroutines
// may wait on it (raft's own futures allow one).
type Proposal struct {
	data []byte
	lazy bool          // rides with the next round rather than starting one
	done chan struct{} // closed once the fields below are set
	err  error
	resp interface{}
	idx  uint64
}

func newProposal(data []byte, lazy bool) *Proposal {
	return &Proposal{data: data, lazy: lazy, done: make(chan struct{})}
}

// Failed is a proposal that never reached raft: it is answered with err.
func Failed(err error) *Proposal {
	p := &Proposal{err: err, done: make(chan struct{})}
	close(p.done)
	return p
}

// answer records raft's outcome for the proposal's entry (resp and idx
// only when err is nil) and wakes its waiters. Called once.
func (p *Proposal) answer(err error, resp interface{}, idx uint64) {
	p.err, p.resp, p.idx = err, resp, idx
	close(p.done)
}

var _ raft.ApplyFuture = (*Proposal)(nil)

// Wait blocks until the entry is applied (or failed) and merges raft's
// two error channels: raft's own error for the entry (not leader,
// shutdown, timeout) and the error inside the FSM's Response. The
// Response is returned whenever the entry was applied, also when it
// carries an error, so callers can read the result.
func (p *Proposal) Wait() (*fsm.Response, error) {
	<-p.done
	if p.err != nil {
		return nil, p.err
	}
	resp, ok := p.resp.(*fsm.Response)
	if !ok || resp == nil {
		return nil, fmt.Errorf("rounds: unexpected apply response %T", p.resp)
	}
	return resp, resp.Err
}

// Error is raft's error for the entry (nil once applied), Response the
// FSM's answer and Index the entry's raft index: the parts of a
// raft.ApplyFuture, each blocking until the proposal is answered.
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
