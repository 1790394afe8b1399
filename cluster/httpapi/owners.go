package httpapi

import (
	"net/http"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

// Owners by credential (see package access): the Store records the owner
// a request names behind its credential's id, and a read shows each
// caller what it may see of the owners it finds. This is the one place
// that does either, on the node that serves the request (a follower
// forwards the body it was sent, and the leader records it).

// caller is the credential a request came with: access.Open on a node
// without credentials.
func caller(r *http.Request) *access.Credential {
	if c, _ := r.Context().Value(credKey{}).(*access.Credential); c != nil {
		return c
	}
	return access.Open
}

// recordedOwner is the owner the Store is given for owner, named by r:
// its credential's (access.Credential.Owner). The log takes no owner
// longer than drivers.MaxOwnerLen, so with credentials a request's owner
// may be access.OwnerPrefixLen bytes shorter than that.
func recordedOwner(r *http.Request, owner string) (string, error) {
	rec := caller(r).Owner(owner)
	if len(rec) > drivers.MaxOwnerLen {
		return "", invalidf("owner", "%d bytes, the limit is %d on a node with credentials (it records the credential with the owner)",
			len(owner), drivers.MaxOwnerLen-access.OwnerPrefixLen)
	}
	return rec, nil
}

// hiddenToken stands in for the token of an owner the caller may not
// see: the holder after it stays as it was (an election's leader is read
// from it), the token is not there.
const hiddenToken = "00000000000000000000000000000000"

// shownOwner is what c sees of the owner recorded as rec: the owner its
// request named when c may see it (access.Credential.SeesOwner), else
// that owner with its token hidden, or "" when it has no holder after a
// token (drivers.SplitOwner); and, to everyone, the holder it names
// (drivers.HolderOf, as a 409 tells it).
func shownOwner(c *access.Credential, rec string) (owner, holder string) {
	_, plain, _ := access.SplitOwner(rec)
	holder = drivers.HolderOf(plain)
	if c.SeesOwner(rec) {
		return plain, holder
	}
	if _, h, ok := drivers.SplitOwner(plain); ok {
		return hiddenToken + ":" + h, holder
	}
	return "", holder
}

// showLock rewrites the owners of l, as the Store recorded them, as c may
// see them.
func showLock(c *access.Credential, l *api.Lock) {
	if l.Owner != "" {
		l.Owner, l.Holder = shownOwner(c, l.Owner)
	}
	for i := range l.Holders {
		l.Holders[i].Owner, l.Holders[i].Holder = shownOwner(c, l.Holders[i].Owner)
	}
	for i := range l.Queue {
		owner, holder := shownOwner(c, l.Queue[i].Owner)
		l.Queue[i].Owner, l.Queue[i].Holder = owner, api.WaiterHolder(owner, holder)
	}
}
