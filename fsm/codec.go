package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

// EntryType is the first byte of every log entry this package writes. The
// numbers are part of the on-disk format: they are explicit, and a number is
// never reused for another meaning once released.
//
// A lock entry's type is the number of the engine.Op it carries (1 to 7,
// and 10), so a lock operation has one name from the log to the engine.
// 8 and 9 (acquire-shared and acquire-all) were never in a release: type
// 10 replaced them, and they are unknown types, never reused. The
// member-map entries, which keep the id -> HTTP address map that followers
// use to forward requests, have types of their own.
type EntryType uint8

// Member-map entry types.
const (
	SetMember    EntryType = 16
	RemoveMember EntryType = 17

	// IgnorableFlag marks a type that a node which does not know it may skip.
	// A newer version sets it on entries that only add optional state; an
	// unknown type without it stops decoding with ErrUnknownType, because
	// skipping it would let nodes diverge.
	IgnorableFlag EntryType = 0x80
)

// payloadVersion is the second byte of every entry: the layout version of
// the payload of its type.
const payloadVersion = 1

// Field limits checked when decoding, so a corrupt length cannot make the
// decoder allocate gigabytes.
const (
	maxKeyLen    = drivers.MaxKeyLen
	maxOwnerLen  = drivers.MaxOwnerLen
	maxMemberLen = 512
)

// Decoding errors; compare with errors.Is.
var (
	// ErrMalformed reports a truncated entry, an invalid field or trailing bytes.
	ErrMalformed = errors.New("fsm: malformed log entry")
	// ErrUnknownType reports an entry type this version cannot apply and may
	// not skip.
	ErrUnknownType = errors.New("fsm: unknown log entry type")
	// ErrCorruptSnapshot reports a snapshot that Restore refuses: truncated,
	// an invalid field, or an engine table that breaks its rules.
	ErrCorruptSnapshot = errors.New("fsm: corrupt snapshot")
)

// Entry is one decoded log entry: a lock command for the engine (Op set)
// or a change to the member map (Member set). Which other fields are
// meaningful depends on which; the others are zero.
type Entry struct {
	Op          engine.Op     // lock entries: the engine operation
	Member      EntryType     // member entries: SetMember or RemoveMember
	Key         string        // lock entries
	Owner       string        // acquire, release, extend, expire, cancel-wait
	TTL         time.Duration // acquire, extend
	Now         int64         // leader-stamped time, unix nanoseconds; every lock entry and tick
	ExpectFence uint64        // expire: the fence of the grant the leader saw due
	Wait        bool          // acquire: queue FIFO when the key is busy
	Claim       engine.Claim  // acquire-keys: how each key is held
	Keys        []string      // acquire-keys: every key, taken together or not at all
	MaxHold     time.Duration // acquire-keys: the cap on each grant's total hold time (0: none; engine.CapPending: pending)
	ID          string        // member entries: raft server id
	HTTPAddr    string        // set-member: host:port of the node's HTTP API
}

// Type is e's first byte in the log: its Op's number for a lock entry, its
// Member type otherwise (0 when neither is set: not an entry to encode).
func (e Entry) Type() EntryType {
	if e.Op != 0 {
		return EntryType(e.Op)
	}
	return e.Member
}

// AcquireKeys is the keys the acquire entry e takes: its Keys, or the Key
// of v0.1.0's entry 1 alone (nil for any other entry).
func (e Entry) AcquireKeys() []string {
	switch e.Op {
	case engine.OpAcquire:
		return []string{e.Key}
	case engine.OpAcquireKeys:
		return e.Keys
	}
	return nil
}

// entryOfType is the empty entry of type t: a lock entry below
// SetMember's number, a member entry from it on.
func entryOfType(t EntryType) Entry {
	if t < SetMember {
		return Entry{Op: engine.Op(t)}
	}
	return Entry{Member: t}
}

// known reports whether this version knows how to apply t.
func (t EntryType) known() bool {
	switch {
	case t >= EntryType(engine.OpAcquire) && t <= EntryType(engine.OpTick):
		return true
	case t == EntryType(engine.OpAcquireKeys):
		return true
	case t == SetMember || t == RemoveMember:
		return true
	}
	return false
}

