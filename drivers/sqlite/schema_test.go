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

// A file of v0.1.0 (version 1) or of a development build (version 2) is
// carried over: its grants, waiters and fence counter hold on.
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openInternal(t, Config{Path: fileAt(t, tc.version, tc.fill)})
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
		})
	}
}
