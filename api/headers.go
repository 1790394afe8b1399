package api

// Header names of the API.
const (
	// HeaderAuthorization carries the cluster's token as Bearer(token)
	// when the cluster has one.
	HeaderAuthorization = "Authorization"
	// HeaderClusterID names the cluster a request is meant for; a node of
	// another cluster answers 403 (CodeWrongCluster). Nodes send it with
	// their join; a client may send it. Absent: not checked.
	HeaderClusterID = "X-Lock-Cluster-Id"
	// HeaderForwardedBy marks a request a follower passed on to the
	// leader, with the follower's ID. Only nodes set it: a node that gets
	// it while not leading answers 503 rather than forward again.
	HeaderForwardedBy = "X-Lock-Forwarded-By"
	// HeaderCredential carries, on a forwarded request, the name of the
	// credential a client certificate gave it on the node it reached, so
	// that the leader grants the same rights: it sees the forwarding
	// node's certificate, not the client's. The leader takes it only on
	// a connection whose certificate is the forwarding member's.
	HeaderCredential = "X-Lock-Credential"
)

// Bearer returns the HeaderAuthorization value for token.
func Bearer(token string) string { return "Bearer " + token }
