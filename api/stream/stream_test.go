package stream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestFrames_RoundTrip(t *testing.T) {
	reqs := []Request{
		{ID: 1, Method: http.MethodPost, Target: "/v1/acquire", Body: []byte(`{"key":"k"}`)},
		{ID: 1 << 40, Method: http.MethodGet, Target: "/v1/lock?key=a%20b"},
		{ID: 7, Cancel: true},
	}
	var wire []byte
	for _, r := range reqs {
		var err error
		if wire, err = AppendRequest(wire, r); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(bytes.NewReader(wire))
	for i, want := range reqs {
		started := false
		f, err := ReadFrame(br, nil, MaxFrame, func() { started = true })
		if err != nil || !started {
			t.Fatalf("frame %d: %v (started %v)", i, err, started)
		}
		got, err := ParseRequest(f)
		if err != nil || got.ID != want.ID || got.Cancel != want.Cancel || got.Method != want.Method ||
			got.Target != want.Target || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("frame %d = %+v, %v; want %+v", i, got, err, want)
		}
	}
	if _, err := ReadFrame(br, nil, MaxFrame, nil); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}

	a := Answer{ID: 9, Status: 409, Body: []byte(`{"code":"not_acquired"}`)}
	b, err := AppendAnswer(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)), nil, MaxAnswer, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseAnswer(f)
	if err != nil || got.ID != a.ID || got.Status != a.Status || !bytes.Equal(got.Body, a.Body) {
		t.Fatalf("answer = %+v, %v", got, err)
	}
}

func TestFrames_RefuseWhatBreaksTheLayout(t *testing.T) {
	if _, err := AppendRequest(nil, Request{ID: 1, Method: http.MethodPut, Target: "/"}); err == nil {
		t.Error("PUT framed")
	}
	if _, err := AppendRequest(nil, Request{ID: 1, Method: http.MethodPost, Target: "/", Body: make([]byte, MaxFrame)}); err == nil {
		t.Error("a frame over MaxFrame accepted")
	}
	if _, err := AppendAnswer(nil, Answer{ID: 1, Status: 200, Body: make([]byte, MaxAnswer)}); err == nil {
		t.Error("an answer over MaxAnswer framed")
	}
	big, err := AppendAnswer(nil, Answer{ID: 1, Status: 200, Body: make([]byte, MaxFrame)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(big)), nil, MaxFrame, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("an answer-sized frame read as a request: %v", err)
	}
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(big)), nil, MaxAnswer, nil); err != nil {
		t.Errorf("a large answer: %v", err)
	}
	if _, err := AppendAnswer(nil, Answer{ID: 1, Status: 42}); err == nil {
		t.Error("status 42 framed")
	}
	frames := map[string][]byte{
		"zero length":   {0},
		"over MaxFrame": {0xff, 0xff, 0x7f},
		"truncated":     {5, 1, 2},
		"length varint": {0x80},
	}
	for name, b := range frames {
		if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)), nil, MaxAnswer, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ReadFrame = %v, want ErrMalformed", name, err)
		}
	}
	requests := map[string][]byte{
		"empty":           {},
		"no kind":         {1},
		"unknown kind":    {1, 9, 1, '/'},
		"cancel trailing": {1, kindCancel, 0},
		"no target":       {1, kindGet, 0},
		"target past end": {1, kindGet, 5, '/'},
		"not a path":      {1, kindPost, 1, 'x'},
	}
	for name, b := range requests {
		if _, err := ParseRequest(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseRequest = %v, want ErrMalformed", name, err)
		}
	}
	for name, b := range map[string][]byte{"empty": {}, "no status": {1}, "status 99": {1, 99}} {
		if _, err := ParseAnswer(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ParseAnswer = %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzParseRequest: no frame makes the parser panic, and what it accepts
// frames back to a frame it parses the same.
func FuzzParseRequest(f *testing.F) {
	for _, r := range []Request{
		{ID: 3, Method: http.MethodPost, Target: "/v1/release", Body: []byte(`{}`)},
		{ID: 4, Cancel: true},
		{ID: 5, Method: http.MethodGet, Target: "/v1/locks?prefix=" + strings.Repeat("a", 40)},
	} {
		b, _ := AppendRequest(nil, r)
		f.Add(b[1:]) // without the length
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if err != nil {
			return
		}
		wire, err := AppendRequest(nil, r)
		if err != nil {
			return // a target and body over MaxFrame together: never read
		}
		fr, err := ReadFrame(bufio.NewReader(bytes.NewReader(wire)), nil, MaxFrame, nil)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		r2, err := ParseRequest(fr)
		if err != nil || r2.ID != r.ID || r2.Cancel != r.Cancel || r2.Method != r.Method || r2.Target != r.Target || !bytes.Equal(r2.Body, r.Body) {
			t.Fatalf("re-parse = %+v, %v; want %+v", r2, err, r)
		}
	})
}
