//go:build unix

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// locksJSON is what locks -o json prints: GET /v1/locks's schema.
type locksJSON struct {
	Locks []struct {
		Key       string `json:"key"`
		Owner     string `json:"owner"`
		Holder    string `json:"holder"`
		Fence     uint64 `json:"fence"`
		Remaining int64  `json:"remaining_ms"`
		Kind      string `json:"kind"`
		Limit     uint32 `json:"limit"`
		Holders   []struct {
			Owner string `json:"owner"`
			Fence uint64 `json:"fence"`
			Mode  string `json:"mode"`
		} `json:"holders"`
	} `json:"locks"`
	Truncated bool `json:"truncated"`
}

// checkLocksListsBackend: a lockcluster run process holds "deploy" on the
// backend that env and args name, and this process holds a semaphore and
// a read lock through the library (held's Manager); locks, given the same
// settings, lists all three with their holders, as a table and as JSON.
func checkLocksListsBackend(t *testing.T, env map[string]string, args []string, held *lock.Manager) {
	t.Helper()
	var procEnv []string
	for k, v := range env {
		procEnv = append(procEnv, k+"="+v)
	}
	startProc(t, procEnv, append(append([]string{"run"}, args...), "--key", "deploy", "--ttl", "1m")...)
	ctx := t.Context()
	for _, l := range []*lock.Lock{
		held.Make("exports", time.Minute, lock.Semaphore(3)),
		held.Make("exports", time.Minute, lock.Semaphore(3)),
		held.Make("catalog", time.Minute, lock.Read()),
	} {
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
	}
	var code int
	var stdout, stderr string
	if !poll.Wait(20*time.Second, func() bool {
		code, stdout, stderr = runCLI(t, env, append([]string{"locks"}, args...)...)
		return code == exitOK && strings.Contains(stdout, `"deploy"`)
	}) {
		t.Fatalf("locks never listed the run's lock: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Logf("locks:\n%s", stdout)
	// KEY KIND HOLDER: one row per holder, sorted by key.
	var rows []string
	for line := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		if f := strings.Fields(line); len(f) >= 3 {
			rows = append(rows, strings.Join(f[:3], " "))
		}
	}
	want := []string{"KEY KIND HOLDER", `"catalog" read test-holder`, `"deploy" mutex pid`, `"exports" semaphore/3 test-holder`, `"exports" semaphore/3 test-holder`}
	ok := len(rows) == len(want)
	for i := 0; ok && i < len(rows); i++ {
		ok = strings.HasPrefix(rows[i], want[i])
	}
	if !ok {
		t.Errorf("locks: rows %q, want %q", rows, want)
	}

	code, stdout, stderr = runCLI(t, env, append([]string{"locks", "-o", "json", "--prefix", "de"}, args...)...)
	var list locksJSON
	if err := json.Unmarshal([]byte(stdout), &list); code != exitOK || err != nil {
		t.Fatalf("locks -o json: exit %d, %v: %q, stderr %q", code, err, stdout, stderr)
	}
	if len(list.Locks) != 1 || list.Truncated {
		t.Fatalf("locks -o json --prefix de = %s; want deploy alone", stdout)
	}
	l := list.Locks[0]
	if l.Key != "deploy" || l.Kind != "" || l.Fence == 0 || !strings.HasPrefix(l.Holder, "pid") || !strings.HasSuffix(l.Owner, ":"+l.Holder) ||
		l.Remaining <= 0 || l.Remaining > 60000 {
		t.Errorf("locks -o json: deploy is %+v; want the run's grant, its holder and the milliseconds of a 1m lease", l)
	}
	code, stdout, _ = runCLI(t, env, append([]string{"locks", "-o", "json", "--limit", "1"}, args...)...)
	if err := json.Unmarshal([]byte(stdout), &list); code != exitOK || err != nil || len(list.Locks) != 1 || list.Locks[0].Key != "catalog" || !list.Truncated {
		t.Errorf("locks --limit 1: exit %d, %s; want catalog alone, truncated", code, stdout)
	}
}

// openHeld opens a Manager on the backend cfg names, as another program
// would, its grants describing their holder as test-holder.
func openHeld(t *testing.T, cfg lock.Config) *lock.Manager {
	t.Helper()
	cfg.Holder = "test-holder"
	m, err := lock.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// locks lists a SQLite file's locks, chosen by the flags or by
// LOCKCLUSTER_SQLITE_PATH as the library chooses (before, it knew the
// cluster only and asked for --endpoints).
func TestLocks_ListsSQLite(t *testing.T) {
	t.Run("flags", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "locks.db")
		held := openHeld(t, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: path}})
		checkLocksListsBackend(t, nil, []string{"--driver", "sqlite", "--sqlite-path", path}, held)
	})
	t.Run("environment", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "locks.db")
		held := openHeld(t, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: path}})
		checkLocksListsBackend(t, map[string]string{"LOCKCLUSTER_SQLITE_PATH": path}, nil, held)
	})
}

