package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
)

// readyInput is what the readiness rule looks at, read from raft and the
// node at one moment.
type readyInput struct {
	closing bool
	// membership is api.Member*: a node waiting to be added or removed
	// is never ready, whatever raft says.
	membership string
	state      raft.RaftState
	// leading: this node leads and has finished its takeover.
	leading  bool
	leaderID string
	// leaderHTTP: the leader's HTTP address is in the member map, so
	// requests can be forwarded to it.
	leaderHTTP bool
	// silence is the time since the last message from the leader, as
	// raft's LastContact (follower); negative: never.
	silence time.Duration
	// maxSilence is the longest silence of the leader a ready follower
	// accepts: the heartbeat timeout.
	maxSilence time.Duration
}

// notReady applies the readiness rule (see the package doc, Readiness):
// it returns why the node cannot serve requests now, or "" when it can.
func notReady(in readyInput) string {
	switch {
	case in.closing || in.state == raft.Shutdown:
		return "shutting down"
	case in.membership == api.MemberRemoved:
		return "removed from the cluster"
	case in.membership == api.MemberWaiting:
		return "waiting to be added to a cluster (lockcluster join)"
	case in.state == raft.Leader && !in.leading:
		return "leader is still taking over"
	case in.state == raft.Leader:
		// raft steps a leader down when it has not heard from a majority
		// of the voters within LeaderLeaseTimeout: leading is proof of a
		// reachable quorum.
		return ""
	case in.state == raft.Candidate:
		return "no leader: election in progress"
	case in.leaderID == "":
		return "no leader"
	case in.silence < 0:
		return fmt.Sprintf("leader %s never heard from", in.leaderID)
	case in.silence > in.maxSilence:
		return fmt.Sprintf("leader %s not heard from for %s", in.leaderID, roundSilence(in.silence))
	case !in.leaderHTTP:
		return fmt.Sprintf("leader %s has not published its HTTP address yet", in.leaderID)
	}
	return ""
}

// roundSilence shortens a duration for a message: 3.2s, 450ms.
func roundSilence(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// readiness reads the state of the node and of its raft r and applies
// the rule.
func (n *Node) readiness(r *raft.Raft) api.Ready {
	in := readyInput{state: r.State(), leading: n.IsLeader(), silence: -1, maxSilence: n.cfg.HeartbeatTimeout,
		membership: n.member.get()}
	select {
	case <-n.stopping.Done():
		in.closing = true
	default:
	}
	if _, id := r.LeaderWithID(); id != "" {
		in.leaderID = string(id)
		_, in.leaderHTTP = n.fsm.Member(in.leaderID)
	}
	if last := r.LastContact(); !last.IsZero() {
		in.silence = time.Since(last)
	}
	reason := notReady(in)
	return api.Ready{Ready: reason == "", State: strings.ToLower(in.state.String()), Reason: reason}
}
