package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// roundsInFlight is how many rounds may be in raft at once. One keeps the
// leader loop free to process a commit the moment it arrives; measured on
// three nodes sharing one disk it beat two and unbounded.
const roundsInFlight = 1

// lazyLinger bounds how long a lazy proposal waits for a round to join.
const lazyLinger = 3 * time.Millisecond

// Filling: after a round of at least fillFrom proposals, the next round
// waits up to fillWait for as many proposals as that one had.
const (
	fillFrom = 8
	fillWait = time.Millisecond
)

// rounds paces proposals into raft in rounds, with at most depth rounds
// in flight; the proposals that arrive meanwhile wait and go in together
// as the next round.
//
// Why: raft's leader loop writes a batch to disk and processes commits in
// one goroutine. Fed freely under load, it writes many small batches, and
// each write holds up the commit of the batch before it; the followers
// likewise sync one small batch after another, all on the same disks.
// Rounds make the batches large, so fsyncs are shared by many requests
// and a commit seldom waits behind a write. With nothing in flight a
// proposal goes straight in, so a lone request pays nothing.
//
// Under load the clients answered by one round send their next requests
// over the following moments; started at once, the next round would hold
// only the early ones and split the clients into groups that alternate.
// So after a large round the next one waits, briefly (fill), until as
// many proposals as that round had are queued.
//
// A lazy proposal (an acquire that will only join a key's queue) does not
// start a round of its own: it rides with the next one, or goes alone
// after lazyLinger. On a contended key the holder's release usually
// follows within a moment, and the two then share one commit instead of
// the release waiting behind the queueing.
type rounds struct {
	apply   func(data []byte, timeout time.Duration) raft.ApplyFuture // raft.Apply
	timeout time.Duration
	depth   int
	wait    time.Duration // how long lazy proposals wait: lazyLinger
	fill    time.Duration // how long a round waits to fill: fillWait

	mu       sync.Mutex
	inflight int
	queue    []*queuedProposal // in arrival order
	eager    int               // proposals in queue that are not lazy
	last     int               // size of the last round started
	timer    *time.Timer       // starts a round at timerAt, if one is free
	timerAt  time.Time
}

// queuedProposal is a proposal that may still wait for its round. It is
// an ApplyFuture answered by its round's await (raft's own futures must
// not be waited on by two goroutines).
type queuedProposal struct {
	data []byte
	lazy bool
	done chan struct{} // closed once the fields below are set
	err  error
	resp interface{}
	idx  uint64
}

func (p *queuedProposal) Error() error {
	<-p.done
	return p.err
}

func (p *queuedProposal) Response() interface{} {
	<-p.done
	return p.resp
}

func (p *queuedProposal) Index() uint64 {
	<-p.done
	return p.idx
}

// propose queues data and starts a round when one is free and ready.
// Proposals of one goroutine enter raft in the order made.
func (r *rounds) propose(data []byte, lazy bool) raft.ApplyFuture {
	p := &queuedProposal{data: data, lazy: lazy, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, p)
	if !lazy {
		r.eager++
	}
	if r.inflight >= r.depth {
		r.mu.Unlock() // the round in flight starts the next one when done
		return p
	}
	if !r.readyLocked() {
		r.armLocked()
		r.mu.Unlock()
		return p
	}
	round := r.takeLocked()
	r.mu.Unlock()
	r.run(round)
	return p
}

// readyLocked reports whether the queue should go now: it holds an eager
// proposal, and the last round was small or this one is as large.
func (r *rounds) readyLocked() bool {
	return r.eager > 0 && (r.last < fillFrom || len(r.queue) >= r.last)
}

// armLocked makes sure a queue that is not ready yet goes in time: after
// fill when it holds an eager proposal, after wait when all are lazy.
func (r *rounds) armLocked() {
	d := r.wait
	if r.eager > 0 {
		d = r.fill
	}
	at := time.Now().Add(d)
	switch {
	case r.timer == nil:
		r.timer = time.AfterFunc(d, r.startIdle)
	case at.Before(r.timerAt):
		r.timer.Reset(d)
	default:
		return
	}
	r.timerAt = at
}

// startIdle starts a round for proposals left waiting, when a round is free.
func (r *rounds) startIdle() {
	r.mu.Lock()
	r.timer = nil
	if r.inflight >= r.depth || len(r.queue) == 0 {
		r.mu.Unlock()
		return
	}
	round := r.takeLocked()
	r.mu.Unlock()
	r.run(round)
}

// takeLocked takes the queue as a new round.
func (r *rounds) takeLocked() []*queuedProposal {
	round := r.queue
	r.queue, r.eager, r.last = nil, 0, len(round)
	r.inflight++
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	return round
}

// run hands a round to raft, in order, and answers it in the background.
func (r *rounds) run(round []*queuedProposal) {
	futures := r.submit(round, nil)
	go r.await(round, futures)
}

// submit hands the proposals of a round to raft, reusing futures' room.
func (r *rounds) submit(round []*queuedProposal, futures []raft.ApplyFuture) []raft.ApplyFuture {
	futures = futures[:0]
	for _, p := range round {
		futures = append(futures, r.apply(p.data, r.timeout))
	}
	return futures
}

// await answers every proposal of a round (raft answers each future, also
// when leadership is lost), then runs the proposals queued meanwhile as
// the next round, for as long as the queue is ready when a round ends.
func (r *rounds) await(round []*queuedProposal, futures []raft.ApplyFuture) {
	for {
		for i, f := range futures {
			p := round[i]
			p.err = f.Error()
			if p.err == nil {
				p.resp, p.idx = f.Response(), f.Index()
			}
			close(p.done)
		}
		r.mu.Lock()
		r.inflight--
		if !r.readyLocked() {
			// Nothing waiting, only lazy proposals (they wait for a
			// companion), or a round still filling.
			if len(r.queue) > 0 {
				r.armLocked()
			}
			r.mu.Unlock()
			return
		}
		round = r.takeLocked()
		r.mu.Unlock()
		futures = r.submit(round, futures)
	}
}
