//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

func TestRun_SharedFlagsAreChecked(t *testing.T) {
	for name, args := range map[string][]string{
		"no slots":            {"-n", "0"},
		"both sides":          {"--shared", "--exclusive"},
		"a semaphore's side":  {"-n", "2", "--shared"},
		"negative slot count": {"--slots", "-3"},
	} {
		t.Run(name, func(t *testing.T) {
			all := append(append(append([]string{"run"}, sqliteArgs(t)...), args...), "--key", "k", "--", "true")
			if code, _, stderr := runCLI(t, nil, all...); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
		})
	}
}

// run -n, --shared and --exclusive against a real agent: the slots and
// sides are honoured, a key held as another kind is a usage error that
// says what it is held as, and locks lists every holder.
func TestRun_SemaphoreAndSidesOnTheCluster(t *testing.T) {
	addr := startAgent(t, "")
	vars := map[string]string{"LOCKCLUSTER_ENDPOINTS": addr}
	c, err := client.New(client.Config{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	sem := drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	for _, o := range []string{"a", "b"} {
		if _, ok, _, err := driverstest.TakeShared(ctx, c, "exports", o, time.Minute, sem); !ok || err != nil {
			t.Fatalf("slot for %s: %v %v", o, ok, err)
		}
	}
	run := func(args ...string) (int, string, string) {
		return runCLI(t, vars, append(append([]string{"run", "--no-wait"}, args...), "--", "sh", "-c", `echo "fence=$LOCK_FENCE"`)...)
	}
	if code, _, stderr := run("-n", "2", "--key", "exports"); code != exitNotAcquired {
		t.Fatalf("a third run of a semaphore of 2: exit %d; stderr %q", code, stderr)
	}
	if code, _, stderr := run("-n", "3", "--key", "exports"); code != exitUsage || !strings.Contains(stderr, "semaphore of 2") {
		t.Fatalf("-n 3 on a semaphore of 2: exit %d; stderr %q", code, stderr)
	}
	code, stdout, stderr := runCLI(t, vars, "locks")
	if code != 0 || strings.Count(stdout, "semaphore/2") != 2 {
		t.Fatalf("locks: exit %d, stdout %q, stderr %q; want two rows of semaphore/2", code, stdout, stderr)
	}
	if _, err := c.Release(ctx, "exports", "a"); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := run("-n", "2", "--key", "exports"); code != 0 || !strings.Contains(stdout, "fence=") {
		t.Fatalf("run in a freed slot: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	if _, ok, _, err := driverstest.TakeShared(ctx, c, "catalog", "reader", time.Minute, drivers.Claim{Kind: drivers.RWLock}); !ok || err != nil {
		t.Fatalf("read side: %v %v", ok, err)
	}
	if code, _, stderr := run("--shared", "--key", "catalog"); code != 0 {
		t.Fatalf("--shared beside a reader: exit %d; stderr %q", code, stderr)
	}
	if code, _, stderr := run("--exclusive", "--key", "catalog"); code != exitNotAcquired {
		t.Fatalf("--exclusive beside a reader: exit %d; stderr %q", code, stderr)
	}
	if code, _, stderr := run("--key", "catalog"); code != exitUsage || !strings.Contains(stderr, "rwlock") {
		t.Fatalf("a plain run of a read/write lock: exit %d; stderr %q", code, stderr)
	}
}

// On a SQLite file, -n and --shared work as on the cluster.
func TestRun_SemaphoreOnSQLite(t *testing.T) {
	db := sqliteArgs(t)
	for _, kind := range [][]string{{"-n", "2", "--key", "pool"}, {"--shared", "--key", "doc"}} {
		args := append(append(append([]string{"run"}, db...), kind...), "--", "sh", "-c", `echo "fence=$LOCK_FENCE"`)
		if code, stdout, stderr := runCLI(t, nil, args...); code != 0 || !strings.Contains(stdout, "fence=") {
			t.Fatalf("run %v: exit %d, stdout %q, stderr %q", kind, code, stdout, stderr)
		}
	}
}

// A backend or cluster that cannot serve a semaphore is a configuration
// problem (exit status 78), not an outage or contention.
func TestRun_UnsupportedIsAConfigurationError(t *testing.T) {
	err := fmt.Errorf("acquire: %w: member n3 runs an older release", lock.ErrUnsupported)
	if code := cliexplain.ExitCode(err); code != exitConfig {
		t.Fatalf("ExitCode(%v) = %d, want %d", err, code, exitConfig)
	}
}
