package rounds

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/fsm"
)

// answered is a proposal raft answered with err, or with resp.
func answered(err error, resp interface{}) *Proposal {
	p := newProposal(nil, false)
	entry{f: doneFuture{err: err, resp: resp}, props: []*Proposal{p}}.answer()
	return p
}

type doneFuture struct {
	err  error
	resp interface{}
}

func (f doneFuture) Error() error          { return f.err }
func (f doneFuture) Response() interface{} { return f.resp }
func (f doneFuture) Index() uint64         { return 7 }

func TestProposal_WaitMergesRaftAndResponseErrors(t *testing.T) {
	if _, err := answered(raft.ErrNotLeader, nil).Wait(); !errors.Is(err, raft.ErrNotLeader) {
		t.Fatalf("raft's error = %v", err)
	}
	resp := &fsm.Response{Index: 7, Err: drivers.ErrFull}
	got, err := answered(nil, resp).Wait()
	if !errors.Is(err, drivers.ErrFull) || got != resp {
		t.Fatalf("response error = %v, %v", got, err)
	}
	if _, err := answered(nil, "nope").Wait(); err == nil {
		t.Fatal("foreign response accepted")
	}
	if _, err := Failed(raft.ErrRaftShutdown).Wait(); !errors.Is(err, raft.ErrRaftShutdown) {
		t.Fatalf("failed proposal = %v", err)
	}
}
