package main

import (
	"strings"
	"testing"
)

// An agent that would serve raft with nothing to authenticate its peers
// refuses to start, naming every way out, and so does one that has only
// the API token (which is no raft key), saying how to upgrade; the
// raft and HTTP settings reach the node from flags and from the
// environment (each is seen by the node's validation).
func TestAgent_RaftAndHTTPLimitSettings(t *testing.T) {
	base := []string{"agent", "--id", "n1", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--log-level", "off"}
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want []string
	}{
		{"exposed raft without auth", nil, []string{"--raft-addr", "10.0.0.1:7101"},
			[]string{"nothing to authenticate", "--raft-secret-file", "LOCKCLUSTER_RAFT_SECRET", "--tls-cert", "--raft-insecure"}},
		{"loopback raft without auth", nil, []string{"--raft-addr", "127.0.0.1:7101"},
			[]string{"nothing to authenticate", "--raft-secret-file"}},
		{"a token, no raft secret", map[string]string{"LOCKCLUSTER_TOKEN": "a-token-of-sixteen-bytes"}, []string{"--raft-addr", "127.0.0.1:7101"},
			[]string{"the API token no longer authenticates raft", "current token's value as its raft secret"}},
		{"short token", map[string]string{"LOCKCLUSTER_TOKEN": "short", "LOCKCLUSTER_RAFT_SECRET": "sixteen-bytes-at-least"}, nil,
			[]string{"Token is 5 bytes"}},
		{"short --raft-secret", nil, []string{"--raft-addr", "10.0.0.1:7101", "--raft-secret", "short"}, []string{"RaftSecret is 5 bytes"}},
		{"short LOCKCLUSTER_RAFT_SECRET", map[string]string{"LOCKCLUSTER_RAFT_SECRET": "short"}, []string{"--raft-addr", "10.0.0.1:7101"}, []string{"RaftSecret is 5 bytes"}},
		{"bad LOCKCLUSTER_RAFT_INSECURE", map[string]string{"LOCKCLUSTER_RAFT_INSECURE": "perhaps"}, nil, []string{"LOCKCLUSTER_RAFT_INSECURE"}},
		{"--max-conns under the waits", nil, []string{"--max-conns", "10"}, []string{"MaxConns (10) must exceed MaxWaits"}},
		{"LOCKCLUSTER_MAX_CONNS", map[string]string{"LOCKCLUSTER_MAX_CONNS": "10"}, nil, []string{"MaxConns (10) must exceed MaxWaits"}},
		{"bad LOCKCLUSTER_MAX_CONNS", map[string]string{"LOCKCLUSTER_MAX_CONNS": "lots"}, nil, []string{"LOCKCLUSTER_MAX_CONNS"}},
		{"negative --http-read-timeout", nil, []string{"--http-read-timeout", "-1s"}, []string{"--http-read-timeout"}},
		{"bad LOCKCLUSTER_HTTP_READ_TIMEOUT", map[string]string{"LOCKCLUSTER_HTTP_READ_TIMEOUT": "soon"}, nil, []string{"LOCKCLUSTER_HTTP_READ_TIMEOUT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.vars, append(append([]string{}, base...), tc.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "short\n") || strings.Contains(stderr, `"short"`) {
				t.Errorf("stderr shows the secret:\n%s", stderr)
			}
		})
	}
}
