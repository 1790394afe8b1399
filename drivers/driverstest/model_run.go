package driverstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Target is what RunModel drives: a driver with Extend and Inspect.
type Target interface {
	Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error)
	Capabilities() drivers.Capabilities
	Release(ctx context.Context, key, owner string) (bool, error)
	Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)
	ForceRelease(ctx context.Context, key string) error
	Inspect(ctx context.Context, key string) (drivers.Holding, bool, error)
}

// Proc is one process of a backend as RunModel sees it: a handle, and how
// to kill the process (nil for a handle in this process, never killed).
type Proc struct {
	Driver Target
	Kill   func()
	Name   string
}

// ModelOptions tunes RunModel; zero fields take the defaults named.
type ModelOptions struct {
	// Steps per schedule; 40.
	Steps int
	// Owners per process; 2.
	Owners int
	// Lapse is the TTL a grant is extended to when a step lets it lapse;
	// 150ms.
	Lapse time.Duration
	// PlaceLapse is how long a killed process's places in queues outlive
	// it (the backend's waiter lease). A killed process's grants are
	// extended beforehand to PlaceLapse plus a margin, so that its places
	// are gone before its grants end, as the model has it.
	PlaceLapse time.Duration
	// Within bounds how long a change the model expects may take to show;
	// 20s, and at least PlaceLapse + 10s when processes may be killed.
	Within time.Duration
	// MaxHold is the cap on total hold time of the grant a hold-cap step
	// makes and refreshes past it (backends that declare
	// Capabilities.MaxHold); 1s. Every call of the step but the first
	// must answer within it.
	MaxHold time.Duration
	// Seed of the schedules; 0 takes ZEROTAL_MODEL_SEED, else the clock.
	// It is printed, and a failure names it.
	Seed uint64
}

func (o ModelOptions) withDefaults() ModelOptions {
	if o.Steps <= 0 {
		o.Steps = 40
	}
	if o.Owners <= 0 {
		o.Owners = 2
	}
	if o.Lapse <= 0 {
		o.Lapse = 150 * time.Millisecond
	}
	if o.Within <= 0 {
		o.Within = 20 * time.Second
	}
	if o.MaxHold <= 0 {
		o.MaxHold = time.Second
	}
	if o.PlaceLapse > 0 {
		o.Within = max(o.Within, o.PlaceLapse+10*time.Second)
	}
	if o.Seed == 0 {
		o.Seed, _ = strconv.ParseUint(os.Getenv("ZEROTAL_MODEL_SEED"), 10, 64)
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o
}

// long is the TTL of every grant a schedule makes: no grant lapses but
// those a step lets lapse.
const long = 10 * time.Minute

// A family is the claims of one schedule: its keys are all of one kind.
type family struct {
	name  string
	claim func(rng *rand.Rand) drivers.Claim
	other drivers.Claim // a claim the family's keys refuse
	sets  bool
	needs func(drivers.Capabilities) bool
}

var families = []family{
	{name: "Mutex", claim: func(*rand.Rand) drivers.Claim { return drivers.Claim{} },
		other: drivers.Claim{Kind: drivers.Semaphore, Limit: 2}, needs: func(drivers.Capabilities) bool { return true }},
	{name: "Semaphore", claim: func(*rand.Rand) drivers.Claim { return drivers.Claim{Kind: drivers.Semaphore, Limit: 2} },
		other: drivers.Claim{Kind: drivers.Semaphore, Limit: 3}, needs: func(c drivers.Capabilities) bool { return c.Shared }},
	{name: "RWLock", claim: func(rng *rand.Rand) drivers.Claim {
		return drivers.Claim{Kind: drivers.RWLock, Write: rng.IntN(3) == 0}
	},
		other: drivers.Claim{}, needs: func(c drivers.Capabilities) bool { return c.Shared }},
	{name: "Sets", claim: func(*rand.Rand) drivers.Claim { return drivers.Claim{} }, sets: true,
		other: drivers.Claim{Kind: drivers.RWLock}, needs: func(c drivers.Capabilities) bool { return c.Sets }},
}

// RunModel drives a backend with random schedules and compares every
// answer with the Model: each acquire's grant or refusal (and the key in
// the way), each release and extend, every wait's end (granted, with its
// fences, or not), and after every step each key's holders, sides,
// fences, claim and queue as Inspect reports them, polled until they
// match or Within passes. Fences must strictly increase per key and stay
// the same across a refresh. Schedules mix tries, waits, releases,
// refreshes, force releases, ends of waits, lapses at the TTL, a release
// racing the end of the wait it would hand the key to, for processes
// that can be killed a SIGKILL mid-wait, and for a backend that declares
// Capabilities.MaxHold acquires with a cap on total hold time and a
// refresh loop that runs into one.
//
// It runs one schedule per family of claims the backend declares
// (Capabilities): mutexes, a semaphore of 2, read/write locks and sets of
// mutexes, each as a subtest over the processes open returns (2 or more
// handles on one backend; every run uses keys of its own).
func RunModel(t *testing.T, open func(t *testing.T) []Proc, opt ModelOptions) {
	t.Helper()
	opt = opt.withDefaults()
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			procs := open(t)
			if !f.needs(procs[0].Driver.Capabilities()) {
				t.Skipf("the backend does not declare %s", f.name)
			}
			runSchedule(t, procs, f, opt)
		})
	}
}

// tb is what a schedule needs of its test.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// runSchedule runs one seeded schedule of family f over procs.
func runSchedule(t tb, procs []Proc, f family, opt ModelOptions) {
	t.Helper()
	seed := opt.Seed
	t.Logf("model schedule %s: seed %d (ZEROTAL_MODEL_SEED=%d repeats it)", f.name, seed, seed)
	r := &modelRun{
		t: t, f: f, opt: opt, seed: seed, rng: rand.New(rand.NewPCG(seed, 33)), procs: procs,
		alive: make([]bool, len(procs)), m: NewModel(), start: time.Now(),
		fences: map[uint64]uint64{}, top: map[string]uint64{}, caps: procs[0].Driver.Capabilities(),
	}
	tok := token()[:8]
	nkeys := 3
	if f.sets {
		nkeys = 4
	}
	for i := range nkeys {
		r.keys = append(r.keys, fmt.Sprintf("model/%s/k%d", tok, i))
	}
	for p := range procs {
		r.alive[p] = true
		for o := range opt.Owners {
			r.actors = append(r.actors, &actor{owner: fmt.Sprintf("p%do%d-%s", p, o, tok), proc: p})
		}
	}
	for r.step = 1; r.step <= opt.Steps; r.step++ {
		r.advance()
		r.next()
		r.settle()
	}
	for _, a := range r.actors {
		if a.wait != nil {
			r.note("%s's wait ends (the schedule is over)", a.owner)
			r.cancel(a)
			r.settle()
		}
	}
}
