package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
	"github.com/zerotal/lock/internal/testkit/holdcap"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// The cap on total hold time (drivers.Request.MaxHold), enforced by the
// statements: these tests hold through the driver, with the waiter in
// another OS process sharing the file.

// waitQueued sends w to wait for key and waits until its place is in the
// file, behind n-1 others.
func waitQueued(t *testing.T, d *sqlite.Driver, w *child, key string, n int) {
	t.Helper()
	w.send(t, "wait "+key)
	if l := w.line(t, 30*time.Second); l != "waiting" {
		t.Fatalf("waiter said %q", l)
	}
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d waiters of %q in the file", n, key), func() bool {
		h, _, err := d.Inspect(t.Context(), key)
		return err == nil && h.WaiterCount == n
	})
}

// A holder that refreshes in a loop, by Extend or by an Acquire of the key
// it holds, loses it at its cap, not before and not after by more than a
// refresh, and the waiter of another process gets it then.
func TestMaxHold_RefreshLoopLosesTheKeyAtTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	for _, r := range holdcap.Refreshes {
		t.Run(r.Name, func(t *testing.T) {
			key := "capped-" + strings.ReplaceAll(r.Name, " ", "-")
			w := startChild(t, helperCmd(t, "waiter", envPath+"="+path))
			fence := holdcap.LoseAtCap(t, d, key, "holder", r, func() { waitQueued(t, d, w, key, 1) })
			if f, _ := grantOf(t, w, 20*time.Second); f <= fence {
				t.Fatalf("the waiter got fence %d; want above the capped holder's %d", f, fence)
			}
			if l := w.line(t, 20*time.Second); l != "released" {
				t.Fatalf("waiter said %q", l)
			}
		})
	}
}

// helperCapped: for each line "wait <key>" it prints "waiting" and is the
// capped holder of holdcap.HoldUntilLost, waiting for the key capped at
// MAX_HOLD, its grant for TTL.
func helperCapped(ctx context.Context, d *sqlite.Driver) error {
	return eachLine(func(line string) error {
		key, ok := strings.CutPrefix(line, "wait ")
		if !ok {
			return fmt.Errorf("bad command %q", line)
		}
		fmt.Println("waiting")
		return holdcap.HoldUntilLost(ctx, d, drivers.Request{Keys: []string{key}, Owner: newToken(), TTL: envDur(envTTL, holdcap.TTL),
			MaxHold: envDur(envMaxHold, holdcap.Cap), Wait: true, WaitOptions: drivers.WaitOptions{RetryDelay: 100 * time.Millisecond}}, os.Stdout)
	})
}

// A waiter's cap counts from its grant, not from its request: a waiter of
// another process, let in by this process's release after it waited
// longer than its cap, holds the key for its cap from then.
func TestMaxHold_WaiterOfAnotherProcessIsCappedFromItsGrant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	w := startChild(t, helperCmd(t, "capped", envPath+"="+path))
	const key = "capped-waiter"
	if _, ok, err := driverstest.Take(t.Context(), d, key, "parent", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	waitQueued(t, d, w, key, 1)
	// The key stays held past the waiter's cap, counted from its request.
	<-time.After(holdcap.Cap + holdcap.TTL)
	if ok, err := d.Release(t.Context(), key, "parent"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	grantOf(t, w, 20*time.Second)
	var held int64
	l := w.line(t, holdcap.Cap+20*time.Second)
	if _, err := fmt.Sscanf(l, "lost %d", &held); err != nil {
		t.Fatalf("the capped waiter said %q; want it to lose the key at its cap, %v after its grant", l, holdcap.Cap)
	}
	if h := time.Duration(held) * time.Millisecond; h < holdcap.Cap/2 || h > holdcap.Cap+holdcap.Late {
		t.Fatalf("the waiter held the key %v from its grant; want its cap, %v (counted from the grant, not the request), within %v", h, holdcap.Cap, holdcap.Late)
	}
}

// A grant records its cap only when it has one (cap_us is NULL without),
// and a capped grant's deadline is never past its cap.
func TestMaxHold_GrantRecordsACapOnlyWhenItHasOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	db := rawDB(t, path)
	for _, maxHold := range []time.Duration{0, holdcap.Cap} {
		key := fmt.Sprint("layout-", maxHold)
		g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: "o", TTL: time.Hour, MaxHold: maxHold})
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire = %+v, %v", g, err)
		}
		var recorded bool
		if err := db.QueryRow(`SELECT cap_us IS NOT NULL FROM zerotal_locks WHERE key = ?`, key).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if recorded != (maxHold > 0) {
			t.Fatalf("MaxHold %v: a cap recorded = %v", maxHold, recorded)
		}
		h, ok, err := d.Inspect(t.Context(), key)
		if err != nil || !ok || len(h.Holders) != 1 {
			t.Fatalf("Inspect = %+v, %v, %v", h, ok, err)
		}
		if maxHold > 0 && h.Holders[0].Remaining > maxHold {
			t.Fatalf("a grant for an hour capped at %v has %v left; want at most its cap", maxHold, h.Holders[0].Remaining)
		}
	}
}

// A set's cap starts when its last key comes, as its TTL does.
func TestMaxHold_SetCapStartsWithItsLastKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	holdcap.SetCapStartsWithItsLastKey(t, openT(t, sqlite.Config{Path: path}), openT(t, sqlite.Config{Path: path}), "set-1", "set-2")
}
