// Package stream is the framing of the API's stream: many requests of the
// HTTP API multiplexed over one connection, for the Go client.
//
// Each request on plain HTTP/1.1 costs its own header parse and, on both
// ends, its own read and write system calls; under load these are most of
// a node's HTTP work. On the stream a request is a small binary frame
// carrying the same method, path and JSON body, answered by a frame with
// the same status and JSON body, and both ends write every frame that is
// ready in one system call. What a request means, and every check on it,
// is the HTTP API's: the node serves each frame with the very handler
// that serves plain HTTP.
//
// A client opens the stream with an HTTP/1.1 upgrade: GET Path with
// "Connection: Upgrade" and "Upgrade: Protocol", and the headers every
// request of the stream then carries (the bearer token, the cluster ID).
// The node answers "101 Switching Protocols" once the token and cluster
// ID are checked; any other answer means the node does not serve the
// stream (an older version: use plain HTTP) or refused the headers.
//
// After the upgrade each side sends frames: a length (uvarint) and that
// many bytes. A client frame is a request or the cancellation of one; a
// node frame is the answer to one, in any order (a waiting acquire may
// be answered long after requests sent later).
//
//	request:  id (uvarint), kind (1 GET, 2 POST), target (uvarint length, path?query), body
//	cancel:   id (uvarint), kind 3
//	answer:   id (uvarint), status (uvarint), body
//
// The id is the client's, unique among its requests in progress on the
// stream. Cancelling a request ends its context on the node, as closing
// an HTTP connection does; closing the stream cancels every request in
// progress on it.
package stream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/zerotal/lock/api"
)

// Path is the API path that upgrades a connection to the stream, and
// Protocol the Upgrade header's value.
const (
	Path     = "/v1/stream"
	Protocol = "lockcluster-stream/1"
)

// Headers are the headers of the upgrade that every request of the
// stream carries: the node serves each frame with them, and a client
// needs a stream of its own for each set of them.
var Headers = []string{api.HeaderAuthorization, api.HeaderClusterID}

// MaxFrame bounds a request frame's length: a request body of the API is
// at most 64 KiB, its target a path and a short query. MaxAnswer bounds an
// answer frame's: a list of locks, or the metrics, may be large.
const (
	MaxFrame  = 80 << 10
	MaxAnswer = 32 << 20
)

// Frame kinds of a client frame.
const (
	kindGet    = 1
	kindPost   = 2
	kindCancel = 3
)

// ErrMalformed reports a frame that breaks the layout or MaxFrame; the
// connection cannot be read further and is closed.
var ErrMalformed = errors.New("stream: malformed frame")

// Request is a client frame: a request (Method and Target set) or, with
// Cancel, the cancellation of the request ID.
type Request struct {
	ID     uint64
	Cancel bool
	Method string // http.MethodGet or http.MethodPost
	Target string // path and query, as in an HTTP request line
	Body   []byte
}

// Answer is a node frame: the answer to request ID.
type Answer struct {
	ID     uint64
	Status int
	Body   []byte
}

// AppendRequest appends r's frame to b.
func AppendRequest(b []byte, r Request) ([]byte, error) {
	var kind byte
	switch {
	case r.Cancel:
		kind = kindCancel
	case r.Method == http.MethodGet:
		kind = kindGet
	case r.Method == http.MethodPost:
		kind = kindPost
	default:
		return b, fmt.Errorf("stream: method %q is not carried (GET and POST are)", r.Method)
	}
	var head [2*binary.MaxVarintLen64 + 1]byte
	h := binary.AppendUvarint(head[:0], r.ID)
	h = append(h, kind)
	n := len(h)
	if !r.Cancel {
		n += uvarintLen(uint64(len(r.Target))) + len(r.Target) + len(r.Body)
	}
	if n > MaxFrame {
		return b, fmt.Errorf("stream: a %d-byte request is over the %d-byte frame limit", n, MaxFrame)
	}
	b = binary.AppendUvarint(b, uint64(n))
	b = append(b, h...)
	if !r.Cancel {
		b = binary.AppendUvarint(b, uint64(len(r.Target)))
		b = append(b, r.Target...)
		b = append(b, r.Body...)
	}
	return b, nil
}

// AppendAnswer appends a's frame to b. A body that would break MaxAnswer
// is an error (no answer of the API is that large).
func AppendAnswer(b []byte, a Answer) ([]byte, error) {
	n := uvarintLen(a.ID) + uvarintLen(uint64(a.Status)) + len(a.Body)
	if n > MaxAnswer || a.Status < 100 || a.Status > 999 {
		return b, fmt.Errorf("stream: cannot frame an answer of status %d and %d bytes", a.Status, len(a.Body))
	}
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, a.ID)
	b = binary.AppendUvarint(b, uint64(a.Status))
	return append(b, a.Body...), nil
}

// ReadFrame reads one frame's bytes (after its length) into buf's room,
// reallocating when it is short; a frame over limit (MaxFrame for
// requests, MaxAnswer for answers) is malformed. started is called once the frame's first
// byte has arrived, before the rest is read (the node bounds the time a
// frame may take from there); nil: not called.
func ReadFrame(r *bufio.Reader, buf []byte, limit int, started func()) ([]byte, error) {
	if _, err := r.Peek(1); err != nil {
		return nil, err
	}
	if started != nil {
		started()
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("%w: length: %w", ErrMalformed, unexpectedEOF(err))
	}
	if n == 0 || n > uint64(limit) {
		return nil, fmt.Errorf("%w: length %d (1 to %d)", ErrMalformed, n, limit)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("%w: %d-byte frame: %w", ErrMalformed, n, unexpectedEOF(err))
	}
	return buf, nil
}

// ParseRequest parses a client frame read by ReadFrame. Target and Body
// alias b.
func ParseRequest(b []byte) (Request, error) {
	var r Request
	id, n := binary.Uvarint(b)
	if n <= 0 || len(b) == n {
		return r, fmt.Errorf("%w: request id", ErrMalformed)
	}
	r.ID, b = id, b[n:]
	kind := b[0]
	b = b[1:]
	switch kind {
	case kindCancel:
		if len(b) != 0 {
			return r, fmt.Errorf("%w: %d bytes after a cancel", ErrMalformed, len(b))
		}
		r.Cancel = true
		return r, nil
	case kindGet:
		r.Method = http.MethodGet
	case kindPost:
		r.Method = http.MethodPost
	default:
		return r, fmt.Errorf("%w: kind %d", ErrMalformed, kind)
	}
	tl, n := binary.Uvarint(b)
	if n <= 0 || tl == 0 || tl > uint64(len(b)-n) {
		return r, fmt.Errorf("%w: target", ErrMalformed)
	}
	b = b[n:]
	r.Target, r.Body = string(b[:tl]), b[tl:]
	if r.Target[0] != '/' {
		return r, fmt.Errorf("%w: target %q is not a path", ErrMalformed, r.Target)
	}
	return r, nil
}

// ParseAnswer parses a node frame read by ReadFrame. Body aliases b.
func ParseAnswer(b []byte) (Answer, error) {
	var a Answer
	id, n := binary.Uvarint(b)
	if n <= 0 {
		return a, fmt.Errorf("%w: answer id", ErrMalformed)
	}
	b = b[n:]
	st, n := binary.Uvarint(b)
	if n <= 0 || st < 100 || st > 999 {
		return a, fmt.Errorf("%w: answer status", ErrMalformed)
	}
	a.ID, a.Status, a.Body = id, int(st), b[n:]
	return a, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
