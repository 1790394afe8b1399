package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

func openT(t *testing.T, cfg sqlite.Config) *sqlite.Driver {
	t.Helper()
	d, err := sqlite.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open(%q): %v", cfg.Path, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// rawDB opens the file with plain database/sql, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOpen_RejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  sqlite.Config
	}{
		{"no path", sqlite.Config{}},
		{"negative busy timeout", sqlite.Config{Path: "x.db", BusyTimeout: -time.Second}},
		{"negative poll interval", sqlite.Config{Path: "x.db", PollInterval: -time.Millisecond}},
		{"absurd poll interval", sqlite.Config{Path: "x.db", PollInterval: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := sqlite.Open(t.Context(), tc.cfg)
			if !errors.Is(err, drivers.ErrInvalid) {
				t.Fatalf("Open = %v, %v; want an error matching ErrInvalid", d, err)
			}
		})
	}
}

func TestConfig_ValidateLeavesCallerStructAlone(t *testing.T) {
	cfg := sqlite.Config{Path: filepath.Join(t.TempDir(), "locks.db")}
	openT(t, cfg)
	if cfg.BusyTimeout != 0 || cfg.PollInterval != 0 {
		t.Fatalf("Open wrote defaults into the caller's Config: %+v", cfg)
	}
}

func TestOpen_RefusesUnusablePaths(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"directory", dir, "is a directory"},
		{"missing directory", filepath.Join(dir, "no", "such", "locks.db"), "does not exist"},
		{"parent is a file", filepath.Join(plain, "locks.db"), "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := sqlite.Open(t.Context(), sqlite.Config{Path: tc.path})
			if err == nil {
				_ = d.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q) = %v, want it to say %q", tc.path, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open created the missing directory: %v", err)
	}
}

func TestOpen_RefusesReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any file, so a read-only mode bit proves nothing")
	}
	path := filepath.Join(t.TempDir(), "locks.db")
	openT(t, sqlite.Config{Path: path}).Close()
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)
	d, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err == nil {
		_ = d.Close()
		t.Fatal("Open of a read-only file succeeded")
	}
	if !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("Open = %v, want it to say the file is not writable", err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("Open changed a file it refused")
	}
}

func TestOpen_RefusesPathTheKernelWillNotCreate(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc, where nobody, root included, may create a file")
	}
	path := "/proc/zerotal-locks.db"
	d, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, BusyTimeout: time.Second})
	if err == nil {
		_ = d.Close()
		t.Fatalf("Open(%q) succeeded", path)
	}
	if !strings.Contains(err.Error(), path) || errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("Open(%q) = %v; want an error naming the path", path, err)
	}
	t.Log(err)
}

func TestOpen_RefusesFileThatIsNotADatabase(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"text", []byte("name,amount\nalice,10\nbob,20\n")},
		{"short", []byte("SQL")},
		{"header then garbage", append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 4096)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "precious.csv")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, BusyTimeout: time.Second})
			if !errors.Is(err, sqlite.ErrNotDatabase) {
				if err == nil {
					_ = d.Close()
				}
				t.Fatalf("Open = %v, want ErrNotDatabase", err)
			}
			if !bytes.Equal(tc.content, readFile(t, path)) {
				t.Fatal("Open changed a file it refused")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("Open left files beside the refused one: %v", entries)
			}
		})
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	fence, ok, err := driverstest.Take(t.Context(), d, "kept", "owner-1", time.Hour)
	if err != nil || !ok {
		t.Fatalf("Acquire = %d, %v, %v", fence, ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec(`UPDATE zerotal_lock_meta SET value = 99 WHERE name = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)

	d2, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if !errors.Is(err, sqlite.ErrSchemaTooNew) {
		if err == nil {
			_ = d2.Close()
		}
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "99") {
		t.Fatalf("error %q does not name the version found", err)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("Open changed a file it refused")
	}
	var owner string
	if err := db.QueryRow(`SELECT owner FROM zerotal_locks WHERE key = 'kept'`).Scan(&owner); err != nil || owner != "owner-1" {
		t.Fatalf("lock row after refused Open: %q, %v", owner, err)
	}
}

func TestOpen_EmptyFileBecomesDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), d, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire on a fresh empty file = %v, %v", ok, err)
	}
}

func TestOpen_SharesAnApplicationDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')`); err != nil {
		t.Fatal(err)
	}
	d := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), d, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	var body string
	if err := db.QueryRow(`SELECT body FROM notes`).Scan(&body); err != nil || body != "keep me" {
		t.Fatalf("application table after Open: %q, %v", body, err)
	}
}

func TestOpen_PathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd ?#% name")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "locks?.db")
	a := openT(t, sqlite.Config{Path: path})
	b := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(t.Context(), a, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if held, err := b.Exists(t.Context(), "k"); err != nil || !held {
		t.Fatalf("second handle on %q: Exists = %v, %v; want true", path, held, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the path given: %v", err)
	}
}

func TestOpen_CancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "locks.db")})
	if !errors.Is(err, context.Canceled) {
		if err == nil {
			_ = d.Close()
		}
		t.Fatalf("Open with a cancelled ctx = %v, want context.Canceled", err)
	}
}
