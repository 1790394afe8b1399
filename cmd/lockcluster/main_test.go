package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// beMainEnv makes the test binary run main() instead of the tests: tests
// start it as a real lockcluster process.
const beMainEnv = "LOCKCLUSTER_TEST_BE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(beMainEnv) == "1" {
		main() // exits
	}
	goleak.VerifyTestMain(m)
}
