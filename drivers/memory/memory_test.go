package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness shares one engine between every handle, as the components of one
// program share one in-process lock table.
type harness struct{ e *engine.Engine }

func (h harness) NewDriver(context.Context) (drivers.Driver, error) { return memory.Wrap(h.e), nil }

func newHarness(t *testing.T) driverstest.Harness {
	e, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return harness{e: e}
}

// newDriver opens a memory driver of cfg, closed when tb ends.
func newDriver(tb testing.TB, cfg memory.Config) *memory.Driver {
	tb.Helper()
	d, err := memory.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}

func TestConformance(t *testing.T) { driverstest.Run(t, newHarness) }

func TestConformance_Shared(t *testing.T) { driverstest.RunShared(t, newHarness) }

func TestOwningDriverClosesItsEngine(t *testing.T) {
	d, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Engine().Acquire(t.Context(), engine.AcquireRequest{Keys: []string{"k"}, Owner: "o", TTL: 1e9}, nil); err == nil {
		t.Fatal("engine still answers after the owning driver closed it")
	}
}

func TestConfigLimits(t *testing.T) {
	if _, err := memory.New(memory.Config{MaxKeys: -2}); err == nil {
		t.Fatal("MaxKeys -2 accepted")
	}
	if _, err := memory.New(memory.Config{MaxWaitersPerKey: -2}); err == nil {
		t.Fatal("MaxWaitersPerKey -2 accepted")
	}
	d, err := memory.New(memory.Config{MaxKeys: drivers.Unlimited, MaxWaitersPerKey: drivers.Unlimited})
	if err != nil {
		t.Fatalf("drivers.Unlimited refused: %v", err)
	}
	defer d.Close()
	for i := range 100 {
		if g, _, err := d.Engine().Acquire(t.Context(), engine.AcquireRequest{Keys: []string{fmt.Sprint("k", i)}, Owner: "o", TTL: 1e9}, nil); err != nil || g == nil {
			t.Fatalf("acquire %d with no key cap: grants=%v err=%v", i, g, err)
		}
	}
}

// BenchmarkShared: semaphore and read-lock cycles beside the mutex's
// (manager.BenchShared), on the in-process engine.
func BenchmarkShared(b *testing.B) {
	d := newDriver(b, memory.Config{})
	manager.BenchShared(b, d, time.Second)
}
