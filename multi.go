package lock

import (
	"context"
	"slices"
	"time"
)

// MultiFunc is the work done while every lock of a TryAll or BlockAll is
// held. ctx is cancelled as soon as any of them is lost, or about to be
// (context.Cause says which: a *LostError with its Key), or when the
// caller's context ends. locks are the held locks in the order of the
// keys as given; each has its own Fence.
type MultiFunc func(ctx context.Context, locks []*Lock) error

// MaxMultiKeys is the most keys one TryAll or BlockAll takes.
const MaxMultiKeys = 64

// TryAll acquires every key once, all or none, and runs fn while holding
// them; when another owner holds one of them it returns that key's
// *NotAcquiredError at once, having released the keys it took, without
// running fn. Keys are taken in sorted order, so two callers naming the
// same keys in any order never deadlock; a duplicate key counts once.
//
// It is the ordered fallback on every backend: between the first grant and
// the last the caller holds some of the keys, and a concurrent TryAll of
// an overlapping set may fail where one of the two could have won. The
// options are those of Try (WithRefresh, WithOwner, ...), applied to each
// key.
func (m *Manager) TryAll(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts ...Option) error {
	return m.all(ctx, keys, ttl, fn, opts, false)
}

// BlockAll waits for every key, in sorted order, holding the ones it has
// while it waits for the next (which cannot deadlock against another
// BlockAll: all take their keys in the same order), then runs fn while
// holding them all. WithTimeout bounds the whole wait (default: the TTL);
// when it passes, the keys taken are released and the *NotAcquiredError of
// the key still waited for is returned. The other options are those of
// Block, applied to each key.
func (m *Manager) BlockAll(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts ...Option) error {
	return m.all(ctx, keys, ttl, fn, opts, true)
}

func (m *Manager) all(ctx context.Context, keys []string, ttl time.Duration, fn MultiFunc, opts []Option, wait bool) error {
	if fn == nil {
		return &InvalidError{Field: "fn", Reason: "must not be nil"}
	}
	if len(keys) == 0 || len(keys) > MaxMultiKeys {
		return &InvalidError{Field: "keys", Reason: "must name between 1 and 64 keys"}
	}
	order := slices.Clone(keys)
	slices.Sort(order)
	order = slices.Compact(order)
	// Every key and option is checked before the first grant.
	if err := validateTTL(ttl); err != nil {
		return err
	}
	for _, k := range order {
		if err := validateKey(m.prefix, k); err != nil {
			return err
		}
	}
	o, err := buildOptions(ttl, opts)
	if err != nil {
		return err
	}
	if o.claim.Kind != 0 {
		return &InvalidError{Field: "option", Reason: "TryAll and BlockAll take mutexes only: Semaphore, Read and Write do not apply"}
	}
	deadline := time.Now().Add(o.timeout)
	held := make(map[string]*Lock, len(order))
	var take func(ctx context.Context, i int) error
	take = func(ctx context.Context, i int) error {
		if i == len(order) {
			locks := make([]*Lock, len(keys))
			for j, k := range keys {
				locks[j] = held[k]
			}
			return fn(ctx, locks)
		}
		next := func(ctx context.Context, l *Lock) error {
			held[order[i]] = l
			return take(ctx, i+1)
		}
		if !wait {
			return m.Try(ctx, order[i], ttl, next, opts...)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &NotAcquiredError{Key: order[i]}
		}
		return m.Block(ctx, order[i], ttl, next, append(slices.Clip(opts), WithTimeout(left))...)
	}
	return take(ctx, 0)
}
