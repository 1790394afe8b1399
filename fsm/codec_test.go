package fsm

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func allTypesEntries() []Entry {
	return []Entry{
		{Type: TypeAcquire, Key: "invoice:123", Owner: "o-1", TTL: 15 * time.Second, Now: 1_700_000_000_000_000_000, Wait: true},
		{Type: TypeAcquire, Key: "k", Owner: "o", TTL: time.Millisecond, Now: 0},
		{Type: TypeRelease, Key: "a b/c", Owner: "o", Now: 42},
		{Type: TypeExtend, Key: "k", Owner: "o", TTL: time.Hour, Now: -5},
		{Type: TypeForceRelease, Key: "k", Now: 9},
		{Type: TypeExpire, Key: "k", Owner: "o", ExpectFence: 1 << 60, Now: 10},
		{Type: TypeCancelWait, Key: "k", Owner: "o", Now: 11},
		{Type: TypeTick, Now: 12},
		{Type: TypeSetMember, ID: "node-1", HTTPAddr: "127.0.0.1:8080"},
		{Type: TypeRemoveMember, ID: "node-1"},
		{Type: TypeAcquire, Key: strings.Repeat("é", 512), Owner: strings.Repeat("x", maxOwnerLen), TTL: 7 * 24 * time.Hour, Now: 1},
	}
}

func TestCodec_RoundTripsEveryType(t *testing.T) {
	for _, e := range allTypesEntries() {
		b, err := Encode(e)
		if err != nil {
			t.Fatalf("encode %v: %v", e.Type, err)
		}
		if b[0] != byte(e.Type) || b[1] != payloadVersion {
			t.Fatalf("%v: header % x", e.Type, b[:2])
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %v: %v", e.Type, err)
		}
		if got != e {
			t.Fatalf("round trip of %v:\n got %+v\nwant %+v", e.Type, got, e)
		}
	}
}

func TestCodec_TypeNumbersAreStable(t *testing.T) {
	// These numbers are on disk in every log: changing one is a format break.
	want := map[EntryType]uint8{
		TypeAcquire: 1, TypeRelease: 2, TypeExtend: 3, TypeForceRelease: 4, TypeExpire: 5,
		TypeCancelWait: 6, TypeTick: 7, TypeSetMember: 16, TypeRemoveMember: 17,
	}
	for typ, n := range want {
		if uint8(typ) != n {
			t.Errorf("%v = %d, want %d", typ, uint8(typ), n)
		}
	}
}

func TestCodec_DecodeRejectsBadBytes(t *testing.T) {
	good, _ := Encode(Entry{Type: TypeAcquire, Key: "k", Owner: "o", TTL: time.Second, Now: 1})
	long := append([]byte{byte(TypeRelease), payloadVersion}, 0x81, 0x08) // key length 1025
	long = append(long, bytes.Repeat([]byte{'k'}, 1025)...)
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"nil", nil, ErrMalformed},
		{"one byte", []byte{byte(TypeTick)}, ErrMalformed},
		{"unknown type", []byte{0x40, 1}, ErrUnknownType},
		{"zero type", []byte{0, 1}, ErrUnknownType},
		{"bad version", []byte{byte(TypeTick), 2, 0}, ErrMalformed},
		{"truncated", good[:len(good)-1], ErrMalformed},
		{"trailing", append(append([]byte{}, good...), 0), ErrMalformed},
		{"key over limit", long, ErrMalformed},
		{"string past end", []byte{byte(TypeForceRelease), payloadVersion, 5, 'a'}, ErrMalformed},
		{"bad utf8", []byte{byte(TypeForceRelease), payloadVersion, 1, 0xff, 0}, ErrMalformed},
		{"negative ttl", mustEncode(t, Entry{Type: TypeExtend, Key: "k", Owner: "o", TTL: -1}), ErrMalformed},
		{"unknown flag", append(good[:len(good)-1:len(good)-1], 2), ErrMalformed},
		{"overlong varint", append([]byte{byte(TypeTick), payloadVersion}, bytes.Repeat([]byte{0xff}, 11)...), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.b)
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode(% x) = %v, want %v", c.b, err, c.want)
			}
		})
	}
}

func TestCodec_EncodeRefusesUnknownType(t *testing.T) {
	if _, err := Encode(Entry{Type: 99}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("err = %v", err)
	}
}

func mustEncode(t *testing.T, e Entry) []byte {
	t.Helper()
	// Encode does not validate values, so it can write what Decode refuses.
	b, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecode: no input makes Decode panic, and whatever it accepts
// encodes back to something that decodes to the same entry.
func FuzzDecode(f *testing.F) {
	for _, e := range allTypesEntries() {
		b, _ := Encode(e)
		f.Add(b)
	}
	f.Add([]byte{byte(IgnorableFlag | 5), 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil || !e.Type.known() {
			return
		}
		b2, err := Encode(e)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", e, err)
		}
		e2, err := Decode(b2)
		if err != nil || e2 != e {
			t.Fatalf("re-decode: %+v, %v; want %+v", e2, err, e)
		}
	})
}
