package access

import (
	"crypto/sha256"
	"encoding/hex"
)

// A node with credentials records every owner a request names as its
// credential's (Credential.Owner): the credential's id, then the owner.
// A release or an extend then reaches only its own credential's grants,
// whatever owner token it names: a token read elsewhere, or guessed,
// gives another credential nothing to release and nothing to keep alive.
// And a read shows an owner's token only to the credential that recorded
// it, and to one that may force-release the key anyway (SeesOwner).
//
// A recorded owner is "@", the id (idLen lower-case hex digits), ":",
// then the owner as the request named it.
const (
	ownerMark = '@'
	idLen     = 16
	// OwnerPrefixLen is the length of what Credential.Owner puts before
	// an owner: a request's owner may be this much shorter than the
	// log's limit.
	OwnerPrefixLen = 1 + idLen + 1
)

// ID is the credential's id in the owners it records: the first idLen hex
// digits of the SHA-256 of its name, so that a name of any length fits,
// and the same name keeps its owners across a reload or a token's
// rotation. "" for Open.
func (c *Credential) ID() string {
	if c == Open {
		return ""
	}
	d := sha256.Sum256([]byte("zerotal-lock credential\x00" + c.Name))
	return hex.EncodeToString(d[:idLen/2])
}

// Owner is the owner recorded for owner when a request of c names it: owner
// behind c's id. Open records owners as they are: a node without
// credentials has one tenant.
func (c *Credential) Owner(owner string) string {
	if c == Open {
		return owner
	}
	return string(ownerMark) + c.ID() + ":" + owner
}

// SplitOwner splits a recorded owner into the id of the credential that
// recorded it and the owner its request named. ok is false for an owner
// recorded without credentials (owner is then recorded itself).
func SplitOwner(recorded string) (id, owner string, ok bool) {
	if len(recorded) < OwnerPrefixLen || recorded[0] != ownerMark || recorded[OwnerPrefixLen-1] != ':' {
		return "", recorded, false
	}
	id = recorded[1 : OwnerPrefixLen-1]
	for i := 0; i < len(id); i++ {
		if !('0' <= id[i] && id[i] <= '9' || 'a' <= id[i] && id[i] <= 'f') {
			return "", recorded, false
		}
	}
	return id, recorded[OwnerPrefixLen:], true
}

// SeesOwner reports whether c may see the owner token of a grant or a
// waiter recorded as recorded: the credential that recorded it, and one
// with the force-release right (an operator), whom the token gives
// nothing more. An owner recorded without credentials is an operator's
// to see.
func (c *Credential) SeesOwner(recorded string) bool {
	if c.Can(RightForceRelease) {
		return true
	}
	id, _, ok := SplitOwner(recorded)
	return ok && id == c.ID()
}
