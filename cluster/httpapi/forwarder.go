package httpapi

import (
	"errors"
	"net/http"

	"github.com/zerotal/lock/api"
)

// A request a follower forwards for a credential a client certificate
// gave it carries that credential's name (api.HeaderCredential) and the
// follower's ID (api.HeaderForwardedBy). The leader sees the follower's
// connection, not the client's certificate, so it takes the name on the
// follower's word, and only from the follower itself: the connection the
// request came on must be that member's (Options.Forwarder; the node
// checks that the connection's certificate, verified against the
// cluster's CA, is one the CA issued for the member's raft host, the name
// its peers verify when they dial it).
//
// The follower's TLS connection is the proof: it covers every byte of the
// request, cannot be replayed by whoever sees the headers (a proxy, a
// log), needs no secret beside the certificates (a cluster that TLS alone
// authenticates forwards as well as one with a raft secret) and no
// agreement of the nodes' clocks. A certificate credential exists only
// where the API verifies client certificates (mutual TLS), and there a
// node presents its own certificate to the leader.

// errNoForwarder is why a forwarded credential is refused by a node that
// checks no forwarder.
var errNoForwarder = errors.New("this node takes no forwarded credential (it does not verify client certificates)")

// checkForwarder says why r did not come from the member that its
// api.HeaderForwardedBy names, or nil.
func (h *handler) checkForwarder(r *http.Request) error {
	if h.opts.Forwarder == nil {
		return errNoForwarder
	}
	by := r.Header.Get(api.HeaderForwardedBy)
	if by == "" {
		return errors.New("the request names no forwarding node")
	}
	return h.opts.Forwarder(by, r.TLS)
}
