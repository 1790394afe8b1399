package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// fileAt writes a lock file of schema version v, as the package wrote it
// then (migrations[:v]), with what fill inserts.
func fileAt(t *testing.T, v int, fill string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "locks.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, m := range migrations[:v] {
		if _, err := db.Exec(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf(`UPDATE zerotal_lock_meta SET value = %d WHERE name = 'schema_version'`, v) + ";" + fill); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file of v0.1.0 (version 1), of a development build (version 2) or of
// the release before the hold cap (version 3) is upgraded in place to the
// version this package writes: its grants, waiters and fence counter hold
// on, and a grant made after the upgrade keeps its cap.
func TestOpen_CarriesOlderSchemasOver(t *testing.T) {
	far := time.Now().Add(time.Hour).UnixMicro()
	for _, tc := range []struct {
		name     string
		version  int
		fill     string
		key      string
		claim    drivers.Claim
		holders  int
		waiters  int
		lastSeen uint64
	}{
		{"v0.1.0's mutex", 1, fmt.Sprintf(`INSERT INTO zerotal_locks VALUES ('k', 'old', 7, %d);
			UPDATE zerotal_lock_meta SET value = 7 WHERE name = 'last_fence'`, far),
			"k", drivers.Claim{}, 1, 0, 7},
		{"version 2's semaphore", 2, fmt.Sprintf(`INSERT INTO zerotal_shared_names VALUES ('s', 1, 2);
			INSERT INTO zerotal_shared_holders VALUES ('s', 'a', 8, %[1]d, 0), ('s', 'b', 9, %[1]d, 0);
			INSERT INTO zerotal_shared_queue VALUES ('s', 'c', 1, 0, %[1]d, 1000000);
			UPDATE zerotal_lock_meta SET value = 9 WHERE name = 'last_fence'`, far),
			"s", drivers.Claim{Kind: drivers.Semaphore, Limit: 2}, 2, 1, 9},
		{"version 3's mutex and waiter", 3, fmt.Sprintf(`INSERT INTO zerotal_locks VALUES ('m', 'old', 11, %[1]d, 0, 0, 1);
			INSERT INTO zerotal_queue VALUES ('m', 'w', 1, 0, 0, 1, %[1]d, 1000000);
			UPDATE zerotal_lock_meta SET value = 11 WHERE name = 'last_fence'`, far),
			"m", drivers.Claim{}, 1, 1, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fileAt(t, tc.version, tc.fill)
			d := openInternal(t, Config{Path: path})
			if v := versionOf(t, path); v != schemaVersion {
				t.Fatalf("schema version after the upgrade = %d, want %d", v, schemaVersion)
			}
			h, ok, err := d.Inspect(t.Context(), tc.key)
			if err != nil || !ok || h.Claim != tc.claim || len(h.Holders) != tc.holders || h.WaiterCount != tc.waiters {
				t.Fatalf("Inspect after the upgrade = %+v, %v, %v", h, ok, err)
			}
			g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{tc.key}, Owner: "new", TTL: time.Minute, Claim: tc.claim})
			if err != nil || g.Acquired {
				t.Fatalf("Acquire of the held key after the upgrade = %+v, %v; want busy", g, err)
			}
			g, err = d.Acquire(t.Context(), drivers.Request{Keys: []string{"other"}, Owner: "new", TTL: time.Minute})
			if err != nil || !g.Acquired || g.Fence() <= tc.lastSeen {
				t.Fatalf("Acquire after the upgrade = %+v, %v; want a fence above %d", g, err, tc.lastSeen)
			}
			const maxHold = time.Minute
			capped := drivers.Request{Keys: []string{"capped"}, Owner: "new", TTL: time.Hour, MaxHold: maxHold}
			if g, err := d.Acquire(t.Context(), capped); err != nil || !g.Acquired {
				t.Fatalf("capped Acquire after the upgrade = %+v, %v", g, err)
			}
			if h, ok, err := d.Inspect(t.Context(), "capped"); err != nil || !ok || h.Holders[0].Remaining > maxHold {
				t.Fatalf("Inspect of a grant for an hour capped at %v = %+v, %v, %v; want at most the cap left", maxHold, h, ok, err)
			}
		})
	}
}

// versionOf reads the schema version stored in the file at path.
func versionOf(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := readSchemaVersion(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
