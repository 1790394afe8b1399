package driverstest

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Op names a driver method whose calls Faults counts, fails or delays.
type Op string

// The methods of drivers.Driver and drivers.Extender that take a key;
// OpAcquireWait is an Acquire whose Request waits. Close and Capabilities
// are passed on untouched.
const (
	OpAcquire      Op = "Acquire"
	OpRelease      Op = "Release"
	OpForceRelease Op = "ForceRelease"
	OpExists       Op = "Exists"
	OpExtend       Op = "Extend"
	OpAcquireWait  Op = "AcquireWait"
)

// allOps are the ops an empty list stands for.
var allOps = []Op{OpAcquire, OpRelease, OpForceRelease, OpExists, OpExtend, OpAcquireWait}

// Forever is the delay of a call that hangs until its context ends.
const Forever = time.Duration(math.MaxInt64)

// Faults controls the driver Faulty returned with it: it counts the calls
// and the keys asked about, and fails, delays or loses the answer of the
// calls chosen. Its methods are safe for concurrent use, also while calls
// are under way; a call sees the faults set when it starts.
type Faults struct {
	mu    sync.Mutex
	calls map[Op]int64
	oks   map[Op]int64
	keys  []string
	fail  map[Op]error
	lose  map[Op]error
	delay map[Op]time.Duration
}

// Faulty wraps d: every call of a method that takes a key is counted and
// its key recorded, then, in this order, a call whose ctx has ended
// returns ctx.Err(); a delayed call waits (returning ctx.Err() if ctx
// ends first); a failing call returns its error without reaching d; any
// other reaches d, and if its answer is to be lost and d answered without
// an error, it returns the loss's error instead (the call took effect).
//
// The returned driver has d's Capabilities and implements
// drivers.Extender if and only if d does; it implements no other optional
// interface.
func Faulty(d drivers.Driver) (drivers.Driver, *Faults) {
	f := &Faults{calls: map[Op]int64{}, oks: map[Op]int64{}, fail: map[Op]error{}, lose: map[Op]error{}, delay: map[Op]time.Duration{}}
	fd := &faulty{d: d, f: f}
	if _, ext := d.(drivers.Extender); ext {
		return faultyExt{fd}, f
	}
	return fd, f
}

func orAll(ops []Op) []Op {
	if len(ops) == 0 {
		return allOps
	}
	return ops
}

// Fail makes the calls of ops (every op if none) return err without
// reaching the driver; a nil err ends that.
func (f *Faults) Fail(err error, ops ...Op) { f.set(f.fail, err, ops) }

// Lose makes the calls of ops (every op if none) reach the driver and
// then, if the driver answered without an error, return err instead, as
// when an answer is lost on the way back; a nil err ends that.
func (f *Faults) Lose(err error, ops ...Op) { f.set(f.lose, err, ops) }

func (f *Faults) set(m map[Op]error, err error, ops []Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range orAll(ops) {
		if err == nil {
			delete(m, op)
		} else {
			m[op] = err
		}
	}
}

// Delay makes the calls of ops (every op if none) wait d before going on,
// or until their context ends (Forever: hang until then); 0 ends that.
func (f *Faults) Delay(d time.Duration, ops ...Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range orAll(ops) {
		if d <= 0 {
			delete(f.delay, op)
		} else {
			f.delay[op] = d
		}
	}
}

// Calls is the number of calls of ops so far (of every op if none),
// failed ones included.
func (f *Faults) Calls(ops ...Op) int64 { return f.sum(f.calls, ops) }

// Succeeded is the number of calls of ops so far (of every op if none)
// that the driver answered with no error and, where the method reports
// one, a true outcome: granted, released, extended, held. Calls that did
// not reach the driver are not counted; a lost answer is (the call took
// effect).
func (f *Faults) Succeeded(ops ...Op) int64 { return f.sum(f.oks, ops) }

// sum adds up the counts of ops (of every op if none) in counts, one of
// f's maps.
func (f *Faults) sum(counts map[Op]int64, ops []Op) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, op := range orAll(ops) {
		n += counts[op]
	}
	return n
}

// succeeded counts a call of op that the driver answered with success
// when ok and err say so.
func (f *Faults) succeeded(op Op, ok bool, err error) {
	if !ok || err != nil {
		return
	}
	f.mu.Lock()
	f.oks[op]++
	f.mu.Unlock()
}

// Keys are the keys of every call so far, in order.
func (f *Faults) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// begin counts a call of op on key and returns the error it must fail
// with before reaching the driver, if any, and the error its answer is to
// be replaced with.
func (f *Faults) begin(ctx context.Context, op Op, key string) (fail, lose error) {
	f.mu.Lock()
	f.calls[op]++
	f.keys = append(f.keys, key)
	delay, fail, lose := f.delay[op], f.fail[op], f.lose[op]
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err, nil
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err(), nil
		case <-t.C:
		}
	}
	return fail, lose
}

type faulty struct {
	d drivers.Driver
	f *Faults
}

func (w *faulty) Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error) {
	op := OpAcquire
	if r.Wait {
		op = OpAcquireWait
	}
	fail, lose := w.f.begin(ctx, op, strings.Join(r.Keys, ","))
	if fail != nil {
		return drivers.Grant{}, fail
	}
	g, err := w.d.Acquire(ctx, r)
	w.f.succeeded(op, g.Acquired, err)
	if err == nil && lose != nil {
		return drivers.Grant{}, lose
	}
	return g, err
}

func (w *faulty) Capabilities() drivers.Capabilities { return w.d.Capabilities() }

func (w *faulty) Release(ctx context.Context, key, owner string) (bool, error) {
	fail, lose := w.f.begin(ctx, OpRelease, key)
	if fail != nil {
		return false, fail
	}
	ok, err := w.d.Release(ctx, key, owner)
	w.f.succeeded(OpRelease, ok, err)
	if err == nil && lose != nil {
		return false, lose
	}
	return ok, err
}

func (w *faulty) ForceRelease(ctx context.Context, key string) error {
	fail, lose := w.f.begin(ctx, OpForceRelease, key)
	if fail != nil {
		return fail
	}
	err := w.d.ForceRelease(ctx, key)
	w.f.succeeded(OpForceRelease, true, err)
	if err == nil && lose != nil {
		return lose
	}
	return err
}

func (w *faulty) Exists(ctx context.Context, key string) (bool, error) {
	fail, lose := w.f.begin(ctx, OpExists, key)
	if fail != nil {
		return false, fail
	}
	ok, err := w.d.Exists(ctx, key)
	w.f.succeeded(OpExists, ok, err)
	if err == nil && lose != nil {
		return false, lose
	}
	return ok, err
}

func (w *faulty) Close() error { return w.d.Close() }

type faultyExt struct{ *faulty }

func (w faultyExt) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	fail, lose := w.f.begin(ctx, OpExtend, key)
	if fail != nil {
		return false, fail
	}
	ok, err := w.d.(drivers.Extender).Extend(ctx, key, owner, ttl)
	w.f.succeeded(OpExtend, ok, err)
	if err == nil && lose != nil {
		return false, lose
	}
	return ok, err
}

var _ drivers.Extender = faultyExt{}
