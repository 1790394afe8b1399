package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// MaxBodyBytes bounds every request body (larger: 413).
const MaxBodyBytes = 64 << 10

// decodeBody reads one JSON object into v (a pointer to one of the api
// request types): size-limited, unknown fields and trailing data rejected.
// It is the only decode of a body on this node: it returns the raw bytes
// so that a follower forwards exactly what it was sent, and the wait cap
// reads the decoded request instead of parsing the body a second time.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			return nil, fmt.Errorf("cluster: request body over %d bytes: %w", MaxBodyBytes, err)
		}
		return nil, invalidf("body", "%s", printable(err.Error()))
	}
	// encoding/json would turn invalid bytes into U+FFFD, so "a\xff" and
	// "a\xfe" would name one lock: refuse them instead.
	if !utf8.Valid(raw) {
		return nil, invalidf("body", "not valid UTF-8")
	}
	// encoding/json also turns an escaped lone surrogate ("\ud800") into
	// U+FFFD: refuse those for the same reason.
	if at := loneSurrogate(raw); at >= 0 {
		return nil, invalidf("body", "lone UTF-16 surrogate escape %q at byte %d is not Unicode text", raw[at:at+6], at)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, bodyError(err, v)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidf("body", "unexpected data after the JSON object")
	}
	return raw, nil
}

// bodyError turns a decoding error into a 400 that names the field at
// fault in the API's terms: encoding/json's own messages name Go types
// ("Go struct field AcquireRequest.ttl_ms of type int64"), which mean
// nothing to a client.
func bodyError(err error, v any) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return invalidf("body", "empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("body", "the JSON object is cut short")
	case errors.As(err, &syntaxErr):
		return invalidf("body", "not valid JSON at byte %d: %s", syntaxErr.Offset,
			printable(strings.TrimPrefix(syntaxErr.Error(), "json: ")))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return invalidf("body", "must be a JSON object, not %s", jsonKind(typeErr.Value))
		}
		return invalidf(typeErr.Field, "must be %s, not %s", wantKind(typeErr.Type, typeErr.Value), jsonKind(typeErr.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return invalidf("body", "unknown field %s; the fields are %s", printable(name), strings.Join(jsonFields(v), ", "))
	}
	return invalidf("body", "%s", printable(strings.TrimPrefix(err.Error(), "json: ")))
}

// wantKind names what a field of type t must hold, in JSON terms. value is
// what was sent ("number 1.5", "string"), from json.UnmarshalTypeError.
func wantKind(t reflect.Type, value string) string {
	sentNumber := strings.HasPrefix(value, "number")
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if sentNumber {
			return "an integer in range"
		}
		return "a number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if sentNumber {
			return "a non-negative integer in range"
		}
		return "a number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// jsonKind names a value as json.UnmarshalTypeError reports it ("number
// 1.5", "string", "array"): a number as itself, anything else by its kind.
func jsonKind(value string) string {
	if n, ok := strings.CutPrefix(value, "number "); ok {
		return printable(n)
	}
	switch value {
	case "array", "object":
		return "an " + value
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "null":
		return "null"
	}
	return "a " + printable(value)
}

// jsonFields lists the JSON names of the fields of the struct v points to.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// An embedded request's fields are the body's own, as
			// encoding/json decodes them.
			names = append(names, jsonFields(reflect.New(f.Type).Interface())...)
			continue
		}
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// printable escapes control characters: encoding/json quotes parts of
// the input in its errors (an unknown field's name) as they are, and a
// newline from a request must not start a new line of a message or log.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// loneSurrogate returns the offset of the first \uXXXX escape in a JSON
// text that is half of a UTF-16 surrogate pair without its other half,
// or -1. Backslashes only occur inside strings in valid JSON, so the scan
// needs no string state; invalid JSON fails to decode anyway.
func loneSurrogate(raw []byte) int {
	pendingHigh := -1 // offset of a high surrogate waiting for its low half
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			if pendingHigh >= 0 {
				return pendingHigh
			}
			continue
		}
		if i+1 >= len(raw) || raw[i+1] != 'u' || i+6 > len(raw) {
			if pendingHigh >= 0 {
				return pendingHigh
			}
			i++ // an escape such as \\ or \": skip its second byte
			continue
		}
		r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			i++ // not an escape json accepts: the decoder reports it
			continue
		}
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if pendingHigh >= 0 {
				return pendingHigh
			}
			pendingHigh = i
		case r >= 0xdc00 && r < 0xe000:
			if pendingHigh < 0 {
				return i
			}
			pendingHigh = -1
		default:
			if pendingHigh >= 0 {
				return pendingHigh
			}
		}
		i += 5
	}
	return pendingHigh
}

// Field checks: what a request may name, checked after its one decode
// and before the Store sees it, so that every Store gets only requests
// the API accepts and a follower refuses a bad one without a hop.

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

func checkKey(key string) error { return checkName("key", key, "empty", drivers.MaxKeyLen) }

func checkOwner(owner string) error { return checkName("owner", owner, "missing", drivers.MaxOwnerLen) }

// checkName checks a key or an owner: not absent, at most limit bytes,
// valid UTF-8.
func checkName(field, v, absent string, limit int) error {
	switch {
	case v == "":
		return invalidf(field, "%s", absent)
	case len(v) > limit:
		return invalidf(field, "%d bytes, the limit is %d", len(v), limit)
	case !utf8.ValidString(v):
		return invalidf(field, "not valid UTF-8")
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

// checkMaxHold checks an acquire's max_hold_ms: 0 (no cap) or a duration
// in the TTL's range, as api.MaxHoldLimitMillis says.
func checkMaxHold(ms int64) (time.Duration, error) {
	if ms < 0 || ms > api.MaxHoldLimitMillis {
		return 0, invalidf("max_hold_ms", "%d is out of range [0, %d] (0: no cap)", ms, int64(api.MaxHoldLimitMillis))
	}
	return api.Duration(ms), nil
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
