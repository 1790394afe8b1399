package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"

	"github.com/zerotal/lock/engine"
)

func allTypesEntries() []Entry {
	return []Entry{
		{Op: engine.OpAcquire, Key: "invoice:123", Owner: "o-1", TTL: 15 * time.Second, Now: 1_700_000_000_000_000_000, Wait: true},
		{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Millisecond, Now: 0},
		{Op: engine.OpRelease, Key: "a b/c", Owner: "o", Now: 42},
		{Op: engine.OpExtend, Key: "k", Owner: "o", TTL: time.Hour, Now: -5},
		{Op: engine.OpForceRelease, Key: "k", Now: 9},
		{Op: engine.OpExpire, Key: "k", Owner: "o", ExpectFence: 1 << 60, Now: 10},
		{Op: engine.OpCancelWait, Key: "k", Owner: "o", Now: 11},
		{Op: engine.OpTick, Now: 12},
		{Op: engine.OpAcquireKeys, Keys: []string{"pool"}, Owner: "o", TTL: time.Second, Now: 3, Wait: true, Claim: engine.Claim{Kind: engine.Semaphore, Limit: 4}},
		{Op: engine.OpAcquireKeys, Keys: []string{"doc"}, Owner: "r", TTL: time.Second, Now: 3, Wait: true, Claim: engine.Claim{Kind: engine.RWLock}},
		{Op: engine.OpAcquireKeys, Keys: []string{"a", "b/c", strings.Repeat("é", 512)}, Owner: "o", TTL: time.Minute, Now: 13},
		{Op: engine.OpAcquireKeys, Keys: []string{"a"}, Owner: "o", TTL: time.Minute, Now: 14, Wait: true},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Now: 15},
		{Op: engine.OpAcquireKeys, Keys: []string{"a", "b"}, Owner: "o", TTL: time.Second, Now: 16, Wait: true, Claim: engine.Claim{Kind: engine.Semaphore, Limit: 3}},
		{Op: engine.OpAcquireKeys, Keys: []string{"doc"}, Owner: "w", TTL: time.Second, Now: 17, Claim: engine.Claim{Kind: engine.RWLock, Write: true}},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Now: 18, MaxHold: time.Hour},
		{Op: engine.OpAcquireKeys, Keys: []string{"a", "b"}, Owner: "o", TTL: time.Second, Now: 19, Wait: true, Claim: engine.Claim{Kind: engine.RWLock, Write: true}, MaxHold: 1},
		{Op: engine.OpAcquireKeys, Keys: []string{"a"}, Owner: "o", TTL: time.Second, Now: 20, MaxHold: engine.CapPending}, // a waiting set's keep-alive
		{Member: SetMember, ID: "node-1", HTTPAddr: "127.0.0.1:8080"},
		{Member: RemoveMember, ID: "node-1"},
		{Op: engine.OpAcquire, Key: strings.Repeat("é", 512), Owner: strings.Repeat("x", maxOwnerLen), TTL: 7 * 24 * time.Hour, Now: 1},
	}
}

func TestCodec_RoundTripsEveryType(t *testing.T) {
	for _, e := range allTypesEntries() {
		b, err := Encode(e)
		if err != nil {
			t.Fatalf("encode %v: %v", e.Type(), err)
		}
		if b[0] != byte(e.Type()) || b[1] != payloadVersion {
			t.Fatalf("%v: header % x", e.Type(), b[:2])
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %v: %v", e.Type(), err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip of %v:\n got %+v\nwant %+v", e.Type(), got, e)
		}
	}
}

func TestCodec_TypeNumbersAreStable(t *testing.T) {
	// These numbers are on disk in every log: changing one is a format break.
	// A lock entry's type is its engine.Op's number, so those are pinned too.
	want := map[EntryType]uint8{
		EntryType(engine.OpAcquire): 1, EntryType(engine.OpRelease): 2, EntryType(engine.OpExtend): 3,
		EntryType(engine.OpForceRelease): 4, EntryType(engine.OpExpire): 5,
		EntryType(engine.OpCancelWait): 6, EntryType(engine.OpTick): 7, EntryType(engine.OpAcquireKeys): 10, SetMember: 16, RemoveMember: 17,
	}
	for typ, n := range want {
		if uint8(typ) != n {
			t.Errorf("%v = %d, want %d", typ, uint8(typ), n)
		}
	}
}

