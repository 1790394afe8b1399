package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/background"
)

// leaving records the clean-ups this driver runs in the background
// (d.cleanups), key by key, so that a later call of the driver on a key
// comes after them: a wait returns by its deadline and leaves its place in
// the queue behind it, and a release made right after by the same process
// must not hand the key to that place, a waiter that is gone, for a lease.
// Within one process the driver reads its own writes.
type leaving = background.Keys

// after waits until no clean-up of keys recorded before it is under way,
// or ctx ends, or the driver closes. A clean-up is bounded by
// cleanupTimeout.
func (d *Driver) after(ctx context.Context, op string, keys ...string) error {
	switch k, err := d.leaving.After(ctx, d.done, keys...); {
	case errors.Is(err, background.ErrStopped):
		return drivers.ErrClosed
	case err != nil:
		return fmt.Errorf("redis: %s %q: %w", op, k, err)
	}
	return nil
}

// leave runs clean on each of keys in turn, in the background, each key
// recorded until its clean-up has returned. After Close it runs nothing,
// and the calls that would wait for it get ErrClosed.
func (d *Driver) leave(keys []string, clean func(ctx context.Context, key string)) {
	done := make([]func(), len(keys))
	for i, k := range keys {
		done[i] = d.leaving.Add(k)
	}
	d.cleanups.Go(cleanupTimeout, func(ctx context.Context) {
		for i, k := range keys {
			clean(ctx, k)
			done[i]()
		}
	})
}
