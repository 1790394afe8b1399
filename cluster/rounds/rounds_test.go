package rounds

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// fakeRaft records what is applied and answers each future when told.
type fakeRaft struct {
	mu      sync.Mutex
	applied []string
	pending []*fakeFuture
}

type fakeFuture struct {
	data string
	idx  uint64
	err  error
	done chan struct{}
}

func (f *fakeFuture) Error() error          { <-f.done; return f.err }
func (f *fakeFuture) Response() interface{} { <-f.done; return f.data }
func (f *fakeFuture) Index() uint64         { <-f.done; return f.idx }

func (r *fakeRaft) apply(data []byte, _ time.Duration) raft.ApplyFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, string(data))
	f := &fakeFuture{data: string(data), idx: uint64(len(r.applied)), done: make(chan struct{})}
	r.pending = append(r.pending, f)
	return f
}

// commit answers every future applied so far (with err) and reports how
// many.
func (r *fakeRaft) commit(err error) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.pending {
		f.err = err
		close(f.done)
	}
	n := len(r.pending)
	r.pending = nil
	return n
}

func (r *fakeRaft) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.applied...)
}

func (r *fakeRaft) inRaft() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

func newTestRounds() (*Rounds, *fakeRaft) {
	fr := &fakeRaft{}
	return New(Config{Apply: fr.apply, Timeout: time.Second}), fr
}

// While a round is in flight, proposals wait and then go in together, in
// order; each is answered with its own future's outcome.
func TestRounds_QueuedProposalsFormTheNextRound(t *testing.T) {
	r, fr := newTestRounds()
	first := r.Propose([]byte("a"), false)
	if got := fr.inRaft(); got != 1 {
		t.Fatalf("%d proposals in raft, want the first at once", got)
	}
	var later []raft.ApplyFuture
	for _, d := range []string{"b", "c", "d"} {
		later = append(later, r.Propose([]byte(d), false))
	}
	if got := fr.inRaft(); got != 1 {
		t.Fatalf("%d proposals in raft while a round is in flight, want 1", got)
	}
	fr.commit(nil)
	if err := first.Error(); err != nil || first.Response() != "a" || first.Index() != 1 {
		t.Fatalf("first = %v %v %d", err, first.Response(), first.Index())
	}
	poll.Until(t, 5*time.Second, "the next round", func() bool { return fr.inRaft() == 3 })
	boom := errors.New("leadership lost")
	fr.commit(boom)
	for i, f := range later {
		if err := f.Error(); !errors.Is(err, boom) || f.Response() != nil {
			t.Fatalf("proposal %d: %v %v", i, err, f.Response())
		}
	}
	if got := fmt.Sprint(fr.log()); got != "[a b c d]" {
		t.Fatalf("raft got %s", got)
	}
}

// A lazy proposal does not start a round: it rides with the next eager
// one, ahead of it, or goes alone after DefaultLinger.
func TestRounds_LazyProposalRidesWithTheNextRound(t *testing.T) {
	r, fr := newTestRounds()
	r.wait = time.Hour // the companion comes first; the timer is stopped then
	lazy := r.Propose([]byte("queue-me"), true)
	if got := fr.inRaft(); got != 0 {
		t.Fatalf("a lazy proposal went in alone at once")
	}
	eager := r.Propose([]byte("release"), false)
	if got := fmt.Sprint(fr.log()); got != "[queue-me release]" {
		t.Fatalf("raft got %s, want both in one round, lazy first", got)
	}
	fr.commit(nil)
	if lazy.Error() != nil || eager.Error() != nil {
		t.Fatal("not answered")
	}

	r.mu.Lock()
	r.wait = DefaultLinger
	r.mu.Unlock()
	start := time.Now()
	alone := r.Propose([]byte("alone"), true)
	poll.Until(t, 5*time.Second, "the lazy proposal to go alone", func() bool { return fr.inRaft() == 1 })
	if waited := time.Since(start); waited < DefaultLinger {
		t.Fatalf("went after %s, before DefaultLinger", waited)
	}
	fr.commit(nil)
	if err := alone.Error(); err != nil {
		t.Fatal(err)
	}
}

// When a round ends with only lazy proposals queued, they keep waiting
// for a companion instead of forming a round of their own.
func TestRounds_LazyOnlyQueueWaitsForACompanion(t *testing.T) {
	r, fr := newTestRounds()
	r.wait = time.Hour // the companion comes first; the timer is stopped then
	r.Propose([]byte("a"), false)
	lazy := r.Propose([]byte("lazy"), true)
	fr.commit(nil)
	poll.Until(t, 5*time.Second, "the round to end", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.inflight == 0
	})
	if got := fr.inRaft(); got != 0 {
		t.Fatalf("%d in raft: the lazy proposal formed a round of its own", got)
	}
	eager := r.Propose([]byte("b"), false)
	if got := fmt.Sprint(fr.log()); got != "[a lazy b]" {
		t.Fatalf("raft got %s", got)
	}
	if got := fr.inRaft(); got != 2 {
		t.Fatalf("%d in raft, want lazy and b in one round", got)
	}
	fr.commit(nil)
	if lazy.Error() != nil || eager.Error() != nil {
		t.Fatal("not answered")
	}
}

// Many goroutines proposing at once: everything is answered, and each
// goroutine's proposals enter raft in the order it made them.
func TestRounds_ConcurrentProposersKeepTheirOrder(t *testing.T) {
	r, fr := newTestRounds()
	stop := make(chan struct{})
	var committer sync.WaitGroup
	committer.Add(1)
	go func() {
		defer committer.Done()
		for {
			select {
			case <-stop:
				fr.commit(nil)
				return
			default:
				fr.commit(nil)
				time.Sleep(100 * time.Microsecond) // a commit takes a while
			}
		}
	}()
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				f := r.Propose([]byte(fmt.Sprintf("%d/%03d", w, i)), i%3 == 0)
				if err := f.Error(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	committer.Wait()
	last := map[string]string{}
	for _, d := range fr.log() {
		w := d[:1]
		if d <= last[w] {
			t.Fatalf("%s entered raft after %s", d, last[w])
		}
		last[w] = d
	}
	if got := len(fr.log()); got != workers*each {
		t.Fatalf("%d applied, want %d", got, workers*each)
	}
}

// A round raft does not answer for a long time gives up its slot, so
// later proposals still go in; the stalled one is answered when raft
// answers it.
func TestRounds_StalledRoundDoesNotHoldUpTheNext(t *testing.T) {
	r, fr := newTestRounds()
	r.stall = 50 * time.Millisecond
	stuck := r.Propose([]byte("stuck"), false)
	next := r.Propose([]byte("next"), false)
	poll.Until(t, 5*time.Second, "the next round despite the stall", func() bool { return len(fr.log()) == 2 })
	if got := fmt.Sprint(fr.log()); got != "[stuck next]" {
		t.Fatalf("raft got %s", got)
	}
	fr.commit(nil)
	if stuck.Error() != nil || next.Error() != nil {
		t.Fatal("not answered")
	}
	// The slot count is right again: a new proposal goes straight in.
	poll.Until(t, 5*time.Second, "no round in flight", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.inflight == 0
	})
	r.Propose([]byte("after"), false)
	if got := fr.inRaft(); got != 1 {
		t.Fatalf("%d in raft, want the new proposal at once", got)
	}
	fr.commit(nil)
}