func TestCodec_DecodeRejectsBadBytes(t *testing.T) {
	good, _ := Encode(Entry{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Second, Now: 1})
	long := append([]byte{byte(engine.OpRelease), payloadVersion}, 0x81, 0x08) // key length 1025
	long = append(long, bytes.Repeat([]byte{'k'}, 1025)...)
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"nil", nil, ErrMalformed},
		{"one byte", []byte{byte(engine.OpTick)}, ErrMalformed},
		{"unknown type", []byte{0x40, 1}, ErrUnknownType},
		{"zero type", []byte{0, 1}, ErrUnknownType},
		{"bad version", []byte{byte(engine.OpTick), 2, 0}, ErrMalformed},
		{"truncated", good[:len(good)-1], ErrMalformed},
		{"trailing", append(append([]byte{}, good...), 0), ErrMalformed},
		{"key over limit", long, ErrMalformed},
		{"string past end", []byte{byte(engine.OpForceRelease), payloadVersion, 5, 'a'}, ErrMalformed},
		{"bad utf8", []byte{byte(engine.OpForceRelease), payloadVersion, 1, 0xff, 0}, ErrMalformed},
		{"negative ttl", []byte{byte(engine.OpExtend), payloadVersion, 1, 'k', 1, 'o', 1, 0}, ErrMalformed},
		{"unknown flag", append(good[:len(good)-1:len(good)-1], 2), ErrMalformed},
		{"no keys", []byte{byte(engine.OpAcquireKeys), payloadVersion, 0, 1, 'o', 2, 2, 0, 0, 0}, ErrMalformed},
		{"too many keys", []byte{byte(engine.OpAcquireKeys), payloadVersion, 65, 1, 'k'}, ErrMalformed},
		// 8 (acquire-shared) and 9 (acquire-all) were never released:
		// type 10 replaced them.
		{"retired acquire-shared", []byte{8, payloadVersion, 1, 'k', 1, 'o', 2, 2, 0, byte(engine.Semaphore), 2}, ErrUnknownType},
		{"retired acquire-all", []byte{9, payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 0}, ErrUnknownType},
		{"a mutex's write side", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 2, 0, 0}, ErrMalformed},
		{"a semaphore of 0", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 0, 1, 0}, ErrMalformed},
		{"unknown acquire-keys flag", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 8, 0, 0}, ErrMalformed},
		{"a cap flag without its cap", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 4, 0, 0}, ErrMalformed},
		{"a cap of 0", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 4, 0, 0, 0}, ErrMalformed},
		{"a negative cap", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 4, 0, 0, 1}, ErrMalformed},
		{"a cap on v0.1.0's acquire", append(good[:len(good)-1:len(good)-1], 4), ErrMalformed},
		{"acquire-keys without its claim", []byte{byte(engine.OpAcquireKeys), payloadVersion, 1, 1, 'k', 1, 'o', 2, 2, 0}, ErrMalformed},
		{"overlong varint", append([]byte{byte(engine.OpTick), payloadVersion}, bytes.Repeat([]byte{0xff}, 11)...), ErrMalformed},
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
	retired := []Entry{ // 8 and 9: never released, replaced by 10
		{Op: 8, Key: "k", Owner: "o", TTL: time.Second, Claim: engine.Claim{Kind: engine.Semaphore, Limit: 2}},
		{Op: 9, Keys: []string{"a", "b"}, Owner: "o", TTL: time.Second},
	}
	for _, e := range append([]Entry{{Op: 99}, {Member: 99}, {}, {Op: engine.OpTick, Member: SetMember}}, retired...) {
		if _, err := Encode(e); !errors.Is(err, ErrUnknownType) {
			t.Fatalf("Encode(%+v): err = %v", e, err)
		}
	}
}

// Encode refuses every value Decode would refuse, so no request can put
// an entry into the log that stops the nodes applying it.
func TestCodec_EncodeRefusesWhatDecodeRefuses(t *testing.T) {
	long := strings.Repeat("k", maxKeyLen+1)
	cases := []Entry{
		{Op: engine.OpAcquire, Key: long, Owner: "o", TTL: time.Second},
		{Op: engine.OpRelease, Key: "k", Owner: strings.Repeat("o", maxOwnerLen+1)},
		{Op: engine.OpForceRelease, Key: "a\xffb"},
		{Op: engine.OpExpire, Key: "k", Owner: "\xed\xa0\x80"}, // an encoded surrogate is not UTF-8
		{Op: engine.OpExtend, Key: "k", Owner: "o", TTL: -1},
		{Member: SetMember, ID: strings.Repeat("n", maxMemberLen+1), HTTPAddr: "127.0.0.1:1"},
		{Member: SetMember, ID: "n1", HTTPAddr: strings.Repeat("h", maxMemberLen+1)},
		{Member: RemoveMember, ID: "\xc0"},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Claim: engine.Claim{Kind: engine.Semaphore, Limit: 2, Write: true}},
		{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Second, Claim: engine.Claim{Kind: engine.RWLock}},
		{Op: engine.OpAcquireKeys, Keys: make([]string, drivers.MaxMultiKeys+1), Owner: "o", TTL: time.Second},
		{Op: engine.OpAcquireKeys, Keys: []string{"a", long}, Owner: "o", TTL: time.Second},
		{Op: engine.OpAcquire, Key: "k", Keys: []string{"a"}, Owner: "o", TTL: time.Second},
		{Op: engine.OpAcquireKeys, Owner: "o", TTL: time.Second},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Claim: engine.Claim{Write: true}},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Claim: engine.Claim{Kind: engine.Semaphore}},
		{Op: engine.OpAcquireKeys, Keys: []string{"a\xff"}, Owner: "o", TTL: time.Second},
		{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, MaxHold: -1},
		{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Second, MaxHold: time.Second},
		{Op: engine.OpExtend, Key: "k", Owner: "o", TTL: time.Second, MaxHold: time.Second},
	}
	for _, e := range cases {
		b, err := Encode(e)
		if !errors.Is(err, drivers.ErrInvalid) {
			t.Errorf("Encode(%v with a bad field) = % x, %v; want an error matching drivers.ErrInvalid", e.Type(), b, err)
		}
	}
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
		if err != nil || !e.Type().known() {
			return
		}
		b2, err := Encode(e)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", e, err)
		}
		e2, err := Decode(b2)
		if err != nil || !reflect.DeepEqual(e2, e) {
			t.Fatalf("re-decode: %+v, %v; want %+v", e2, err, e)
		}
	})
}