// locks lists a Redis server's locks, found by REDIS_URL.
func TestLocks_ListsRedis(t *testing.T) {
	srv := redistest.Start(t)
	held := openHeld(t, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: srv.URL()}})
	checkLocksListsBackend(t, map[string]string{"REDIS_URL": srv.URL()}, nil, held)
}

// locks names keys as the library does: without the key prefix, which
// LOCKCLUSTER_PREFIX sets for locks as for run and a program; the keys
// of another prefix are not listed.
func TestLocks_KeyPrefixFromTheEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	app := openHeld(t, lock.Config{Driver: "sqlite", Prefix: "app:", SQLite: lock.SQLiteConfig{Path: path}})
	if ok, err := app.Make("deploy", time.Minute).Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("Acquire: %v, %v", ok, err)
	}
	env := map[string]string{"LOCKCLUSTER_SQLITE_PATH": path}
	if code, stdout, stderr := runCLI(t, env, "locks"); code != exitOK || !strings.Contains(stdout, "(no locks held)") {
		t.Errorf("locks with the default prefix: exit %d, stdout %q, stderr %q; want none of app:'s", code, stdout, stderr)
	}
	env["LOCKCLUSTER_PREFIX"] = "app:"
	if code, stdout, stderr := runCLI(t, env, "locks"); code != exitOK || !strings.Contains(stdout, `"deploy"`) || strings.Contains(stdout, "app:") {
		t.Errorf("locks with LOCKCLUSTER_PREFIX=app: exit %d, stdout %q, stderr %q; want deploy, named without the prefix", code, stdout, stderr)
	}
}

// A backend whose locks live in the process that holds them has nothing
// for locks to list from another: it is refused as run refuses it, with
// the backends that can be listed named.
func TestLocks_RefusesAPrivateBackend(t *testing.T) {
	for _, args := range [][]string{
		{"--driver", "memory"},
		{"--driver", "sqlite", "--sqlite-path", ":memory:"},
		{"--driver", "sqlite"},
	} {
		code, stdout, stderr := runCLI(t, nil, append([]string{"locks"}, args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "--endpoints") || !strings.Contains(stderr, "REDIS_URL") ||
			!strings.Contains(stderr, "--sqlite-path FILE") || strings.Contains(stderr, "exclude nothing") {
			t.Errorf("locks %v: exit %d, stdout %q, stderr %q; want %d and the backends that can be listed", args, code, stdout, stderr, exitUsage)
		}
	}
}

// A Redis that refuses the password is a refused credential, as for run:
// exit status 77.
func TestLocks_RedisRefusesThePassword(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "the-redis-password")
	code, stdout, stderr := runCLI(t, map[string]string{"REDIS_URL": srv.URL()}, "locks")
	if code != exitNoPerm || stdout != "" || strings.Contains(stderr, "the-redis-password") {
		t.Errorf("locks with no password: exit %d, stdout %q, stderr %q; want %d", code, stdout, stderr, exitNoPerm)
	}
}
