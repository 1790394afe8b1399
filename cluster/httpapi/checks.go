package httpapi

// Field checks: what a request may name, checked after its one decode
// and before the Store sees it, so that every Store gets only requests
// the API accepts and a follower refuses a bad one without a hop.

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// checkJoin refuses a join whose fields are too long to record.
func checkJoin(r *api.JoinRequest) error {
	return errors.Join(checkMemberID(r.ID), checkMemberAddr("addr", r.Addr), checkMemberAddr("http", r.HTTP))
}

// checkMemberID refuses ids a node could not be configured with; an
// empty id is left to the handler ("missing").
func checkMemberID(id string) error {
	switch {
	case len(id) > drivers.MaxMemberIDLen:
		return invalidf("id", "%d bytes, the limit is %d", len(id), drivers.MaxMemberIDLen)
	case !utf8.ValidString(id):
		return invalidf("id", "not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsSpace):
		return invalidf("id", "contains white space")
	}
	return nil
}

func checkMemberAddr(field, addr string) error {
	if len(addr) > drivers.MaxMemberAddrLen {
		return invalidf(field, "%d bytes, the limit is %d", len(addr), drivers.MaxMemberAddrLen)
	}
	return nil
}

func checkKey(key string) error {
	switch {
	case key == "":
		return invalidf("key", "empty")
	case len(key) > drivers.MaxKeyLen:
		return invalidf("key", "%d bytes, the limit is %d", len(key), drivers.MaxKeyLen)
	case !utf8.ValidString(key):
		return invalidf("key", "not valid UTF-8")
	}
	return nil
}

func checkOwner(owner string) error {
	switch {
	case owner == "":
		return invalidf("owner", "missing")
	case len(owner) > drivers.MaxOwnerLen:
		return invalidf("owner", "%d bytes, the limit is %d", len(owner), drivers.MaxOwnerLen)
	case !utf8.ValidString(owner):
		return invalidf("owner", "not valid UTF-8")
	}
	return nil
}

func checkTTL(ms int64) (time.Duration, error) {
	ttl := time.Duration(ms) * time.Millisecond
	if ms < 1 || ms > int64(drivers.MaxTTL/time.Millisecond) {
		return 0, invalidf("ttl_ms", "%d is out of range [%d, %d]", ms, drivers.MinTTL.Milliseconds(), drivers.MaxTTL.Milliseconds())
	}
	return ttl, nil
}

// parseQuery reads a GET request's query as strictly as a body is read:
// a malformed escape, an unknown parameter or a repeated one is a 400,
// not silently dropped (r.URL.Query would drop it and, say, list every
// lock instead of the prefix the caller misspelled).
func parseQuery(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidf("query", "%v", err)
	}
	for name, vals := range q {
		if !slices.Contains(allowed, name) {
			return nil, invalidf("query", "unknown parameter %q (this endpoint takes %s)", name, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, invalidf("query", "parameter %q given %d times", name, len(vals))
		}
	}
	return q, nil
}