// FuzzEncode: whatever Encode accepts, Decode accepts too and re-encodes
// to the same bytes. A committed entry that does not decode stops every
// node, so this is the property that keeps request input from doing so.
func FuzzEncode(f *testing.F) {
	for _, e := range allTypesEntries() {
		f.Add(uint8(e.Type()), e.Key, e.Owner, int64(e.TTL), e.Now, e.ExpectFence, e.Wait, e.ID, e.HTTPAddr)
	}
	f.Add(uint8(engine.OpAcquire), "a\xffb", "o", int64(-1), int64(0), uint64(0), false, "", "")
	f.Add(uint8(SetMember), "", "", int64(0), int64(0), uint64(0), false, strings.Repeat("n", 600), "x")
	f.Fuzz(func(t *testing.T, typ uint8, key, owner string, ttl, now int64, fence uint64, wait bool, id, addr string) {
		e := entryOfType(EntryType(typ))
		e.Key, e.Owner, e.TTL, e.Now = key, owner, time.Duration(ttl), now
		e.ExpectFence, e.Wait, e.ID, e.HTTPAddr = fence, wait, id, addr
		b, err := Encode(e)
		if err != nil {
			if !errors.Is(err, ErrUnknownType) && !errors.Is(err, drivers.ErrInvalid) {
				t.Fatalf("Encode error matches neither ErrUnknownType nor drivers.ErrInvalid: %v", err)
			}
			return
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("Encode(%+v) wrote bytes Decode refuses: %v", e, err)
		}
		if got.Type() != e.Type() {
			t.Fatalf("type %v decoded as %v", e.Type(), got.Type())
		}
		again, err := Encode(got)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %+v: % x, %v; want % x", got, again, err, b)
		}
	})
}

// An acquire without a cap is written as it was before caps existed: the
// cap costs its bytes only to the entries that carry one.
func TestCodec_AcquireKeysWithoutACapKeepsItsBytes(t *testing.T) {
	e := Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "o", TTL: time.Second, Now: 2, Wait: true}
	plain, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{10, payloadVersion, 1, 1, 'k', 1, 'o', 0x80, 0xa8, 0xd6, 0xb9, 0x07, 4, flagWait, 0, 0}; !bytes.Equal(plain, want) {
		t.Fatalf("entry 10 without a cap: % x, want % x", plain, want)
	}
	e.MaxHold = time.Minute
	capped, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(capped) <= len(plain) || capped[13] != flagWait|flagMaxHold {
		t.Fatalf("entry 10 with a cap: % x", capped)
	}
	if got, err := Decode(capped); err != nil || got.MaxHold != time.Minute {
		t.Fatalf("Decode: %+v, %v; want the cap of a minute", got, err)
	}
}

// FuzzEncodeAcquireKeys: an acquire-keys entry Encode accepts, with any
// claim and cap, decodes to itself and re-encodes to the same bytes.
func FuzzEncodeAcquireKeys(f *testing.F) {
	f.Add("k", "o", int64(time.Second), int64(1), true, uint8(0), uint32(0), false, int64(time.Minute))
	f.Add("k", "o", int64(time.Second), int64(1), false, uint8(engine.RWLock), uint32(0), true, int64(0))
	f.Add("k", "o", int64(time.Second), int64(1), false, uint8(engine.Semaphore), uint32(3), false, int64(-1))
	f.Fuzz(func(t *testing.T, key, owner string, ttl, now int64, wait bool, kind uint8, limit uint32, write bool, maxHold int64) {
		e := Entry{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: owner, TTL: time.Duration(ttl), Now: now, Wait: wait,
			Claim: engine.Claim{Kind: engine.Kind(kind), Limit: limit, Write: write}, MaxHold: time.Duration(maxHold)}
		b, err := Encode(e)
		if err != nil {
			if !errors.Is(err, drivers.ErrInvalid) {
				t.Fatalf("Encode error does not match drivers.ErrInvalid: %v", err)
			}
			return
		}
		got, err := Decode(b)
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", e, got, err)
		}
		if again, err := Encode(got); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %+v: % x, %v; want % x", got, again, err, b)
		}
	})
}
