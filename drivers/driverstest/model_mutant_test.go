package driverstest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// modelDriver is a handle on the reference's backend, the Model on the
// wall clock, that serves every request: it passes RunModel; with one rule
// broken (mut) it must fail it, which shows that the schedules reach
// every rule.
type modelDriver struct {
	b      *refBackend
	mut    string
	closed <-chan struct{}
}

func (d *modelDriver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Shared: true, Sets: true, SetWait: true, MaxHold: true}
}

func (d *modelDriver) Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error) {
	leave := (*Model).Cancel
	if d.mut == "place" {
		leave = func(*Model, string) Outcome { return Outcome{} } // a wait that ended keeps its place
	}
	return d.b.acquire(ctx, r, d.acquire, leave, d.closed)
}

// acquire is the model's Acquire, or its mutation.
func (d *modelDriver) acquire(m *Model, r drivers.Request) Outcome {
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
	return d.b.do(func(m *Model) Outcome {
		if mk := m.keys[key]; d.mut == "lifo" && mk != nil {
			slices.Reverse(mk.queue) // the last come is served first
			defer func() {
				if mk := m.keys[key]; mk != nil {
					slices.Reverse(mk.queue)
				}
			}()
		}
		return m.Release(key, owner)
	}).OK, nil
}

func (d *modelDriver) Extend(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if d.mut == "lapse" && ttl < time.Second {
		ttl = long // a grant outlives its TTL
	}
	return d.b.do(func(m *Model) Outcome {
		if mk := m.keys[key]; d.mut == "cap" && mk != nil && mk.holder(owner) >= 0 {
			mk.holders[mk.holder(owner)].cap = forever // a refresh goes past the cap
		}
		return m.Extend(key, owner, ttl)
	}).OK, nil
}

func (d *modelDriver) ForceRelease(_ context.Context, key string) error {
	d.b.do(func(m *Model) Outcome { return m.ForceRelease(key) })
	return nil
}

func (d *modelDriver) Inspect(_ context.Context, key string) (h drivers.Holding, ok bool, _ error) {
	d.b.read(func(m *Model) { h, ok = m.Holding(key) })
	if d.mut == "limit" && h.Claim.Kind == drivers.Semaphore {
		h.Claim.Limit-- // says the limit it was asked for
	}
	return h, ok, nil
}

// modelProcs are n handles of mutation mut on b, whose waits end with
// drivers.ErrClosed once closed is closed.
func modelProcs(b *refBackend, mut string, n int, closed <-chan struct{}) []Proc {
	procs := make([]Proc, n)
	for i := range procs {
		procs[i] = Proc{Driver: &modelDriver{b: b, mut: mut, closed: closed}, Name: fmt.Sprint("handle ", i)}
	}
	return procs
}

// TestModel_BackendOnTheModelConforms runs RunModel against the model
// itself on the wall clock: the runner's own check.
func TestModel_BackendOnTheModelConforms(t *testing.T) {
	b, closed := NewReference().b, make(chan struct{})
	t.Cleanup(func() { close(closed) })
	RunModel(t, func(t *testing.T) []Proc { return modelProcs(b, "", 3, closed) }, ModelOptions{Steps: 60})
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
		{"cap", "Mutex"},       // a refresh never goes past the cap
	}
	for _, tc := range tests {
		t.Run(tc.mut+"/"+tc.family, func(t *testing.T) {
			f := families[slices.IndexFunc(families, func(f family) bool { return f.name == tc.family })]
			for seed := uint64(1); seed <= 20; seed++ {
				closed := make(chan struct{})
				rec := &recorder{}
				done := make(chan struct{})
				go func() {
					defer close(done)
					runSchedule(rec, modelProcs(NewReference().b, tc.mut, 3, closed), f, ModelOptions{Steps: 80, Seed: seed, Within: 2 * time.Second, Lapse: 20 * time.Millisecond, MaxHold: 200 * time.Millisecond}.withDefaults())
				}()
				<-done
				close(closed)
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
