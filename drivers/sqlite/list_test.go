package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

// The prefix is a range of the primary key, up to the prefix's successor:
// a prefix whose last byte raised is no longer UTF-8 ("¿" is C2 BF, its
// successor C2 C0) still bounds the range exactly, and the keys that
// start with it, the highest code point's included, are all listed. Both
// the file's reader pool and a :memory: database (read inside a write
// run) are checked.
func TestListHeld_PrefixIsAnExactRange(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), "locks.db"), ":memory:"} {
		d := openT(t, sqlite.Config{Path: path})
		for _, k := range []string{"¾", "¿", "¿a", "¿\U0010FFFF", "À", "¿¿"} {
			if _, ok, err := driverstest.Take(t.Context(), d, k, "o", time.Minute); !ok || err != nil {
				t.Fatalf("%s: Acquire(%q) = %v, %v", path, k, ok, err)
			}
		}
		locks, truncated, err := d.ListHeld(t.Context(), "¿", 10)
		if err != nil {
			t.Fatalf("%s: ListHeld: %v", path, err)
		}
		var got []string
		for _, l := range locks {
			got = append(got, l.Key)
		}
		if want := []string{"¿", "¿a", "¿¿", "¿\U0010FFFF"}; !slices.Equal(got, want) || truncated {
			t.Errorf("%s: ListHeld(¿) = %q, truncated %v; want %q", path, got, truncated, want)
		}
		if locks, _, err := d.ListHeld(t.Context(), "", 10); err != nil || len(locks) != 6 {
			t.Errorf("%s: ListHeld of every key = %d keys, %v; want 6", path, len(locks), err)
		}
	}
}
