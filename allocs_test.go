//go:build !race

// The race detector's sync.Pool drops a quarter of what it is given, so
// allocations are counted without it: go test -count=1 -run Allocs .

package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
)

// A free key's cycle through the Manager on the memory driver allocates
// what the call's own state needs and nothing per request: the key and the
// room for its fence are the handle's, the engine's grant is on the
// driver's stack. Try and Block: the call (handle and watch), the key with
// its prefix, the owner token, fn's context and its cancel function; Make,
// Block and Release: the handle, the key and the owner token.
//
// A driver without InstantAcquire waits in the driver at once: the
// wait's timeout costs its context (four) and the wait's Done channel
// (one), and the wait's registration for Close nothing more (it is the
// handle's own).
func TestManager_FreeKeyCycleAllocations(t *testing.T) {
	m := lock.New(openMemory(t))
	defer m.Close()
	waiting := lock.New(waitingMemory{openMemory(t)})
	defer waiting.Close()
	ctx := context.Background()
	fn := func(context.Context, *lock.Lock) error { return nil }
	for _, c := range []struct {
		name  string
		most  float64
		cycle func() error
	}{
		{"Try", 5, func() error { return m.Try(ctx, "k", time.Minute, fn) }},
		{"Block", 5, func() error { return m.Block(ctx, "k", time.Minute, fn) }},
		{"Block on a driver that waits, not instant", 10, func() error { return waiting.Block(ctx, "k", time.Minute, fn) }},
		{"Make+Block+Release", 3, func() error {
			l := m.Make("k", time.Minute)
			if err := l.Block(ctx, 0); err != nil {
				return err
			}
			return l.Release(ctx)
		}},
	} {
		var err error
		got := testing.AllocsPerRun(200, func() {
			if e := c.cycle(); e != nil {
				err = e
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got > c.most {
			t.Errorf("%s of a free key: %.1f allocations a cycle, want at most %.0f", c.name, got, c.most)
		}
	}
}

// waitingMemory is the memory driver declaring Wait without
// InstantAcquire, as a driver over a network does.
type waitingMemory struct{ *memory.Driver }

func (waitingMemory) Capabilities() drivers.Capabilities { return drivers.Capabilities{Wait: true} }
