//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// Without quorum (two of three voters stopped), locks, leader and run say
// "no leader" within two seconds with their default timeouts, as status
// does, and exit 69; run neither runs its command nor speaks of a release
// of the lock it never got. The client learns from the nodes' status
// answers that no leader can be elected from the ones that answer. Before,
// each retried until its timeout: 10 to 12 seconds.
func TestCLI_NoQuorumAnswersAtOnce(t *testing.T) {
	c := startThreeAgents(t)
	leader := c.leader(t)
	up := (leader + 1) % 3
	for i := range c.ids {
		if i != up {
			c.stop(t, i)
		}
	}
	env := []string{"LOCKCLUSTER_ENDPOINTS=" + strings.Join(c.https, ",")}
	// The node left up may lead for a moment more (until its lease ends
	// without a quorum): the cluster is without one once it says so.
	poll.Until(t, 30*time.Second, "the node left up to know no leader", func() bool {
		code, _, _ := runCLI(t, map[string]string{"LOCKCLUSTER_ENDPOINTS": c.https[up]}, "status", "--timeout", "2s")
		return code == exitUnavailable
	})
	for _, args := range [][]string{
		{"locks"},
		{"leader", "some-election"},
		{"run", "--key", "k", "--", "echo", "ran"},
		{"status"},
	} {
		start := time.Now()
		code, stdout, stderr := runBinary(t, env, args...)
		took := time.Since(start)
		t.Logf("%v: exit %d in %v: %s", args, code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
		if code != exitUnavailable || !strings.Contains(stderr, "no leader") {
			t.Errorf("%v: exit %d, stderr %q; want %d and no leader", args, code, stderr, exitUnavailable)
		}
		if took > 2*time.Second {
			t.Errorf("%v took %v to say there is no leader, want 2s at most", args, took.Round(time.Millisecond))
		}
		if strings.Contains(stdout, "ran") || strings.Contains(stderr, "release") {
			t.Errorf("%v: ran, or spoke of a release of a lock it never got: stdout %q, stderr %q", args, stdout, stderr)
		}
	}
}
