package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// multiOutcome is what acquireAll decided: every grant, in the order of
// the keys, or the key that was busy and its holder's grant.
type multiOutcome struct {
	ok     bool
	grants []Grant
	busy   Grant // the holder of the first busy key found (Key names it)
	err    error
}

// checkKeys refuses a set of keys that acquireAll cannot take: none, too
// many, an empty or repeated one.
func checkKeys(keys []string) error {
	if len(keys) == 0 || len(keys) > drivers.MaxMultiKeys {
		return invalid("keys", fmt.Sprintf("must name between 1 and %d keys", drivers.MaxMultiKeys))
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if k == "" {
			return invalid("key", "empty")
		}
		if _, dup := seen[k]; dup {
			return invalid("keys", fmt.Sprintf("key %q is named twice", k))
		}
		seen[k] = struct{}{}
	}
	return nil
}

// acquireAll takes every key for owner for ttl, refreshing those owner
// holds, in one step: it first finds whether all can be taken, and only
// then changes the table, so a busy key leaves every other key as it was.
// A key is busy when another owner holds it and its deadline has not
// passed, or when it has passed but waiters are queued (they come first:
// the expiry hands it to them). The first new grant's fence comes from
// want, as for acquire; the next ones follow the counter.
func (t *table) acquireAll(keys []string, owner string, ttl time.Duration, want uint64) multiOutcome {
	if err := checkKeys(keys); err != nil {
		return multiOutcome{err: err}
	}
	if owner == "" {
		return multiOutcome{err: invalid("owner", "empty")}
	}
	if err := checkTTL(ttl); err != nil {
		return multiOutcome{err: err}
	}
	fresh := 0
	for _, k := range keys {
		e := t.entries[k]
		switch {
		case e == nil:
			fresh++
		case e.isShared():
			return multiOutcome{err: kindMismatch(e, Claim{})}
		case e.deadline <= t.now && e.waiters() == 0:
		case e.owner == owner && e.deadline > t.now:
		default:
			return multiOutcome{busy: e.grant()}
		}
	}
	if t.maxKeys > 0 && len(t.entries)+fresh > t.maxKeys {
		return multiOutcome{err: fmt.Errorf("engine: key limit %d reached: %w", t.maxKeys, drivers.ErrFull)}
	}
	out := multiOutcome{ok: true, grants: make([]Grant, len(keys))}
	for i, k := range keys {
		// Every key was found free, expired without waiters, or owner's:
		// acquire grants or refreshes each, with no hand-off.
		o := t.acquire(k, owner, ttl, want, false, nil)
		out.grants[i] = o.grant
	}
	return out
}

// AcquireAll takes every key for owner for ttl in one step, refreshing
// those owner holds already, and returns the grants in the order of keys.
// When another owner holds any of them nothing changes: ok is false and
// busy is that key's holder's grant (busy.Key names it). The keys must be
// distinct, at most drivers.MaxMultiKeys.
//
// ctx is heeded until the command reaches the engine, as for Acquire.
func (e *Engine) AcquireAll(ctx context.Context, keys []string, owner string, ttl time.Duration) (grants []Grant, busy Grant, ok bool, err error) {
	r := newReq(kAcquireAll, "", owner, ttl)
	r.keys = keys
	if err := e.settle(ctx, r); err != nil {
		return nil, Grant{}, false, err
	}
	grants, busy, ok, err = r.grants, r.grant, r.ok, r.err
	putReq(r)
	return grants, busy, ok && err == nil, err
}
