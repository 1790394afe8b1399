package client

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// raft's NetworkTransport.Close does not close connections a peer
		// opened to it; their readers end only when that peer's pool
		// closes them, which a stopped peer never does.
		goleak.IgnoreAnyFunction("github.com/hashicorp/raft.(*NetworkTransport).handleConn"),
	)
}
