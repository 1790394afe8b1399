package engine

import (
	"context"
	"time"
)

// The shapes of acquire the tests use, each one call of Engine.Acquire.

func (e *Engine) acquireOne(ctx context.Context, key, owner string, ttl time.Duration) (Grant, bool, error) {
	return e.acquireClaim(ctx, key, owner, ttl, Claim{})
}

func (e *Engine) acquireOneWait(ctx context.Context, key, owner string, ttl time.Duration) (Grant, error) {
	return e.acquireClaimWait(ctx, key, owner, ttl, Claim{})
}

// acquireClaim answers the grant, or the holder in the way.
func (e *Engine) acquireClaim(ctx context.Context, key, owner string, ttl time.Duration, c Claim) (Grant, bool, error) {
	var into [1]Grant
	grants, busy, err := e.Acquire(ctx, AcquireRequest{Keys: []string{key}, Owner: owner, TTL: ttl, Claim: c}, into[:0])
	if grants == nil {
		return busy, false, err
	}
	return grants[0], true, nil
}

func (e *Engine) acquireClaimWait(ctx context.Context, key, owner string, ttl time.Duration, c Claim) (Grant, error) {
	grants, _, err := e.Acquire(ctx, AcquireRequest{Keys: []string{key}, Owner: owner, TTL: ttl, Claim: c, Wait: true}, nil)
	if err != nil {
		return Grant{}, err
	}
	return grants[0], nil
}

func (e *Engine) acquireSet(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]Grant, Grant, bool, error) {
	grants, busy, err := e.Acquire(ctx, AcquireRequest{Keys: keys, Owner: owner, TTL: ttl}, nil)
	return grants, busy, grants != nil, err
}

func (e *Engine) acquireSetWait(ctx context.Context, keys []string, owner string, ttl time.Duration) ([]Grant, Grant, error) {
	return e.Acquire(ctx, AcquireRequest{Keys: keys, Owner: owner, TTL: ttl, Wait: true}, nil)
}
