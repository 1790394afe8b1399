package cluster

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/access"
)

// The credentials of the tenant tests: two client teams, each confined to
// its prefix, and an operator.
const (
	tokTeamA    = "team-a-token-0123456789abcdef"
	tokTeamB    = "team-b-token-0123456789abcdef"
	tokOperator = "operator-token-0123456789abcdef"
)

func tenantTokens(t testing.TB) *TokenSet {
	t.Helper()
	lines := []string{
		"team-a client a/,shared/ sha256:" + access.HashToken(tokTeamA),
		"team-b client b/,shared/ sha256:" + access.HashToken(tokTeamB),
		"ops operator * sha256:" + access.HashToken(tokOperator),
	}
	set, err := access.Parse(strings.NewReader(strings.Join(lines, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// withTenants configures a node with the tenant tests' credentials; the
// operator's token is also the one a node joins with.
func withTenants(t testing.TB) func(*Config) {
	return func(c *Config) { c.Tokens, c.Token = tenantTokens(t), tokOperator }
}

// tenantClient is an API client that sends token.
func tenantClient(t testing.TB, token string) *apiClient {
	c := newClient(t)
	c.token = token
	return c
}

// queueOf is the owners queued for the shared key key, in order, as c
// reads them.
func queueOf(t testing.TB, c *apiClient, addr, key string) []string {
	t.Helper()
	r := c.get(addr, key)
	if r.Status != http.StatusOK {
		return nil
	}
	var owners []string
	q, _ := r.Body["queue"].([]any)
	for _, w := range q {
		m, _ := w.(map[string]any)
		o, _ := m["owner"].(string)
		owners = append(owners, o)
	}
	return owners
}

// A flood of kept places from one credential leaves another's first come
// first served intact. 64 acquire-alls of 64 keys with keep_ms, by
// team-a, once took the node's whole pool of 4,096 kept places (one per
// key) in a moment; team-b's wait in chunks then lost its place between
// two chunks to a later waiter. Kept places are counted per credential,
// and an acquire-all's once.
func TestCluster_KeptPlacesFloodOfOneCredentialLeavesAnothersPlace(t *testing.T) {
	nodes := startCluster(t, 1, withTenants(t))
	addr := nodes[0].HTTPAddr()
	a, b := tenantClient(t, tokTeamA), tenantClient(t, tokTeamB)

	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("a/%02d", i)
	}
	mustStatus(t, a.acquireAll(addr, keys, "holder-a", time.Minute, 0), http.StatusOK, "team-a takes its keys")
	for i := range 64 {
		r := a.do(addr, "POST", "/v1/acquire", map[string]any{"keys": keys, "owner": fmt.Sprintf("flood-%d", i),
			"ttl_ms": 60_000, "wait_ms": 1, "keep_ms": 10_000})
		mustStatus(t, r, http.StatusConflict, fmt.Sprintf("team-a's kept acquire-all %d", i))
	}

	// team-b waits for a semaphore of one in chunks (whose queue a GET
	// lists in order); a later waiter comes between two chunks.
	acquire := func(owner string, wait time.Duration, keep bool) reply {
		body := map[string]any{"key": "b/k", "owner": owner, "ttl_ms": 60_000, "semaphore": 1}
		if wait > 0 {
			body["wait_ms"] = wait.Milliseconds()
		}
		if keep {
			body["keep_ms"] = 10_000
		}
		return b.do(addr, "POST", "/v1/acquire", body)
	}
	mustStatus(t, acquire("holder-b", 0, false), http.StatusOK, "team-b's holder")
	mustStatus(t, acquire("chunked", 100*time.Millisecond, true), http.StatusConflict, "the first chunk")
	later := make(chan reply, 1)
	go func() { later <- acquire("later", 20*time.Second, false) }()
	waitFor(t, 10*time.Second, "the later waiter to queue", func() bool { return slices.Contains(queueOf(t, b, addr, "b/k"), "later") })
	chunk := make(chan reply, 1)
	go func() { chunk <- acquire("chunked", 5*time.Second, true) }()
	var queue []string
	waitFor(t, 10*time.Second, "the next chunk to be queued", func() bool {
		queue = queueOf(t, b, addr, "b/k")
		return slices.Contains(queue, "chunked")
	})
	if !slices.Equal(queue, []string{"chunked", "later"}) {
		t.Fatalf("b/k's queue after the next chunk: %q; want the chunked wait first, its place kept while team-a flooded kept places", queue)
	}

	r := b.do(addr, "POST", "/v1/release", map[string]any{"key": "b/k", "owner": "holder-b"})
	mustStatus(t, r, http.StatusOK, "team-b's holder lets go")
	mustStatus(t, <-chunk, http.StatusOK, "the next chunk, first in line")
	mustStatus(t, b.do(addr, "POST", "/v1/release", map[string]any{"key": "b/k", "owner": "chunked"}), http.StatusOK, "the chunked wait lets go")
	mustStatus(t, <-later, http.StatusOK, "the later waiter, after it")
}
