package driverstest

import (
	"context"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Take and the other Take functions are the Requests a test of a driver
// makes most, each one call of drivers.Driver.Acquire with its answer
// unpacked.

// Take acquires key for owner without waiting: its fence, or ok false.
func Take(ctx context.Context, d drivers.Driver, key, owner string, ttl time.Duration) (fence uint64, ok bool, err error) {
	fence, ok, _, err = TakeShared(ctx, d, key, owner, ttl, drivers.Claim{})
	return fence, ok, err
}

// TakeHeld is Take that, when ok is false, also says who is in the way.
func TakeHeld(ctx context.Context, d drivers.Driver, key, owner string, ttl time.Duration) (uint64, bool, drivers.HeldBy, error) {
	return TakeShared(ctx, d, key, owner, ttl, drivers.Claim{})
}

// TakeWait acquires key for owner, waiting until it is granted or ctx
// ends.
func TakeWait(ctx context.Context, d drivers.Driver, key, owner string, ttl time.Duration, o drivers.WaitOptions) (uint64, error) {
	return TakeSharedWait(ctx, d, key, owner, ttl, drivers.Claim{}, o)
}

// TakeShared is Take with claim c.
func TakeShared(ctx context.Context, d drivers.Driver, key, owner string, ttl time.Duration, c drivers.Claim) (uint64, bool, drivers.HeldBy, error) {
	g, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: ttl, Claim: c})
	return g.Fence(), g.Acquired, g.Busy.HeldBy, err
}

// TakeSharedWait is TakeWait with claim c.
func TakeSharedWait(ctx context.Context, d drivers.Driver, key, owner string, ttl time.Duration, c drivers.Claim, o drivers.WaitOptions) (uint64, error) {
	g, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: ttl, Claim: c, Wait: true, WaitOptions: o})
	return g.Fence(), err
}

// TakeAll acquires every key of keys for owner, or none, without
// waiting.
func TakeAll(ctx context.Context, d drivers.Driver, keys []string, owner string, ttl time.Duration) ([]uint64, bool, drivers.Busy, error) {
	g, err := d.Acquire(ctx, drivers.Request{Keys: keys, Owner: owner, TTL: ttl})
	return g.Fences, g.Acquired, g.Busy, err
}

// TakeAllWait acquires every key of keys for owner, waiting for the set.
func TakeAllWait(ctx context.Context, d drivers.Driver, keys []string, owner string, ttl time.Duration, o drivers.WaitOptions) ([]uint64, error) {
	g, err := d.Acquire(ctx, drivers.Request{Keys: keys, Owner: owner, TTL: ttl, Wait: true, WaitOptions: o})
	return g.Fences, err
}
