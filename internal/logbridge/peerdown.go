package logbridge

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// raft logs every failed RPC to a peer at ERROR, for each try: a follower
// that is stopped or restarting gives its leader several such lines a
// second until it is back, and a candidate one per vote it asks for. A
// peer that cannot be reached for a while is ordinary (a restart, an
// upgrade, a host being rebooted): these lines are WARN when the error is
// the network's (refused, reset, timed out, closed), and after the first
// one per message and peer, DEBUG for peerDownQuiet. The same messages
// with another error (a certificate the peer refused, a disk that fails
// under a snapshot) stay at ERROR: an incident.

// deposed are raft's ERROR lines of a leader that learns of a newer term:
// a leadership change, which a node's own stop makes (it hands its
// leadership over) and an election after a follower lost touch makes too.
// The node says it lost its leadership at INFO; raft's line is WARN.
var deposed = map[string]bool{
	"peer has newer term, stopping replication": true,
}

// peerRPCMessages are raft's messages for an RPC to a peer that failed.
var peerRPCMessages = map[string]bool{
	"failed to appendEntries to":              true,
	"failed to heartbeat to":                  true,
	"failed to make requestVote RPC":          true,
	"failed to start pipeline replication to": true,
	"failed to pipeline appendEntries":        true,
	"failed to send snapshot to":              true,
}

// peerDownQuiet is how long the repeats of one message about one peer
// stay at DEBUG after it was said at WARN.
const peerDownQuiet = 10 * time.Second

// maxPeerDownKeys bounds the messages a limiter remembers: beyond it, it
// forgets them all (and says each once more).
const maxPeerDownKeys = 1024

// peerDownLimiter remembers when each (message, peer) was last said at
// WARN. Every adapter derived from one HCLog shares it.
type peerDownLimiter struct {
	mu   sync.Mutex
	said map[string]time.Time
	now  func() time.Time // nil: time.Now
}

// level is the level of a raft line at level with msg and args.
func (p *peerDownLimiter) level(level slog.Level, msg string, args []any) slog.Level {
	if level < slog.LevelError || !peerRPCMessages[msg] || !networkError(args) {
		return level
	}
	key := msg + "\x00" + peerOf(args)
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.said[key]; ok && now.Sub(at) < peerDownQuiet {
		return slog.LevelDebug
	}
	if p.said == nil || len(p.said) >= maxPeerDownKeys {
		p.said = map[string]time.Time{}
	}
	p.said[key] = now
	return slog.LevelWarn
}

// peerOf renders the peer an RPC line names ("peer" or "target").
func peerOf(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && (k == "peer" || k == "target") {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

// networkError reports an error argument that says the peer could not be
// reached or went away: a dial refused or timed out, a connection reset,
// closed or cut short.
func networkError(args []any) bool {
	for _, v := range args {
		err, ok := v.(error)
		// raft's codec (go-msgpack) wraps a read's error without Unwrap,
		// with a Cause method: follow that too.
		for i := 0; ok && err != nil && i < 8; i++ {
			var ne net.Error
			if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
				errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				return true
			}
			var c interface{ Cause() error }
			if !errors.As(err, &c) || c.Cause() == err {
				break
			}
			err = c.Cause()
		}
	}
	return false
}
