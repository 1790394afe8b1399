package lock

import (
	"crypto/rand"
	"encoding/hex"
)

// newOwner returns a fresh owner token: 16 bytes from crypto/rand, in hex.
// Every acquisition gets its own, so a holder whose lock expired can never
// release or extend the grant that replaced it.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
	return hex.EncodeToString(b[:])
}
