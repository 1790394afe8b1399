package driverstest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refHarness opens handles on one Reference backend.
type refHarness struct{ r *driverstest.Reference }

func (h refHarness) NewDriver(context.Context) (drivers.Driver, error) { return h.r.Handle(), nil }

// The reference passes the suite, which shows that the suite passes a
// correct driver.
func TestReferenceDriverPassesSuite(t *testing.T) {
	r := driverstest.NewReference()
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return refHarness{r: r} })
}

// faultyHarness opens handles on one Reference backend, each behind
// Faulty with no fault set.
type faultyHarness struct{ r *driverstest.Reference }

func (h faultyHarness) NewDriver(context.Context) (drivers.Driver, error) {
	d, _ := driverstest.Faulty(h.r.Handle())
	return d, nil
}

// With no fault set, Faulty changes nothing: the suite passes through it.
func TestFaultyWithoutFaultsPassesSuite(t *testing.T) {
	r := driverstest.NewReference()
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return faultyHarness{r: r} })
}

// plain hides the optional capabilities of a driver.
type plain struct{ drivers.Driver }

func (plain) Capabilities() drivers.Capabilities { return drivers.Capabilities{} }

func TestFaulty_KeepsTheCapabilitiesOfTheDriver(t *testing.T) {
	full, _ := driverstest.Faulty(driverstest.NewReference())
	if _, ok := full.(drivers.Extender); !ok {
		t.Error("Faulty(Reference) is no Extender")
	}
	if !full.Capabilities().Wait {
		t.Error("Faulty(Reference) does not wait")
	}
	bare, _ := driverstest.Faulty(plain{driverstest.NewReference()})
	if _, ok := bare.(drivers.Extender); ok {
		t.Error("Faulty of a plain driver is an Extender")
	}
	if bare.Capabilities().Wait {
		t.Error("Faulty of a plain driver waits")
	}
}

func TestFaulty_FailLoseDelayAndCount(t *testing.T) {
	ref := driverstest.NewReference()
	d, f := driverstest.Faulty(ref)
	ctx := t.Context()
	errDown := errors.New("down")

	f.Fail(errDown, driverstest.OpAcquire)
	if _, _, err := driverstest.Take(ctx, d, "a", "o", time.Minute); err != errDown {
		t.Fatalf("failing Acquire = %v, want %v", err, errDown)
	}
	if _, _, held := ref.Held("a"); held {
		t.Fatal("a failing Acquire reached the driver")
	}
	if _, err := d.Exists(ctx, "a"); err != nil {
		t.Fatalf("Exists, not chosen to fail: %v", err)
	}
	f.Fail(nil)
	if _, ok, err := driverstest.Take(ctx, d, "a", "o", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire after the failure ended = %v, %v", ok, err)
	}

	f.Lose(errDown, driverstest.OpRelease)
	if _, err := d.Release(ctx, "a", "o"); err != errDown {
		t.Fatalf("Release with its answer lost = %v, want %v", err, errDown)
	}
	if _, _, held := ref.Held("a"); held {
		t.Fatal("a Release whose answer was lost did not take effect")
	}
	f.Lose(nil)

	f.Delay(driverstest.Forever, driverstest.OpExtend)
	hctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err := d.(drivers.Extender).Extend(hctx, "a", "o", time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging Extend = %v, want its context's error", err)
	}
	f.Delay(0)

	// Succeeded: the second Acquire and the lost Release, not the failed
	// Acquire, the Exists of a free key or the hanging Extend.
	if n := f.Succeeded(); n != 2 {
		t.Errorf("Succeeded() = %d, want 2", n)
	}
	if n := f.Succeeded(driverstest.OpRelease); n != 1 {
		t.Errorf("Succeeded(OpRelease) = %d, want 1", n)
	}
	if n := f.Calls(driverstest.OpAcquire); n != 2 {
		t.Errorf("Calls(OpAcquire) = %d, want 2", n)
	}
	if n := f.Calls(); n != 5 {
		t.Errorf("Calls() = %d, want 5", n)
	}
	if keys := f.Keys(); !slices.Equal(keys, []string{"a", "a", "a", "a", "a"}) {
		t.Errorf("Keys() = %q", keys)
	}
}
