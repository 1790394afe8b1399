package client

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// Keys are UTF-8 on the cluster. Sent as they are, "a\xff" and "a\xfe"
// would both become "a\uFFFD" in JSON (one lock for two keys) and stay raw
// in a query string (Get would find "a\xff" free while it is held). So the
// client refuses them before any request, with an error matching
// ErrInvalid.
func TestClient_RefusesKeysThatAreNotUTF8(t *testing.T) {
	f, c := fakeClient(t, Config{Timeout: 2 * time.Second})
	ctx := t.Context()
	const bad = "a\xff"
	calls := map[string]func() error{
		"Acquire": func() error { _, _, err := driverstest.Take(ctx, c, bad, "o", time.Second); return err },
		"AcquireWait": func() error {
			_, err := driverstest.TakeWait(ctx, c, bad, "o", time.Second, drivers.WaitOptions{})
			return err
		},
		"Acquire owner": func() error { _, _, err := driverstest.Take(ctx, c, "a", "o\xfe", time.Second); return err },
		"Release":       func() error { _, err := c.Release(ctx, bad, "o"); return err },
		"Extend":        func() error { _, err := c.Extend(ctx, bad, "o", time.Second); return err },
		"ForceRelease":  func() error { return c.ForceRelease(ctx, bad) },
		"Exists":        func() error { _, err := c.Exists(ctx, bad); return err },
		"List":          func() error { _, _, err := c.List(ctx, bad, 10); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, drivers.ErrInvalid) {
			t.Errorf("%s with invalid UTF-8 = %v, want ErrInvalid", name, err)
		}
	}
	for _, path := range []string{"/v1/acquire", "/v1/release", "/v1/extend", "/v1/force-release", "/v1/lock", "/v1/locks"} {
		if n := f.hitCount(path); n != 0 {
			t.Errorf("%d requests reached %s", n, path)
		}
	}
	// Valid UTF-8 of any kind still goes through.
	if _, ok, err := driverstest.Take(ctx, c, "ключ 鍵/with spaces:colons", "o", time.Second); err != nil || !ok {
		t.Fatalf("Acquire of a valid UTF-8 key = %v, %v", ok, err)
	}
}
