package election_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/election"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// onBackends runs check on each of the four backends (see
// realbackends.Each), on memory alone with -short.
func onBackends(t *testing.T, check func(t *testing.T, name string, m *lock.Manager)) {
	all := realbackends.All()
	if testing.Short() {
		all = all[:1]
	}
	realbackends.Each(t, all, check)
}

// mustCampaign has value stand in e until it leads, or fails the test.
func mustCampaign(t *testing.T, e *election.Election, value string) *election.Leadership {
	t.Helper()
	l, err := e.Campaign(t.Context(), value)
	if err != nil {
		t.Fatalf("Campaign %s: %v", value, err)
	}
	return l
}

// leadsAfter has value lead e in a term above prev's, and resign.
func leadsAfter(t *testing.T, e *election.Election, value string, prev *election.Leadership) {
	t.Helper()
	l := mustCampaign(t, e, value)
	if l.Term() <= prev.Term() {
		t.Fatalf("term %d after %d", l.Term(), prev.Term())
	}
	_ = l.Resign(t.Context())
}

func mustNew(t *testing.T, m *lock.Manager, name string, ttl time.Duration) *election.Election {
	t.Helper()
	e, err := election.New(m, name, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A campaign leads with its value and term, the next candidate waits and
// takes over as soon as the leader resigns, with a higher term; nobody
// leads after the last resigns.
func TestElection_LeaderValueTermAndHandOver(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		e := mustNew(t, m, "svc", 10*time.Second)
		if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
			t.Fatalf("Leader before any campaign = %v; want ErrNoLeader", err)
		}
		a, err := e.Campaign(t.Context(), "a.example:8080")
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Leader(t.Context())
		if err != nil || got.Value != "a.example:8080" || got.Term != a.Term() || got.Term == 0 || got.Remaining <= 0 {
			t.Fatalf("Leader = %+v, %v; want value a.example:8080, term %d, time left", got, err, a.Term())
		}

		second := make(chan *election.Leadership, 1)
		errs := make(chan error, 1)
		go func() {
			l, err := e.Campaign(t.Context(), "b")
			if err != nil {
				errs <- err
				return
			}
			second <- l
		}()
		select {
		case <-second:
			t.Fatal("a second candidate leads while the first does")
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(200 * time.Millisecond):
		}
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a.Context().Err() == nil || !errors.Is(context.Cause(a.Context()), election.ErrResigned) {
			t.Fatalf("after Resign the leadership's context: %v; want cancelled with ErrResigned", context.Cause(a.Context()))
		}
		var b2 *election.Leadership
		select {
		case b2 = <-second:
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting candidate did not lead within 5s of the resignation")
		}
		if b2.Term() <= a.Term() {
			t.Fatalf("term %d after term %d; want it higher", b2.Term(), a.Term())
		}
		if got, err := e.Leader(t.Context()); err != nil || got.Value != "b" || got.Term != b2.Term() {
			t.Fatalf("Leader = %+v, %v; want b at term %d", got, err, b2.Term())
		}
		if err := b2.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
			t.Fatalf("Leader after the last resigned = %v; want ErrNoLeader", err)
		}
	})
}

// Candidates that campaign, lead and resign over and over never lead two
// at once, and every term is higher than the one before it.
func TestElection_NeverTwoLeaders(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		e := mustNew(t, m, "one", 10*time.Second)
		const candidates, rounds = 4, 6
		var leading atomic.Int32
		var mu sync.Mutex
		var terms []uint64
		var wg sync.WaitGroup
		errs := make(chan error, candidates)
		for c := range candidates {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range rounds {
					ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
					l, err := e.Campaign(ctx, string(rune('a'+c)))
					cancel()
					if err != nil {
						errs <- err
						return
					}
					if n := leading.Add(1); n != 1 {
						errs <- errors.New("two leaders at once")
					}
					mu.Lock()
					terms = append(terms, l.Term())
					mu.Unlock()
					leading.Add(-1) // before Resign: the context ends before the release
					if err := l.Resign(t.Context()); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(terms) != candidates*rounds {
			t.Fatalf("%d leaderships; want %d", len(terms), candidates*rounds)
		}
		for i := 1; i < len(terms); i++ {
			if terms[i] <= terms[i-1] {
				t.Fatalf("term %d came after term %d: terms must grow (%v)", terms[i], terms[i-1], terms)
			}
		}
	})
}

// A candidate whose ctx ends while it waits gets no Leadership, so it
// never acts as leader; a lease handed to it as it gave up is released at
// once, and the next leader is a later candidate.
func TestElection_AbandonedCampaignNeverLeads(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		e := mustNew(t, m, "abandon", 10*time.Second)
		a := mustCampaign(t, e, "a")
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		_, err := e.Campaign(ctx, "gone")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a campaign past its deadline = %v; want context.DeadlineExceeded", err)
		}
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		// The abandoned wait may still be queued at the backend when
		// the leader resigns (its cancel is on its way), and be handed
		// the key: no Leadership exists for it, so nothing acts as its
		// leader, and the grant is released in the background, well
		// before its lease (10s) would end.
		start := time.Now()
		poll.Until(t, 5*time.Second, "the abandoned candidate's stray grant to be released", func() bool {
			_, err := e.Leader(t.Context())
			return errors.Is(err, election.ErrNoLeader)
		})
		t.Logf("no leader %v after the resignation", time.Since(start).Round(time.Millisecond))
		leadsAfter(t, e, "c", a)
	})
}

