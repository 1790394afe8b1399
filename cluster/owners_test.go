package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/election"
)

// A client credential reading another credential's lock sees who holds
// it, never its owner token; and the token, learnt some other way, lets
// it neither release the lock nor keep it alive: the node records every
// owner behind the credential that named it. GET /v1/lock and /v1/locks
// once showed every holder's token to every credential within the
// prefixes, and a release with it worked (force-release, refused to a
// client, by another door), as did extending a dead holder's lock for
// ever. The credential that made the grant, and an operator, see the
// token.
func TestCluster_OwnerTokensAreTheirCredentialsOwn(t *testing.T) {
	nodes := startCluster(t, 3, withTenants(t))
	leader := waitLeader(t, nodes)
	follower := followers(nodes, leader)[0].HTTPAddr()
	a, b, ops := tenantClient(t, tokTeamA), tenantClient(t, tokTeamB), tenantClient(t, tokOperator)
	const token = "0123456789abcdef0123456789abcdef"
	owner := token + ":deploy@host-3"

	r := a.acquire(leader.HTTPAddr(), "shared/k", owner, time.Minute, 0)
	mustStatus(t, r, http.StatusOK, "team-a takes shared/k")
	fence := r.num("fence")

	// Through a follower, which forwards to the leader.
	got := b.get(follower, "shared/k")
	mustStatus(t, got, http.StatusOK, "team-b reads shared/k")
	if strings.Contains(got.Raw, token) || got.str("holder") != "deploy@host-3" {
		t.Fatalf("team-b reads team-a's lock as %s; want its holder, never its token", got.Raw)
	}
	list := b.do(follower, "GET", "/v1/locks?prefix=shared/", nil)
	mustStatus(t, list, http.StatusOK, "team-b lists shared/")
	if strings.Contains(list.Raw, token) || !strings.Contains(list.Raw, `"holder":"deploy@host-3"`) {
		t.Fatalf("team-b lists team-a's lock as %s; want its holder, never its token", list.Raw)
	}

	busy := b.acquire(follower, "shared/k", "fedcba9876543210fedcba9876543210:other", time.Minute, 0)
	if busy.Status != http.StatusConflict || busy.str("holder") != "deploy@host-3" || strings.Contains(busy.Raw, token) {
		t.Fatalf("team-b's acquire of team-a's lock: %d %s; want 409 naming its holder, never its token", busy.Status, busy.Raw)
	}

	rel := b.release(follower, "shared/k", owner)
	mustStatus(t, rel, http.StatusOK, "team-b's release with team-a's token")
	ext := b.do(follower, "POST", "/v1/extend", map[string]any{"key": "shared/k", "owner": owner, "ttl_ms": 3_600_000})
	mustStatus(t, ext, http.StatusOK, "team-b's extend with team-a's token")
	if rel.flag("released") || ext.flag("extended") {
		t.Fatalf("team-b with team-a's token: release %s, extend %s; want neither", rel.Raw, ext.Raw)
	}

	for name, c := range map[string]*apiClient{"team-a": a, "the operator": ops} {
		got := c.get(follower, "shared/k")
		if got.Status != http.StatusOK || got.str("owner") != owner || got.num("fence") != fence {
			t.Fatalf("%s reads shared/k as %d %s; want team-a's grant with its owner %q", name, got.Status, got.Raw, owner)
		}
	}
	if r := a.release(follower, "shared/k", owner); !r.flag("released") {
		t.Fatalf("team-a's release of its own grant: %d %s", r.Status, r.Raw)
	}

	// A semaphore's holders and waiters: each credential sees its own
	// owners, and the holder of the others'.
	const tokenB = "fedcba9876543210fedcba9876543210"
	ownerB := tokenB + ":worker@host-9"
	sem := func(c *apiClient, owner string, wait time.Duration) reply {
		return c.do(follower, "POST", "/v1/acquire", map[string]any{"key": "shared/sem", "owner": owner, "ttl_ms": 60_000,
			"wait_ms": wait.Milliseconds(), "semaphore": 1})
	}
	mustStatus(t, sem(a, owner, 0), http.StatusOK, "team-a takes the semaphore")
	waited := make(chan reply, 1)
	go func() { waited <- sem(b, ownerB, 20*time.Second) }()
	hidden := func(holder string) string { return "00000000000000000000000000000000:" + holder }
	for _, tc := range []struct {
		name                string
		c                   *apiClient
		holder, waiter, not string
	}{
		{"team-a", a, owner, hidden("worker@host-9"), tokenB},
		{"team-b", b, hidden("deploy@host-3"), ownerB, token},
		{"the operator", ops, owner, ownerB, ""},
	} {
		var got reply
		waitFor(t, 10*time.Second, "team-b's waiter to queue", func() bool {
			got = tc.c.get(follower, "shared/sem")
			return strings.Contains(got.Raw, `"queue":[`)
		})
		holders, _ := got.Body["holders"].([]any)
		queue, _ := got.Body["queue"].([]any)
		if len(holders) != 1 || len(queue) != 1 || (tc.not != "" && strings.Contains(got.Raw, tc.not)) ||
			holders[0].(map[string]any)["owner"] != tc.holder || queue[0].(map[string]any)["owner"] != tc.waiter {
			t.Fatalf("%s reads the semaphore as %s; want holder %q and waiter %q", tc.name, got.Raw, tc.holder, tc.waiter)
		}
	}
	if r := a.release(follower, "shared/sem", owner); !r.flag("released") {
		t.Fatalf("team-a's release of the semaphore: %d %s", r.Status, r.Raw)
	}
	mustStatus(t, <-waited, http.StatusOK, "team-b's wait, once team-a let go")
	if r := b.release(follower, "shared/sem", ownerB); !r.flag("released") {
		t.Fatalf("team-b's release of the semaphore: %d %s", r.Status, r.Raw)
	}
}

// An election read by another credential still names its leader: the
// value is the holder after the owner's token, which every credential
// within the prefixes sees.
func TestCluster_AnotherCredentialReadsAnElectionsLeader(t *testing.T) {
	nodes := startCluster(t, 1, withTenants(t))
	manager := func(token string) *lock.Manager {
		cl, err := client.New(client.Config{Addrs: []string{nodes[0].HTTPAddr()}, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		m := lock.New(cl)
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	elect := func(m *lock.Manager) *election.Election {
		e, err := election.New(m, "shared/leader", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	l, err := elect(manager(tokTeamA)).Campaign(t.Context(), "n1.example:8080")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Resign(ctx)
	})
	got, err := elect(manager(tokTeamB)).Leader(t.Context())
	if err != nil || got.Value != "n1.example:8080" || got.Term != l.Term() {
		t.Fatalf("team-b reads the leader as %+v, %v; want team-a's n1.example:8080, term %d", got, err, l.Term())
	}
}
