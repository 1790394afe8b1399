package memory_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

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

func TestConformance(t *testing.T) {
	driverstest.Run(t, func(t *testing.T) driverstest.Harness {
		e, err := engine.New(engine.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return harness{e: e}
	})
}

func TestOwningDriverClosesItsEngine(t *testing.T) {
	d, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Engine().Acquire(t.Context(), "k", "o", 1e9); err == nil {
		t.Fatal("engine still answers after the owning driver closed it")
	}
}

func TestConfigRejectsNegativeLimits(t *testing.T) {
	if _, err := memory.New(memory.Config{MaxKeys: -1}); err == nil {
		t.Fatal("MaxKeys -1 accepted")
	}
}
