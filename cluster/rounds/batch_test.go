package rounds

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// fsmRaft is a one-node raft stand-in with a real FSM: apply appends to
// the log, commit applies what is pending in one ApplyBatch and answers
// each future with the FSM's response, as raft does.
type fsmRaft struct {
	fsm *fsm.FSM

	mu      sync.Mutex
	log     [][]byte
	pending []*fsmFuture
}

type fsmFuture struct {
	data []byte
	idx  uint64
	resp interface{}
	err  error
	done chan struct{}
}

func (f *fsmFuture) Error() error          { <-f.done; return f.err }
func (f *fsmFuture) Response() interface{} { <-f.done; return f.resp }
func (f *fsmFuture) Index() uint64         { <-f.done; return f.idx }

func (r *fsmRaft) apply(data []byte, _ time.Duration) raft.ApplyFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, data)
	f := &fsmFuture{data: data, idx: uint64(len(r.log)), done: make(chan struct{})}
	r.pending = append(r.pending, f)
	return f
}

func (r *fsmRaft) commit() {
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	logs := make([]*raft.Log, len(pending))
	for i, f := range pending {
		logs[i] = &raft.Log{Index: f.idx, Term: 1, Type: raft.LogCommand, Data: f.data}
	}
	resps := r.fsm.ApplyBatch(logs)
	for i, f := range pending {
		f.resp = resps[i]
		close(f.done)
	}
}

func (r *fsmRaft) entries() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.log...)
}

func encode(t *testing.T, e fsm.Entry) []byte {
	t.Helper()
	b, err := fsm.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The lock proposals queued behind a round go in as one batch entry, and
// each is answered with its own part of the FSM's response: its own grant
// and fence, or its own error. A member entry is never a batch part.
func TestRounds_QueuedLockProposalsGoAsOneBatchEntry(t *testing.T) {
	f, err := fsm.New(fsm.Config{MaxKeys: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fr := &fsmRaft{fsm: f}
	r := New(Config{Apply: fr.apply, Timeout: time.Second})

	acquire := func(key, owner string) []byte {
		return encode(t, fsm.Entry{Op: engine.OpAcquire, Key: key, Owner: owner, TTL: time.Minute, Now: 1})
	}
	first := r.Propose(acquire("k0", "o"), false) // alone: a plain entry
	keys := []string{"k1", "k2", "k0", "k3"}      // k0 is held; k3 is over MaxKeys
	var queued []*Proposal
	for _, k := range keys {
		queued = append(queued, r.Propose(acquire(k, "p"), false))
	}
	member := r.Propose(encode(t, fsm.Entry{Member: fsm.SetMember, ID: "n1", HTTPAddr: "127.0.0.1:1"}), false)
	last := r.Propose(acquire("k1", "q"), false)
	fr.commit()
	if resp, err := first.Wait(); err != nil || resp.Result.Grant.Fence != 1 {
		t.Fatalf("first = %+v, %v", resp, err)
	}
	poll.Until(t, 5*time.Second, "the next round", func() bool { return len(fr.entries()) == 4 })
	fr.commit()

	log := fr.entries()
	if fsm.EntryType(log[0][0]) == fsm.Batch || fsm.EntryType(log[1][0]) != fsm.Batch ||
		fsm.EntryType(log[2][0]) != fsm.SetMember || fsm.EntryType(log[3][0]) == fsm.Batch {
		t.Fatalf("entry types %d %d %d %d: want plain, batch, set_member, plain", log[0][0], log[1][0], log[2][0], log[3][0])
	}
	if parts, err := fsm.DecodeLog(log[1]); err != nil || len(parts) != len(keys) {
		t.Fatalf("the batch carries %d parts (%v), want %d", len(parts), err, len(keys))
	}
	fences := []uint64{2, 3}
	for i, p := range queued[:2] {
		resp, err := p.Wait()
		if err != nil || !resp.Result.OK || resp.Result.Grant.Key != keys[i] || resp.Result.Grant.Fence != fences[i] {
			t.Fatalf("batched acquire of %s = %+v, %v; want granted with fence %d", keys[i], resp, err, fences[i])
		}
		if p.Index() != 2 {
			t.Fatalf("batched proposal index %d, want the batch's 2", p.Index())
		}
	}
	if resp, err := queued[2].Wait(); err != nil || resp.Result.OK {
		t.Fatalf("acquire of the held k0 = %+v, %v; want refused", resp, err)
	}
	if _, err := queued[3].Wait(); !errors.Is(err, drivers.ErrFull) {
		t.Fatalf("acquire over MaxKeys = %v, want an error", err)
	}
	if resp, err := member.Wait(); err != nil || !resp.Result.OK {
		t.Fatalf("member = %+v, %v", resp, err)
	}
	if resp, err := last.Wait(); err != nil || resp.Result.OK {
		t.Fatalf("acquire of the held k1 after the batch = %+v, %v", resp, err)
	}
}

// Unbatched writes every proposal as its own entry.
func TestRounds_UnbatchedWritesPlainEntries(t *testing.T) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fr := &fsmRaft{fsm: f}
	r := New(Config{Apply: fr.apply, Unbatched: true})
	r.Propose(encode(t, fsm.Entry{Op: engine.OpTick, Now: 1}), false)
	var ps []*Proposal
	for i := 0; i < 3; i++ {
		ps = append(ps, r.Propose(encode(t, fsm.Entry{Op: engine.OpTick, Now: 2}), false))
	}
	fr.commit()
	poll.Until(t, 5*time.Second, "the next round", func() bool { return len(fr.entries()) == 4 })
	fr.commit()
	for _, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range fr.entries() {
		if fsm.EntryType(b[0]) == fsm.Batch {
			t.Fatalf("entry %d is a batch", i)
		}
	}
}
