package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// binary is the lockcluster executable built once for the whole run;
// buildDir holds it (and the fault-injection build, made when a nemesis
// test first needs it).
var binary, buildDir string

// tokenFile is the token file every node of the suite reads (creds_test.go).
var tokenFile string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // every test skips itself: no need to build
	}
	dir, err := os.MkdirTemp("", "lockcluster-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	buildDir = dir
	binary = filepath.Join(dir, "lockcluster")
	build := exec.Command("go", "build", "-o", binary, "github.com/zerotal/lock/cmd/lockcluster")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lockcluster:", err)
		return 1
	}
	if tokenFile, err = writeTokenFile(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The commands the tests start (run, bench, exclusion's workers)
	// inherit this environment: a worker's credential.
	os.Setenv("LOCKCLUSTER_TOKEN", clientToken)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
