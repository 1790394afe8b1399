package supervise

import (
	"os"
	"testing"
)

// TestMain lets this test binary be the guard that Group.Supervise starts
// (it runs os.Executable, which here is the test binary).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		os.Exit(RunGuard(os.Args[2:]))
	}
	os.Exit(m.Run())
}