// Ignorable reports whether a node that does not know t may skip it.
func (t EntryType) Ignorable() bool { return t&IgnorableFlag != 0 }

// String names the type for logs and errors.
func (t EntryType) String() string {
	switch {
	case t == SetMember:
		return "set_member"
	case t == RemoveMember:
		return "remove_member"
	case t == Batch:
		return "batch"
	case t.known():
		return engine.Op(t).String()
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Encode returns the log entry bytes for e: the type byte, the payload
// version byte, then the fields of that type in a fixed order.
func Encode(e Entry) ([]byte, error) {
	t := e.Type()
	if !t.known() || (e.Op != 0 && e.Member != 0) {
		return nil, fmt.Errorf("%w: cannot encode %v (op %d, member %d)", ErrUnknownType, t, e.Op, e.Member)
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 2+len(e.Key)+len(e.Owner)+len(e.ID)+len(e.HTTPAddr)+40)
	b = append(b, byte(t), payloadVersion)
	switch e.Op {
	case engine.OpAcquire:
		b = appendString(b, e.Key)
		b = appendString(b, e.Owner)
		b = binary.AppendVarint(b, int64(e.TTL))
		b = binary.AppendVarint(b, e.Now)
		b = append(b, e.flags())
	case engine.OpRelease, engine.OpCancelWait:
		b = appendString(b, e.Key)
		b = appendString(b, e.Owner)
		b = binary.AppendVarint(b, e.Now)
	case engine.OpExtend:
		b = appendString(b, e.Key)
		b = appendString(b, e.Owner)
		b = binary.AppendVarint(b, int64(e.TTL))
		b = binary.AppendVarint(b, e.Now)
	case engine.OpForceRelease:
		b = appendString(b, e.Key)
		b = binary.AppendVarint(b, e.Now)
	case engine.OpExpire:
		b = appendString(b, e.Key)
		b = appendString(b, e.Owner)
		b = binary.AppendUvarint(b, e.ExpectFence)
		b = binary.AppendVarint(b, e.Now)
	case engine.OpTick:
		b = binary.AppendVarint(b, e.Now)
	case engine.OpAcquireKeys:
		b = binary.AppendUvarint(b, uint64(len(e.Keys)))
		for _, k := range e.Keys {
			b = appendString(b, k)
		}
		b = appendString(b, e.Owner)
		b = binary.AppendVarint(b, int64(e.TTL))
		b = binary.AppendVarint(b, e.Now)
		b = append(b, e.flags())
		b = append(b, byte(e.Claim.Kind))
		b = binary.AppendUvarint(b, uint64(e.Claim.Limit))
		if e.MaxHold > 0 {
			b = binary.AppendVarint(b, int64(e.MaxHold))
		}
	}
	switch e.Member {
	case SetMember:
		b = appendString(b, e.ID)
		b = appendString(b, e.HTTPAddr)
	case RemoveMember:
		b = appendString(b, e.ID)
	}
	return b, nil
}

// Decode parses bytes written by Encode. An unknown type carrying
// IgnorableFlag decodes to the zero Entry (neither Op nor Member set) and a
// nil error: the caller skips it. Every other problem is an error matching ErrMalformed or
// ErrUnknownType.
func Decode(b []byte) (Entry, error) {
	if len(b) < 2 {
		return Entry{}, fmt.Errorf("%w: %d bytes, need at least 2", ErrMalformed, len(b))
	}
	t := EntryType(b[0])
	if t == Batch {
		return Entry{}, fmt.Errorf("%w: a batch entry carries several entries: DecodeLog decodes it", ErrMalformed)
	}
	if !t.known() {
		if t.Ignorable() {
			return Entry{}, nil
		}
		return Entry{}, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if b[1] != payloadVersion {
		return Entry{}, fmt.Errorf("%w: %v payload version %d, want %d", ErrMalformed, t, b[1], payloadVersion)
	}
	r := reader{b: b[2:]}
	e := entryOfType(t)
	switch e.Op {
	case engine.OpAcquire:
		e.Key = r.str("key", maxKeyLen)
		e.Owner = r.str("owner", maxOwnerLen)
		e.TTL = time.Duration(r.varint("ttl"))
		e.Now = r.varint("now")
		e.readFlags(&r, flagWait)
	case engine.OpRelease, engine.OpCancelWait:
		e.Key = r.str("key", maxKeyLen)
		e.Owner = r.str("owner", maxOwnerLen)
		e.Now = r.varint("now")
	case engine.OpExtend:
		e.Key = r.str("key", maxKeyLen)
		e.Owner = r.str("owner", maxOwnerLen)
		e.TTL = time.Duration(r.varint("ttl"))
		e.Now = r.varint("now")
	case engine.OpForceRelease:
		e.Key = r.str("key", maxKeyLen)
		e.Now = r.varint("now")
	case engine.OpExpire:
		e.Key = r.str("key", maxKeyLen)
		e.Owner = r.str("owner", maxOwnerLen)
		e.ExpectFence = r.uvarint("expect_fence")
		e.Now = r.varint("now")
	case engine.OpTick:
		e.Now = r.varint("now")
	case engine.OpAcquireKeys:
		n := r.uvarint("keys")
		if (n == 0 || n > drivers.MaxMultiKeys) && r.err == nil {
			r.err = fmt.Errorf("%w: %d keys, want 1 to %d", ErrMalformed, n, drivers.MaxMultiKeys)
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			e.Keys = append(e.Keys, r.str("key", maxKeyLen))
		}
		e.Owner = r.str("owner", maxOwnerLen)
		e.TTL = time.Duration(r.varint("ttl"))
		e.Now = r.varint("now")
		capped := e.readFlags(&r, flagWait|flagWrite|flagMaxHold)&flagMaxHold != 0
		e.Claim.Kind = engine.Kind(r.byte("kind"))
		limit := r.uvarint("limit")
		if limit > math.MaxUint32 && r.err == nil {
			r.err = fmt.Errorf("%w: limit %d", ErrMalformed, limit)
		}
		e.Claim.Limit = uint32(limit)
		if capped {
			if e.MaxHold = time.Duration(r.varint("max_hold")); e.MaxHold <= 0 && r.err == nil {
				r.err = fmt.Errorf("%w: max hold %d", ErrMalformed, e.MaxHold)
			}
		}
		if err := e.checkClaim(); r.err == nil && err != nil {
			r.err = fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	switch e.Member {
	case SetMember:
		e.ID = r.str("id", maxMemberLen)
		e.HTTPAddr = r.str("http_addr", maxMemberLen)
	case RemoveMember:
		e.ID = r.str("id", maxMemberLen)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes after %v", ErrMalformed, len(r.b), t)
	}
	if r.err != nil {
		return Entry{}, r.err
	}
	if e.TTL < 0 {
		return Entry{}, fmt.Errorf("%w: negative ttl %d", ErrMalformed, e.TTL)
	}
	return e, nil
}

// check refuses the field values Decode would refuse. A committed entry
// that no node can decode stops every node (see CorruptEntryError), so
// Encode must never write one, whatever a request carried. The error
// matches drivers.ErrInvalid.
func (e Entry) check() error {
	fields := []struct {
		name, value string
		limit       int
	}{
		{"key", e.Key, maxKeyLen},
		{"owner", e.Owner, maxOwnerLen},
		{"id", e.ID, maxMemberLen},
		{"http_addr", e.HTTPAddr, maxMemberLen},
	}
	for _, f := range fields {
		switch {
		case len(f.value) > f.limit:
			return &drivers.InvalidError{Field: f.name, Reason: fmt.Sprintf("%d bytes, the limit is %d", len(f.value), f.limit)}
		case !utf8.ValidString(f.value):
			return &drivers.InvalidError{Field: f.name, Reason: "not valid UTF-8"}
		}
	}
	if e.TTL < 0 {
		return &drivers.InvalidError{Field: "ttl", Reason: fmt.Sprintf("%s is negative", e.TTL)}
	}
	if err := e.checkKeys(); err != nil {
		return err
	}
	switch {
	case e.MaxHold < 0:
		return &drivers.InvalidError{Field: "max_hold", Reason: fmt.Sprintf("%s is negative", e.MaxHold)}
	case e.MaxHold > 0 && e.Op != engine.OpAcquireKeys:
		return &drivers.InvalidError{Field: "max_hold", Reason: "only an acquire-keys entry has one"}
	}
	return e.checkClaim()
}

// checkKeys refuses keys on any entry but an acquire of keys, and an
// acquire of no key, of more than drivers.MaxMultiKeys, or of a key
// Decode would refuse.
func (e Entry) checkKeys() error {
	if e.Op != engine.OpAcquireKeys {
		if e.Keys != nil {
			return &drivers.InvalidError{Field: "keys", Reason: "only an acquire of keys has them"}
		}
		return nil
	}
	if len(e.Keys) == 0 || len(e.Keys) > drivers.MaxMultiKeys {
		return &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("%d keys, want 1 to %d", len(e.Keys), drivers.MaxMultiKeys)}
	}
	for _, k := range e.Keys {
		switch {
		case len(k) > maxKeyLen:
			return &drivers.InvalidError{Field: "key", Reason: fmt.Sprintf("%d bytes, the limit is %d", len(k), maxKeyLen)}
		case !utf8.ValidString(k):
			return &drivers.InvalidError{Field: "key", Reason: "not valid UTF-8"}
		}
	}
	return nil
}

// checkClaim refuses a claim on any entry but an acquire of keys, and an
// acquire of keys of anything but a mutex (the zero Claim), a semaphore
// (limit 1 or more) or a read/write lock.
func (e Entry) checkClaim() error {
	switch {
	case e.Claim == (engine.Claim{}):
		return nil
	case e.Op != engine.OpAcquireKeys:
		return &drivers.InvalidError{Field: "claim", Reason: "only an acquire-keys entry has one"}
	}
	return e.Claim.CheckShared()
}

// The flags byte of an acquire entry: v0.1.0's entry 1 knows Wait only.
const (
	flagWait    byte = 1
	flagWrite   byte = 2 // the write side of a read/write lock
	flagMaxHold byte = 4 // entry 10: a cap on total hold time follows the limit
)

// flags is the flags byte of the acquire entry e.
func (e Entry) flags() byte {
	var f byte
	if e.Wait {
		f |= flagWait
	}
	if e.Claim.Write {
		f |= flagWrite
	}
	if e.MaxHold > 0 {
		f |= flagMaxHold
	}
	return f
}

// readFlags reads the flags byte of an acquire entry, refusing any flag
// not in known, and returns it.
func (e *Entry) readFlags(r *reader, known byte) byte {
	f := r.byte("flags")
	if f&^known != 0 && r.err == nil {
		r.err = fmt.Errorf("%w: unknown acquire flags %#x", ErrMalformed, f)
	}
	e.Wait, e.Claim.Write = f&flagWait != 0, f&flagWrite != 0
	return f
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader consumes fields and remembers the first error, so decoding code
// reads as a flat list of fields.
type reader struct {
	b    []byte
	err  error
	kind error // the sentinel errors match; nil: ErrMalformed
}

func (r *reader) fail(field, why string) {
	if r.err == nil {
		kind := r.kind
		if kind == nil {
			kind = ErrMalformed
		}
		r.err = fmt.Errorf("%w: %s: %s", kind, field, why)
	}
}

func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(field, "truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a zig-zag varint as binary.Varint does: an unsigned one,
// its sign in the lowest bit.
func (r *reader) varint(field string) int64 {
	ux := r.uvarint(field)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *reader) byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(field, "truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) str(field string, limit int) string {
	n := r.uvarint(field + " length")
	if r.err != nil {
		return ""
	}
	if n > uint64(limit) || n > math.MaxInt32 {
		r.fail(field, fmt.Sprintf("length %d over limit %d", n, limit))
		return ""
	}
	if uint64(len(r.b)) < n {
		r.fail(field, fmt.Sprintf("truncated: need %d bytes, have %d", n, len(r.b)))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	if !utf8.ValidString(s) {
		r.fail(field, "not valid UTF-8")
		return ""
	}
	return s
}
