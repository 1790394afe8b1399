package fence

import (
	"fmt"
	"net/http"
)

// Holder is where a client's fence comes from: a *lock.Lock is one. Its
// Key names the resource: a resource must be guarded by one lock key,
// since only the fences of one key are ordered.
type Holder interface {
	Key() string
	Fence() uint64
}

// SetHeader sets h's Header to l's key and current fence.
func SetHeader(h http.Header, l Holder) {
	h.Set(Header, FormatHeader(l.Key(), l.Fence()))
}

// Transport is an http.RoundTripper that sends every request with
// Lock's key and fence in the Header, read when the request is sent. A
// request made while Lock is not held (fence 0) is not sent: RoundTrip
// returns an error matching ErrInvalid.
type Transport struct {
	Base http.RoundTripper // http.DefaultTransport when nil
	Lock Holder
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	key, fence := t.Lock.Key(), t.Lock.Fence()
	if err := validate(key, fence); err != nil {
		if r.Body != nil {
			_ = r.Body.Close() // RoundTrip closes the body, also on errors
		}
		return nil, fmt.Errorf("%w (is the lock held?)", err)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	r.Header.Set(Header, FormatHeader(key, fence))
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// CheckResponse returns a *StaleError (matching ErrStale) when resp is
// Handler's refusal of an older holder's request, and nil otherwise. Its
// Fence is the request's, when resp.Request carries it.
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode != http.StatusPreconditionFailed {
		return nil
	}
	resource, highest, err := ParseHeader(resp.Header.Get(Header))
	if err != nil {
		return nil // a 412 of something else
	}
	e := &StaleError{Resource: resource, Highest: highest}
	if resp.Request != nil {
		if _, fence, err := ParseHeader(resp.Request.Header.Get(Header)); err == nil {
			e.Fence = fence
		}
	}
	return e
}
