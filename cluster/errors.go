package cluster

import (
	"errors"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/drivers"
)

// errLeadershipChanged ends requests served by a leader that stepped down.
var errLeadershipChanged = errors.New("leadership changed; retry")

// leadershipEnded reports errors after which this node no longer leads,
// so retrying a proposal here is pointless.
func leadershipEnded(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, errLeadershipChanged)
}

// unavailable wraps err (typically a raft error) so it matches
// drivers.ErrUnavailable and reads well.
func unavailable(op string, err error) error {
	return drivers.Unavailable(op, err)
}
