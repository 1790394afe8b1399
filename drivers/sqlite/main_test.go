package sqlite_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the helper workloads when the test binary is re-executed
// as a child process (see helper_test.go), and the tests otherwise.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}
