package modelbridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/zerotal/lock/drivers/driverstest"
)

// childEnv marks the test binary run again as TestModelChild.
const childEnv = "ZEROTAL_TS_MODEL_CHILD"

// distEnv names the built package's ESM entry for modelchild.mjs.
const distEnv = "ZEROTAL_TS_DIST"

// TestModel drives the TypeScript memory driver, in one node process
// shared by three handles (one process, as the driver is in-process),
// with the model's random schedules: every answer, fence and queue as the
// model has it, for mutexes, semaphores, read/write locks and sets.
func TestModel(t *testing.T) {
	entry := build(t)
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		p := driverstest.StartModelProcs(t, 1, "TestModelChild", childEnv+"=1", distEnv+"="+entry)[0]
		procs := make([]driverstest.Proc, 3)
		for i := range procs {
			procs[i] = driverstest.Proc{Driver: p.Driver, Name: p.Name} // Kill nil: never killed
		}
		return procs
	}, driverstest.ModelOptions{Steps: 60})
}

// TestModelChild is TestModel's child process: it becomes node serving the
// TypeScript memory driver on the same stdin and stdout (so the PID the
// parent holds is node's); run alone it does nothing.
func TestModelChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "test", "modelchild.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Fatal(syscall.Exec(node, []string{node, script}, os.Environ())) // returns only on failure
}

// build compiles the package's sources (tsc, from the lockfile's
// devDependencies, installed with npm ci when missing) into a directory of
// the test's own and returns its ESM entry; ZEROTAL_TS_DIST names another
// build's entry instead. Without node the test is
// skipped, unless CI is set: there a missing node is a failure.
func build(t *testing.T) string {
	t.Helper()
	if entry := os.Getenv(distEnv); entry != "" {
		return entry // a build of one's own, as it is
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is needed in CI: %v", err)
		}
		t.Skipf("node is not installed: %v", err)
	}
	pkg, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		run(t, pkg, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
	}
	out := t.TempDir()
	run(t, pkg, "node", tsc, "-p", "tsconfig.json", "--outDir", out, "--declaration", "false")
	// The package is ESM ("type": "module"); outside it, node must be told.
	if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type":"module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, "index.js")
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
