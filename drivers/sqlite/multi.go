package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// refusal carries a refusal out of a transaction that must be rolled back
// (a key found shared half-way): the caller reports it, not as a failure.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

// acquireSet takes every key or none, in one write transaction
// (drivers.MultiAcquirer): it reads each key's row first, and writes only
// when none is held by another owner, so a busy key leaves the others as
// they were. No other connection, in this process or another, sees the
// transaction half done.
func (d *Driver) acquireSet(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	var (
		fences []uint64
		busy   drivers.Busy
		ok     bool
	)
	err := d.write(ctx, "acquire", func(ctx context.Context) error {
		return d.inTx(ctx, func(ctx context.Context) (err error) {
			fences, ok, busy, err = d.acquireAllTx(ctx, keys, owner, ttl)
			return err
		})
	})
	if r, refused := errors.AsType[*refusal](err); refused {
		return nil, false, drivers.Busy{}, r.err
	}
	if err != nil {
		return nil, false, drivers.Busy{}, err
	}
	if ok {
		d.maybeSweep(ctx)
	}
	return fences, ok, busy, nil
}

// acquireAllTx is AcquireAll's transaction.
func (d *Driver) acquireAllTx(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	now := time.Now()
	nowUS := now.UnixMicro()
	for _, k := range keys {
		var h holder
		err := d.wq().QueryRowContext(ctx, holderSQL, k).Scan(&h.owner, &h.expiresUS)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, false, drivers.Busy{}, err
		case h.owner != owner && h.heldAt(nowUS):
			left := time.Duration(h.expiresUS-nowUS) * time.Microsecond
			return nil, false, drivers.Busy{Key: k, HeldBy: drivers.HeldBy{Holder: drivers.HolderOf(h.owner), TTL: left}}, nil
		}
	}
	fences := make([]uint64, len(keys))
	for i, k := range keys {
		var f int64
		err := d.w.acquire.QueryRowContext(ctx, k, owner, deadlineUS(now, ttl), nowUS).Scan(&f)
		switch {
		case isSharedMarker(err):
			return nil, false, drivers.Busy{}, &refusal{drivers.KindMismatch(k, drivers.AnyShared, drivers.Claim{})}
		case errors.Is(err, sql.ErrNoRows):
			return nil, false, drivers.Busy{}, fmt.Errorf("sqlite: key %q found free, then refused in the same transaction", k)
		case err != nil:
			return nil, false, drivers.Busy{}, err
		}
		fences[i] = uint64(f)
	}
	return fences, true, drivers.Busy{}, nil
}
