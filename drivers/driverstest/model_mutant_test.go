package driverstest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// modelBackend is a backend built on the Model and the wall clock. Its
// handles (modelDriver) pass RunModel; each with one rule broken (mut)
// must fail it, which shows that the schedules reach every rule.
type modelBackend struct {
	mu      sync.Mutex
	m       *Model
	start   time.Time
	ended   map[string]Done // waits the model ended, by owner
	changed chan struct{}   // closed and replaced at every change
	closed  chan struct{}
}

type modelDriver struct {
	b   *modelBackend
	mut string
}

func newModelBackend() *modelBackend {
	return &modelBackend{m: NewModel(), start: time.Now(), ended: map[string]Done{}, changed: make(chan struct{}), closed: make(chan struct{})}
}

// apply records what a step ended and wakes the waits; b.mu is held.
func (b *modelBackend) apply(o Outcome) Outcome {
	for _, d := range o.Done {
		b.ended[d.Owner] = d
	}
	close(b.changed)
	b.changed = make(chan struct{})
	return o
}

func (b *modelBackend) tick() { b.apply(b.m.Advance(time.Since(b.start))) }

func (d *modelDriver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true}
}

func (d *modelDriver) Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error) {
	b := d.b
	b.mu.Lock()
	b.tick()
	o := b.apply(d.acquire(r))
	b.mu.Unlock()
	if o.Err != nil || !o.Queued {
		return o.Grant, o.Err
	}
	for {
		b.mu.Lock()
		b.tick()
		if e, ok := b.ended[r.Owner]; ok {
			delete(b.ended, r.Owner)
			b.mu.Unlock()
			return drivers.Grant{Acquired: e.Err == nil, Fences: e.Fences}, e.Err
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-time.After(2 * time.Millisecond): // lapses come by the clock
		case <-b.closed:
			return drivers.Grant{}, drivers.ErrClosed
		case <-ctx.Done():
			b.mu.Lock()
			if e, ok := b.ended[r.Owner]; ok { // granted as ctx ended: let go
				delete(b.ended, r.Owner)
				for i, k := range r.Keys {
					if e.Err == nil && len(e.Fences) > i {
						b.apply(b.m.Release(k, r.Owner))
					}
				}
			} else if d.mut != "place" {
				b.apply(b.m.Cancel(r.Owner))
			}
			b.mu.Unlock()
			return drivers.Grant{}, ctx.Err()
		}
	}
}

// acquire is the model's Acquire, or its mutation; b.mu is held.
func (d *modelDriver) acquire(r drivers.Request) Outcome {
	m := d.b.m
	switch {
	case d.mut == "readers" && r.Claim.Kind == drivers.RWLock && !r.Claim.Write:
		// A waiting writer does not stop new readers: the queue is not
		// looked at.
		saved := map[string][]*modelWait{}
		for _, k := range r.Keys {
			if mk := m.keys[k]; mk != nil {
				saved[k], mk.queue = mk.queue, nil
			}
		}
		o := m.Acquire(r)
		for k, q := range saved {
			if mk := m.keys[k]; mk != nil {
				mk.queue = append(mk.queue, q...)
			}
		}
		return o
	case d.mut == "limit" && r.Claim.Kind == drivers.Semaphore:
		r.Claim.Limit++
	case d.mut == "fence" && len(r.Keys) == 1 && m.keys[r.Key()] != nil && m.keys[r.Key()].holder(r.Owner) >= 0:
		o := m.Acquire(r)
		if o.Grant.Acquired {
			o.Grant.Fences[0]++ // a refresh's fence: new
		}
		return o
	case d.mut == "partial" && len(r.Keys) > 1 && !r.Wait:
		o := m.Acquire(r)
		if !o.Grant.Acquired && o.Err == nil {
			for _, k := range r.Keys { // the free keys are taken all the same
				one := r
				one.Keys = []string{k}
				m.Acquire(one)
			}
		}
		return o
	}
	return m.Acquire(r)
}

func (d *modelDriver) Release(_ context.Context, key, owner string) (bool, error) {
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick()
	if mk := b.m.keys[key]; d.mut == "lifo" && mk != nil {
		slices.Reverse(mk.queue) // the last come is served first
		defer func() {
			if mk := b.m.keys[key]; mk != nil {
				slices.Reverse(mk.queue)
			}
		}()
	}
	return b.apply(b.m.Release(key, owner)).OK, nil
}

func (d *modelDriver) Extend(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick()
	if d.mut == "lapse" && ttl < time.Second {
		ttl = long // a grant outlives its TTL
	}
	return b.apply(b.m.Extend(key, owner, ttl)).OK, nil
}

func (d *modelDriver) ForceRelease(_ context.Context, key string) error {
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick()
	b.apply(b.m.ForceRelease(key))
	return nil
}

func (d *modelDriver) Inspect(_ context.Context, key string) (drivers.Holding, bool, error) {
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick()
	h, ok := b.m.Holding(key)
	if d.mut == "limit" && h.Claim.Kind == drivers.Semaphore {
		h.Claim.Limit-- // says the limit it was asked for
	}
	return h, ok, nil
}

func modelProcs(b *modelBackend, mut string, n int) []Proc {
	procs := make([]Proc, n)
	for i := range procs {
		procs[i] = Proc{Driver: &modelDriver{b: b, mut: mut}, Name: fmt.Sprint("handle ", i)}
	}
	return procs
}

// TestModel_BackendOnTheModelConforms runs RunModel against the model
// itself on the wall clock: the runner's own check.
func TestModel_BackendOnTheModelConforms(t *testing.T) {
	b := newModelBackend()
	t.Cleanup(func() { close(b.closed) })
	RunModel(t, func(t *testing.T) []Proc { return modelProcs(b, "", 3) }, ModelOptions{Steps: 60})
}

// recorder is a test that records the first failure and ends the
// schedule's goroutine, as Fatalf does.
type recorder struct{ msg string }

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestModel_CatchesEachBrokenRule breaks one rule at a time in a backend
// built on the model and checks that a schedule fails on it, printing the
// failure.
func TestModel_CatchesEachBrokenRule(t *testing.T) {
	tests := []struct{ mut, family string }{
		{"lifo", "Mutex"},      // first come, first served: the head of the queue is let in
		{"lifo", "Sets"},       // the same for sets
		{"readers", "RWLock"},  // a waiting writer stops new readers
		{"limit", "Semaphore"}, // a semaphore of 2 has 2 holders at most
		{"partial", "Sets"},    // a set is taken all or none
		{"place", "Mutex"},     // a wait that ended leaves its place
		{"fence", "Mutex"},     // a refresh keeps its fence
		{"lapse", "Semaphore"}, // a grant ends at its TTL
	}
	for _, tc := range tests {
		t.Run(tc.mut+"/"+tc.family, func(t *testing.T) {
			f := families[slices.IndexFunc(families, func(f family) bool { return f.name == tc.family })]
			for seed := uint64(1); seed <= 20; seed++ {
				b := newModelBackend()
				rec := &recorder{}
				done := make(chan struct{})
				go func() {
					defer close(done)
					runSchedule(rec, modelProcs(b, tc.mut, 3), f, ModelOptions{Steps: 80, Seed: seed, Within: 2 * time.Second, Lapse: 20 * time.Millisecond}.withDefaults())
				}()
				<-done
				close(b.closed)
				if rec.msg != "" {
					t.Logf("seed %d: %s", seed, firstLine(rec.msg))
					return
				}
			}
			t.Fatalf("no schedule of 20 caught the broken rule %q", tc.mut)
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
