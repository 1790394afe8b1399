package lock

import (
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// DefaultRetryDelay is the pause between two attempts of Block on a driver
// that cannot be told when a key frees (see drivers.Capabilities.Wait).
const DefaultRetryDelay = 100 * time.Millisecond

// Option tunes one Try, Block or Lock.Block call. Build it with the With
// functions; the zero Option does nothing.
//
// (An Option is a small value rather than a function so that applying
// options costs no allocation on every call.)
type Option struct {
	kind  optionKind
	owner string
	d     time.Duration
	claim drivers.Claim
}

type optionKind uint8

const (
	optNone optionKind = iota
	optTimeout
	optRetryDelay
	optRefresh
	optRefreshEvery
	optSafetyMargin
	optReleaseTimeout
	optOwner
	optClaim
	optMaxHold
)

// WithTimeout sets how long Block waits for the lock before it gives up
// with a *NotAcquiredError. The default is the lock's TTL. Try ignores it.
func WithTimeout(d time.Duration) Option { return Option{kind: optTimeout, d: d} }

// WithRetryDelay sets the pause between two attempts when Block has to poll
// (the driver does not wait itself: drivers.Capabilities.Wait); a small
// random jitter is added so that pollers spread out. Pushed drivers may use
// it as an upper bound for their own fallback polling. The default is DefaultRetryDelay;
// the shortest accepted is MinInterval.
func WithRetryDelay(d time.Duration) Option { return Option{kind: optRetryDelay, d: d} }

// WithRefresh keeps the lock alive while the callback runs, by extending it
// every third of its TTL. When a refresh finds the lock gone, or refreshes
// keep failing until the safety margin before the TTL (WithSafetyMargin),
// the callback's context is cancelled with a *LostError as its cause and
// the call returns it.
func WithRefresh() Option { return Option{kind: optRefresh} }

// WithRefreshEvery is WithRefresh with an explicit interval, which must be
// at least MinInterval and shorter than the TTL less the safety margin.
// Leave room for at least one failed attempt: a third of the TTL (the
// default) survives one missed beat.
func WithRefreshEvery(d time.Duration) Option { return Option{kind: optRefreshEvery, d: d} }

// WithSafetyMargin sets how long before the lock's estimated expiry the
// callback's context is cancelled when the lock has not been extended in
// time: the backend may hand the key on at the expiry itself, so the holder
// is told this much earlier, to leave it time to stop. It applies with and
// without refresh; with refresh, it is also the deadline of the refreshes
// that keep failing. The default is a fifth of the TTL; 0 tells the holder
// only at the estimated expiry. It must be shorter than the TTL.
func WithSafetyMargin(d time.Duration) Option { return Option{kind: optSafetyMargin, d: d} }

// WithReleaseTimeout bounds the release at the end of Try and Block: by
// default it is bounded by the caller's ctx alone (and the driver's own
// timeouts). A release that has not been answered by then is tried again
// in the background (as one after the caller's ctx ended is), bounded by d
// too, and Try or Block returns; the lock expires by its TTL if the
// backend never answers. Shutdown waits for such releases.
func WithReleaseTimeout(d time.Duration) Option { return Option{kind: optReleaseTimeout, d: d} }

// WithOwner makes owner the owner token of the grant Try or Block takes,
// instead of a fresh random one, so that another process can act for the
// holder: "lockcluster run --owner" gives it to its command (LOCK_OWNER),
// which can extend or release the lock through the HTTP API. One owner is
// one holder: a second call with the same owner while the first holds the
// key refreshes that grant (same fence) rather than waiting for it, so give
// each holder its own. A call with a named owner that fails with an
// unknown outcome leaves a grant it may have made to its TTL (or to the
// owner's next call), since releasing it could free a later call's grant.
// owner must be non-empty valid UTF-8, at most drivers.MaxOwnerLen bytes.
func WithOwner(owner string) Option { return Option{kind: optOwner, owner: owner} }

// WithMaxHold caps the total time each grant of the call can be held,
// however often it is refreshed: the backend itself records the cap when
// it grants the key (counted from that moment) and lets no refresh take
// the grant past it, so a holder that is alive but wedged, refreshing in
// a loop, cannot keep the key longer. At the cap the grant ends like an
// expiry and the next waiter is served.
//
// The callback's context is cancelled a safety margin before the cap
// (WithSafetyMargin), refreshing or not, with a *LostError whose Reason
// is ErrLostMaxHold; Lock.ExpiresAt never passes it. The holder counts
// the cap from when it sent the acquire, so its estimate is never later
// than the backend's; after a long wait for the key, which counts from
// the grant, it raises the estimate from how long the backend says the
// grant has left (drivers.Inspector), asked after each refresh until that
// answer shows the cap. The key is released when the callback returns. With WithOwner,
// an acquire that finds the owner holding the key already refreshes that
// grant, which keeps its own cap, counted from its own grant: give each
// holder its own owner, as WithOwner asks.
//
// It applies to Try, Block, TryAll and BlockAll, and to Make, for every
// acquire of the handle. d = 0 means no cap (the default); otherwise d is
// at most drivers.MaxTTL and, for the calls with a callback, longer than
// the safety margin. A backend that cannot enforce a cap itself
// (drivers.Capabilities.MaxHold) refuses it with an error matching
// ErrUnsupported before anything is taken: a cap the holder alone kept
// would be no cap against a wedged holder.
func WithMaxHold(d time.Duration) Option { return Option{kind: optMaxHold, d: d} }

// MinInterval is the shortest retry delay and refresh interval accepted:
// shorter ones would turn waiting and refreshing into a busy loop of
// backend calls.
const MinInterval = time.Millisecond

// options is the result of applying Options to a call.
type options struct {
	timeout      time.Duration // default: the TTL
	retryDelay   time.Duration
	refresh      bool
	refreshEvery time.Duration // default: TTL/3
	margin       time.Duration // default: TTL/5
	marginSet    bool          // 0 is a valid margin
	release      time.Duration // 0: the caller's ctx bounds the release
	owner        string        // "": a fresh token per grant
	claim        drivers.Claim // Semaphore, Read, Write: one of them, once
	maxHold      time.Duration // 0: no cap (WithMaxHold)
}

// buildOptions applies opts and fills in the defaults that depend on ttl.
// Invalid values are reported as *InvalidError, the first one wins.
func buildOptions(ttl time.Duration, opts []Option) (options, error) {
	o := options{retryDelay: DefaultRetryDelay}
	var claim oneClaim
	for _, opt := range opts {
		if opt.kind == optClaim {
			if err := claim.add(opt); err != nil {
				return o, err
			}
			o.claim = claim.c
			continue
		}
		if opt.kind == optOwner {
			if err := validateOwner(opt.owner); err != nil {
				return o, err
			}
			o.owner = opt.owner
			continue
		}
		if opt.kind == optMaxHold {
			if err := validateMaxHold(opt.d); err != nil {
				return o, err
			}
			o.maxHold = opt.d
			continue
		}
		if opt.kind == optSafetyMargin {
			if opt.d < 0 {
				return o, &InvalidError{Field: "safety margin", Reason: fmt.Sprintf("must not be negative, got %v", opt.d)}
			}
			if opt.d >= ttl {
				return o, &InvalidError{Field: "safety margin", Reason: fmt.Sprintf("%v must be shorter than the ttl %v", opt.d, ttl)}
			}
			o.margin, o.marginSet = opt.d, true
			continue
		}
		if opt.kind != optNone && opt.kind != optRefresh && opt.d <= 0 {
			return o, &InvalidError{Field: opt.kind.field(), Reason: fmt.Sprintf("must be positive, got %v", opt.d)}
		}
		if (opt.kind == optRetryDelay || opt.kind == optRefreshEvery) && opt.d < MinInterval {
			return o, &InvalidError{Field: opt.kind.field(), Reason: fmt.Sprintf("must be at least %v, got %v", MinInterval, opt.d)}
		}
		switch opt.kind {
		case optTimeout:
			o.timeout = opt.d
		case optRetryDelay:
			o.retryDelay = opt.d
		case optRefresh:
			o.refresh = true
		case optRefreshEvery:
			o.refresh, o.refreshEvery = true, opt.d
		case optReleaseTimeout:
			o.release = opt.d
		}
	}
	if o.timeout == 0 {
		o.timeout = ttl
	}
	if !o.marginSet {
		o.margin = ttl / 5
	}
	// A cap no longer than the margin would leave the callback no time:
	// its context would be cancelled as it starts.
	if o.maxHold > 0 && o.maxHold <= o.margin {
		return o, &InvalidError{Field: "max hold", Reason: fmt.Sprintf("%v must be longer than the safety margin %v", o.maxHold, o.margin)}
	}
	if o.refresh {
		if o.refreshEvery == 0 {
			o.refreshEvery = ttl / 3
		}
		// A first refresh due after the stop point could never keep the
		// lock: the callback would always be told it is lost.
		if o.refreshEvery >= ttl-o.margin {
			return o, &InvalidError{Field: "refresh interval", Reason: fmt.Sprintf("%v must be shorter than the ttl %v less the safety margin %v", o.refreshEvery, ttl, o.margin)}
		}
	}
	return o, nil
}

func (k optionKind) field() string {
	switch k {
	case optTimeout:
		return "timeout"
	case optRetryDelay:
		return "retry delay"
	case optReleaseTimeout:
		return "release timeout"
	default:
		return "refresh interval"
	}
}
