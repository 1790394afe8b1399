package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// criticalSection is the command every process runs under the lock: it
// notices a second process inside, records the fence in grant order, and
// stays inside long enough for an overlap to show.
const criticalSection = `
d="$0"
if [ -e "$d/inside" ]; then echo "overlap fence $LOCK_FENCE" >> "$d/errors"; fi
touch "$d/inside"
echo "$LOCK_FENCE" >> "$d/fences"
sleep 0.02
rm -f "$d/inside"
`

// exclusion starts procs OS processes that each take the lock rounds
// times through "lockcluster run", and checks that no two were ever inside
// at once and that fences strictly increase in grant order.
func exclusion(t *testing.T, env []string, driverArgs ...string) {
	t.Helper()
	const procs, rounds = 4, 5
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, procs*rounds)
	for range procs {
		wg.Go(func() {
			for range rounds {
				args := append([]string{"run"}, driverArgs...)
				args = append(args, "--key", "shared", "--ttl", "10s", "--timeout", "60s", "--", "sh", "-c", criticalSection, dir)
				code, out := runWithEnv(ctx, env, args...)
				if code != 0 {
					errs <- "exit " + strconv.Itoa(code) + ": " + out
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "errors")); err == nil {
		t.Fatalf("processes overlapped:\n%s", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fences"))
	if err != nil {
		t.Fatal(err)
	}
	fences := strings.Fields(string(b))
	if len(fences) != procs*rounds {
		t.Fatalf("%d grants recorded, want %d", len(fences), procs*rounds)
	}
	var prev uint64
	for _, f := range fences {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			t.Fatalf("bad fence %q", f)
		}
		// Every driver tested here fences: 0 would mean the fence never
		// reached the command.
		if v == 0 || v <= prev {
			t.Fatalf("fence %d after %d: fences %v", v, prev, fences)
		}
		prev = v
	}
}

func runWithEnv(ctx context.Context, env []string, args ...string) (int, string) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return exitCode(err), string(out)
}

// TestSQLite_ProcessesExclude: several OS processes on one SQLite file.
func TestSQLite_ProcessesExclude(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	db := filepath.Join(t.TempDir(), "locks.db")
	exclusion(t, nil, "--driver", "sqlite", "--sqlite-path", db)
}

// TestRedis_ProcessesExclude: several OS processes on one redis-server.
func TestRedis_ProcessesExclude(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := redistest.Binary(); err != nil {
		t.Skip(err)
	}
	srv := redistest.Start(t)
	exclusion(t, []string{"REDIS_URL=" + srv.URL()}, "--driver", "redis")
}

// TestCluster_ProcessesExclude: several OS processes on the cluster.
func TestCluster_ProcessesExclude(t *testing.T) {
	c := newCluster(t)
	exclusion(t, nil, "--driver", "cluster", "--endpoints", strings.Join(c.addrs(), ","))
}
