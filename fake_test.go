package lock_test

import (
	"context"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// fakeDriver is driverstest's reference driver behind driverstest.Faulty:
// a mutex-and-map driver with fencing, expiry by the wall clock and fault
// injection. It implements only drivers.Driver; fakeExtender and
// fakeWaiter add the optional capabilities.
type fakeDriver struct {
	drivers.Driver // full, its optional capabilities hidden
	ref            *driverstest.Reference
	faults         *driverstest.Faults
	full           drivers.Driver // the faulty reference: Extender and Wait too
}

func newFake() *fakeDriver {
	ref := driverstest.NewReference()
	full, faults := driverstest.Faulty(ref)
	return &fakeDriver{Driver: plainDriver{full}, ref: ref, faults: faults, full: full}
}

// errFakeDown is the error of every call while the fake is down.
var errFakeDown = drivers.Unavailable("fake", context.DeadlineExceeded)

// setDown makes every call fail as if the backend were unreachable
// (true), or reach it again (false).
func (f *fakeDriver) setDown(down bool) {
	if down {
		f.faults.Fail(errFakeDown)
	} else {
		f.faults.Fail(nil)
	}
}

// fakeExtender adds drivers.Extender.
type fakeExtender struct{ *fakeDriver }

func (f fakeExtender) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return f.full.(drivers.Extender).Extend(ctx, key, owner, ttl)
}

// fakeWaiter adds drivers.Extender and drivers.Capabilities.Wait; waiters
// wake on every release and at the holder's deadline.
type fakeWaiter struct{ fakeExtender }

func (fakeWaiter) Capabilities() drivers.Capabilities { return drivers.Capabilities{Wait: true} }

var (
	_ drivers.Driver   = (*fakeDriver)(nil)
	_ drivers.Extender = fakeExtender{}
)
