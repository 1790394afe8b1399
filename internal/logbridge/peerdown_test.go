package logbridge

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// raft's failed RPCs to a peer that cannot be reached (a follower
// stopped or restarting) are WARN once per message and peer, then DEBUG
// for peerDownQuiet; the same messages with another error, and raft's
// other ERROR lines, stay at ERROR. Before, each try was an ERROR line:
// about six a second on the leader while a follower restarted.
func TestAdapter_UnreachablePeerIsAWarningNotAnError(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(slog.LevelDebug)
	now := time.Unix(1000, 0)
	h := HCLog(l, "raft")
	h.(*adapter).peers.now = func() time.Time { return now }
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	badCert := fmt.Errorf("remote: %w", x509.UnknownAuthorityError{})

	type line struct {
		msg  string
		args []any
		want slog.Level
	}
	steps := []struct {
		after time.Duration
		line
	}{
		{0, line{"failed to heartbeat to", []any{"peer", "10.0.0.2:7100", "error", refused}, slog.LevelWarn}},
		{0, line{"failed to heartbeat to", []any{"peer", "10.0.0.2:7100", "error", refused}, slog.LevelDebug}},
		{0, line{"failed to appendEntries to", []any{"peer", "{Voter n2 10.0.0.2:7100}", "error", refused}, slog.LevelWarn}},
		{0, line{"failed to heartbeat to", []any{"peer", "10.0.0.3:7100", "error", refused}, slog.LevelWarn}},
		{time.Second, line{"failed to heartbeat to", []any{"peer", "10.0.0.2:7100", "error", errors.Join(errors.New("read"), syscall.ECONNRESET)}, slog.LevelDebug}},
		{peerDownQuiet, line{"failed to heartbeat to", []any{"peer", "10.0.0.2:7100", "error", refused}, slog.LevelWarn}},
		{0, line{"failed to heartbeat to", []any{"peer", "10.0.0.4:7100", "error", causer{"msgpack decode error [pos 0]", syscall.ECONNRESET}}, slog.LevelWarn}},
		{0, line{"failed to make requestVote RPC", []any{"target", "{Voter n3 10.0.0.3:7100}", "error", refused, "term", 3}, slog.LevelWarn}},
		// Not the network's: an incident, every time.
		{0, line{"failed to appendEntries to", []any{"peer", "{Voter n3 10.0.0.3:7100}", "error", badCert}, slog.LevelError}},
		{0, line{"failed to appendEntries to", []any{"peer", "{Voter n3 10.0.0.3:7100}", "error", badCert}, slog.LevelError}},
		{0, line{"failed to persist vote", []any{"error", refused}, slog.LevelError}},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		h.Error(s.msg, s.args...)
		if got := (*records)[len(*records)-1]; got.level != s.want || got.msg != s.msg {
			t.Fatalf("step %d, %q: level %v, want %v", i, s.msg, got.level, s.want)
		}
	}
	// A logger derived from it shares what was said.
	h.Named("replication").With("x", 1).Error("failed to heartbeat to", "peer", "10.0.0.2:7100", "error", refused)
	if got := (*records)[len(*records)-1]; got.level != slog.LevelDebug {
		t.Fatalf("a repeat through a derived logger: level %v, want DEBUG", got.level)
	}
}

// The two ERROR lines of a leader's ordinary stop: raft's transport read
// as it shuts down, DEBUG as a closed connection is; the leader that hands
// its leadership over and learns of the newer term, WARN.
func TestAdapter_LeaderStopIsNoError(t *testing.T) {
	t.Parallel()
	l, records := newRecorder(slog.LevelDebug)
	h := HCLog(l, "raft")
	h.Error("failed to decode incoming command", "error", raft.ErrTransportShutdown)
	h.Error("peer has newer term, stopping replication", "peer", "{Voter n1 10.0.0.1:7100}")
	want := []slog.Level{slog.LevelDebug, slog.LevelWarn}
	for i, r := range *records {
		if r.level != want[i] {
			t.Errorf("%q: level %v, want %v", r.msg, r.level, want[i])
		}
	}
}

// causer wraps an error as raft's codec does: a Cause method, no Unwrap.
type causer struct {
	msg   string
	cause error
}

func (c causer) Error() string { return c.msg + ": " + c.cause.Error() }
func (c causer) Cause() error  { return c.cause }
