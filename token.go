package lock

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
)

// tokenLen is the size of an owner token in random bytes.
const tokenLen = 16

// tokenBuf holds random bytes read from crypto/rand in bulk: one read per
// 32 tokens instead of one per acquisition, which on a fast backend is a
// visible share of a Try. Each byte is handed out once.
type tokenBuf struct {
	b    [32 * tokenLen]byte
	used int
}

var tokenBufs = sync.Pool{New: func() any { return &tokenBuf{used: 32 * tokenLen} }}

// newOwner returns a fresh owner token: 16 bytes from crypto/rand, in hex,
// followed by suffix (":" and the holder's description, or nothing), in
// one allocation. Every acquisition gets its own, so a holder whose lock
// expired can never release or extend the grant that replaced it.
func newOwner(suffix string) string {
	tb := tokenBufs.Get().(*tokenBuf)
	if tb.used == len(tb.b) {
		_, _ = rand.Read(tb.b[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
		tb.used = 0
	}
	var dst [2 * tokenLen]byte
	src := tb.b[tb.used : tb.used+tokenLen]
	hex.Encode(dst[:], src)
	clear(src) // a token handed out leaves no copy behind
	tb.used += tokenLen
	tokenBufs.Put(tb)
	var b strings.Builder
	b.Grow(len(dst) + len(suffix))
	b.Write(dst[:])
	b.WriteString(suffix)
	return b.String()
}

// NewOwner returns a fresh owner of the form "TOKEN:HOLDER", as the
// Manager makes them: a random token no other grant shares, then holder,
// which describes the grant to others (drivers.HolderOf reads it back;
// "" describes nothing). It is for callers that acquire through a
// driver, the HTTP API or WithOwner, and want the Manager's owners.
func NewOwner(holder string) string { return newOwner(":" + holder) }
