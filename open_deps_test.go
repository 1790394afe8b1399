package lock_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/zerotal/lock"
)

// A program that opens the memory driver only must not link the other
// backends: drivers register themselves when imported, and package lock
// imports none but memory.
func TestOpen_MemoryOnlyProgramLinksNoOtherBackend(t *testing.T) {
	t.Parallel()
	deps := goListDeps(t, "./testdata/memonly")
	if !slices.Contains(deps, "github.com/zerotal/lock/drivers/memory") {
		t.Fatalf("go list -deps listed no memory driver:\n%s", strings.Join(deps, "\n"))
	}
	for _, dep := range deps {
		for _, banned := range []string{
			"modernc.org/sqlite",
			"github.com/redis/go-redis",
			"github.com/zerotal/lock/client",
			"github.com/hashicorp/raft",
			"github.com/zerotal/lock/drivers/sqlite",
			"github.com/zerotal/lock/drivers/redis",
			"github.com/zerotal/lock/drivers/cluster",
			"github.com/zerotal/lock/drivers/postgres",
			"github.com/jackc/pgx",
		} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("a memory-only program links %s", dep)
			}
		}
	}

	// The same program asks for redis without importing it: the error
	// names the import.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), goBin, "run", "./testdata/memonly")
	cmd.Env = append(os.Environ(), lock.EnvDriver+"=", lock.EnvSQLitePath+"=", lock.EnvRedisURL+"=", lock.EnvEndpoints+"=127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"try: <nil>",
		`redis: lock: driver "redis" is not linked into this program: add import _ "github.com/zerotal/lock/drivers/redis"`,
		// ConfigFromEnv's error, and the Config it came with does not
		// open: not the memory driver of the zero Config.
		`env: true lock: driver "cluster" is not linked into this program: add import _ "github.com/zerotal/lock/drivers/cluster"`,
		"env open: false true",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("memonly printed:\n%s\nwant a line %q", out, want)
		}
	}
}
