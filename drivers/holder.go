package drivers

import "time"

// An owner may say who its holder is: "TOKEN:HOLDER", where TOKEN is the
// 32 hex digits of a random owner token and HOLDER a short description of
// the holder ("deploy@host-3", "pid4242@host-3"). The Manager makes
// its owners so; the backends store the owner whole and know nothing of
// this. HolderOf reads the description back, without the token, which is
// what lets its bearer release or extend the grant.

// tokenHex is the length of an owner token in hex digits.
const tokenHex = 32

// HolderOf is what owner says of its holder: the HOLDER of "TOKEN:HOLDER";
// "" for a bare token, which says nothing; an owner of another form (one
// an application chose, as with lock.WithOwner) is itself the holder's
// name.
func HolderOf(owner string) string {
	if _, holder, ok := SplitOwner(owner); ok {
		return holder
	}
	if len(owner) == tokenHex && isHex(owner) {
		return ""
	}
	return owner
}

// SplitOwner splits an owner of the form "TOKEN:HOLDER" (TOKEN being 32
// lower-case hex digits; HOLDER may be empty) into its token and holder.
// ok is false for an owner of any other form: a bare token, or one an
// application chose.
func SplitOwner(owner string) (token, holder string, ok bool) {
	if len(owner) <= tokenHex || owner[tokenHex] != ':' || !isHex(owner[:tokenHex]) {
		return "", "", false
	}
	return owner[:tokenHex], owner[tokenHex+1:], true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// HeldBy is what a refused acquire learns of the key's holder, as far as
// the backend tells: Holder is HolderOf its owner (never the token), TTL
// how long its grant has left; zero values when unknown.
type HeldBy struct {
	Holder string
	TTL    time.Duration
}