// A leader whose lease is taken from it (here: force-released, so its
// refresh fails) is told through its context before the lease could have
// run out, and can stand again without anything restarting.
func TestElection_LostLeaseEndsTheContextAndCandidateStandsAgain(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		const ttl = 900 * time.Millisecond
		e := mustNew(t, m, "lease", ttl)
		a := mustCampaign(t, e, "a")
		took := time.Now()
		if err := m.Make("lease", ttl).ForceRelease(t.Context()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the leader was not told it lost its lease")
		}
		if d := time.Since(took); d > ttl {
			t.Errorf("told %v after the lease was taken; want within its ttl %v", d, ttl)
		}
		if _, ok := errors.AsType[*lock.LostError](context.Cause(a.Context())); !ok {
			t.Errorf("cause %v; want a *lock.LostError", context.Cause(a.Context()))
		}
		<-a.Done()
		leadsAfter(t, e, "a", a)
	})
}

// Observe reports the leader when it starts, each new term, and the
// moment nobody leads.
func TestElection_ObserveReportsEachChange(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		e := mustNew(t, m, "watched", 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		changes := e.Observe(ctx, 10*time.Millisecond)
		next := func(what string) election.Change {
			t.Helper()
			select {
			case c := <-changes:
				return c
			case <-time.After(5 * time.Second):
				t.Fatalf("no change seen: want %s", what)
				return election.Change{}
			}
		}
		if c := next("no leader"); c.Leading {
			t.Fatalf("first change %+v; want no leader", c)
		}
		a := mustCampaign(t, e, "a")
		if c := next("a"); !c.Leading || c.Leader.Value != "a" || c.Leader.Term != a.Term() {
			t.Fatalf("change %+v; want a at term %d", c, a.Term())
		}
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if c := next("no leader"); c.Leading {
			t.Fatalf("change %+v; want no leader", c)
		}
		cancel()
		for range changes {
		}
	})
}

// Bad input gets a clear error and changes nothing.
func TestElection_RefusesBadInput(t *testing.T) {
	m := realbackends.Open(t, lock.Config{})
	if _, err := election.New(m, "", 0); err == nil {
		t.Error("New with an empty name: no error")
	}
	if _, err := election.New(m, "x", -time.Second); err == nil {
		t.Error("New with a negative ttl: no error")
	}
	e := mustNew(t, m, "x", 0)
	for _, v := range []string{string(make([]byte, election.MaxValueLen+1)), "\xff"} {
		if _, err := e.Campaign(t.Context(), v); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("Campaign with a %d-byte value: %v; want ErrInvalid", len(v), err)
		}
	}
	if _, err := e.Leader(t.Context()); !errors.Is(err, election.ErrNoLeader) {
		t.Errorf("Leader after refused campaigns: %v; want ErrNoLeader", err)
	}
	// The name taken as a plain lock by an owner of its own: Leader says
	// so rather than invent a leader. (One the Manager names reads as a
	// leader whose value is its holder: the same place in the owner.)
	err := m.Try(t.Context(), "x", time.Minute, func(context.Context, *lock.Lock) error {
		if _, err := e.Leader(t.Context()); err == nil || errors.Is(err, election.ErrNoLeader) {
			t.Errorf("Leader of a name held as a lock by job-7: %v; want an error saying so", err)
		}
		return nil
	}, lock.WithOwner("job-7"))
	if err != nil {
		t.Fatal(err)
	}
	held := m.Make("x", time.Minute)
	if ok, err := held.Acquire(t.Context()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if l, err := e.Leader(t.Context()); err != nil || l.Value == "" || l.Term != held.Fence() {
		t.Errorf("Leader of a name held by a Manager's lock: %+v, %v; want its holder as the value", l, err)
	}
	_ = held.Release(t.Context())
}

// Where the backend tells of changes, Observe sees them when they
// happen, not at its next tick: with the tick an hour away, a resignation
// is still reported at once (memory, SQLite and Redis tell of a
// release), and so is a new leader where the backend tells of grants too
// (memory, SQLite). (Without the push this test waits for the hour and
// fails.)
func TestElection_ObserveIsPushedWhereTheBackendTells(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		if _, ok := m.Driver().(drivers.ChangeWatcher); !ok {
			t.Skipf("%s does not tell of changes: Observe reads on its timer", name)
		}
		grantsPushed := name != "redis"
		e := mustNew(t, m, "pushed", 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		next := func(changes <-chan election.Change, what string) election.Change {
			t.Helper()
			select {
			case c := <-changes:
				return c
			case <-time.After(2 * time.Second):
				// Well before the leader's first refresh (at a third of
				// its 10 s lease), which would wake a missed watch.
				t.Fatalf("no change seen within 2s, the tick an hour away: want %s", what)
				return election.Change{}
			}
		}
		var changes <-chan election.Change
		if grantsPushed {
			changes = e.Observe(ctx, time.Hour)
			if c := next(changes, "no leader"); c.Leading {
				t.Fatalf("first change %+v; want no leader", c)
			}
		}
		a := mustCampaign(t, e, "a")
		if !grantsPushed {
			changes = e.Observe(ctx, time.Hour)
		}
		if c := next(changes, "a"); !c.Leading || c.Leader.Value != "a" {
			t.Fatalf("change %+v; want a", c)
		}
		if err := a.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if c := next(changes, "no leader"); c.Leading {
			t.Fatalf("change %+v; want no leader", c)
		}
		cancel()
		for range changes {
		}
	})
}
