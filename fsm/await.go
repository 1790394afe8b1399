package fsm

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// Await waits for an apply future and merges its two error channels: the
// future's own error (not leader, shutdown, timeout) and the error inside
// the FSM's Response. The Response is returned whenever the entry was
// applied, also when it carries an error, so callers can read the result.
func Await(f raft.ApplyFuture) (*Response, error) {
	if err := f.Error(); err != nil {
		return nil, err
	}
	resp, ok := f.Response().(*Response)
	if !ok || resp == nil {
		return nil, fmt.Errorf("fsm: unexpected apply response %T", f.Response())
	}
	return resp, resp.Err
}
