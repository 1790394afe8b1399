package main

import (
	"github.com/zerotal/lock/cmd/lockcluster/internal/supervise"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// beMainEnv makes the test binary run main() instead of the tests: tests
// start it as a real lockcluster process.
const beMainEnv = "LOCKCLUSTER_TEST_BE_MAIN"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.GuardArg {
		os.Exit(supervise.RunGuard(os.Args[2:])) // run's guard, started from this binary
	}
	if os.Getenv(beMainEnv) == "1" {
		main() // exits
	}
	// A run's guard process is reaped in the background, for up to five
	// seconds after the run (supervise's guard.release, by design: the
	// lock's release does not wait for it); on a loaded machine the last
	// in-process run's reaper can outlast goleak's retries.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/zerotal/lock/cmd/lockcluster/internal/supervise.(*guard).release.func1"))
}
