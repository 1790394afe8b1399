package lock

import (
	"fmt"
	"time"
)

// DefaultRetryDelay is the pause between two attempts of Block on a driver
// that cannot be told when a key frees (see drivers.Waiter).
const DefaultRetryDelay = 100 * time.Millisecond

// Option tunes one Try, Block or Lock.Block call.
type Option func(*options)

type options struct {
	timeout      time.Duration // 0: the TTL
	retryDelay   time.Duration
	refresh      bool
	refreshEvery time.Duration // 0: TTL/3
	err          error         // the first invalid option
}

func (o *options) invalid(field, format string, args ...any) {
	if o.err == nil {
		o.err = &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

// WithTimeout sets how long Block waits for the lock before it gives up
// with a *NotAcquiredError. The default is the lock's TTL. Try ignores it.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("timeout", "must be positive, got %v", d)
			return
		}
		o.timeout = d
	}
}

// WithRetryDelay sets the pause between two attempts when Block has to poll
// (the driver does not implement drivers.Waiter); a small random jitter is
// added so that pollers spread out. Pushed drivers may use it as an upper
// bound for their own fallback polling. The default is DefaultRetryDelay.
func WithRetryDelay(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("retry delay", "must be positive, got %v", d)
			return
		}
		o.retryDelay = d
	}
}

// WithRefresh keeps the lock alive while the callback runs, by extending it
// every third of its TTL. When a refresh finds the lock gone, or the backend
// stays unreachable until the TTL runs out, the callback's context is
// cancelled with a *LostError as its cause and the call returns it.
func WithRefresh() Option {
	return func(o *options) { o.refresh = true }
}

// WithRefreshEvery is WithRefresh with an explicit interval, which must be
// shorter than the TTL. Leave room for at least one failed attempt: a third
// of the TTL (the default) survives one missed beat.
func WithRefreshEvery(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.invalid("refresh interval", "must be positive, got %v", d)
			return
		}
		o.refresh = true
		o.refreshEvery = d
	}
}

// buildOptions applies opts and fills in the defaults that depend on ttl.
func buildOptions(ttl time.Duration, opts []Option) (options, error) {
	o := options{retryDelay: DefaultRetryDelay}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return o, o.err
	}
	if o.timeout == 0 {
		o.timeout = ttl
	}
	if o.refresh {
		if o.refreshEvery == 0 {
			o.refreshEvery = ttl / 3
		}
		if o.refreshEvery >= ttl {
			return o, &InvalidError{Field: "refresh interval", Reason: fmt.Sprintf("%v must be shorter than the ttl %v", o.refreshEvery, ttl)}
		}
	}
	return o, nil
}
