package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// OpAcquireKeys is every acquire: a single key is a set of one, of any
// claim, and the result has one grant per key in the order of Keys, the
// holder in the way when it is not OK.
func TestReplicated_AcquireKeysIsEveryAcquire(t *testing.T) {
	e := newReplicated(t, Config{})
	sem := Claim{Kind: Semaphore, Limit: 2}
	res := mustApply(t, e,
		Command{Op: OpAcquireKeys, Keys: []string{"m"}, Owner: "x", TTL: time.Second, Now: t0, Fence: 10},
		Command{Op: OpAcquireKeys, Keys: []string{"m"}, Owner: "y", TTL: time.Second, Now: t0, Fence: 11},
		Command{Op: OpAcquireKeys, Keys: []string{"m"}, Owner: "y", TTL: time.Second, Now: t0, Fence: 12, Wait: true},
		Command{Op: OpAcquireKeys, Keys: []string{"s"}, Owner: "a", TTL: time.Second, Now: t0, Fence: 13, Claim: sem},
		Command{Op: OpAcquireKeys, Keys: []string{"p", "q"}, Owner: "x", TTL: time.Second, Now: t0, Fence: 14},
		Command{Op: OpAcquireKeys, Keys: []string{"r", "m"}, Owner: "z", TTL: time.Second, Now: t0, Fence: 15, Wait: true},
		Command{Op: OpAcquireKeys, Keys: []string{"w"}, Owner: "x", TTL: time.Second, Now: t0, Fence: 16, Claim: Claim{Write: true}},
	)
	held := grantOf("m", "x", 10, t0+int64(time.Second))
	if r := res[0]; !r.OK || r.Grant != held || len(r.Grants) != 1 || r.Grants[0] != held {
		t.Fatalf("a mutex of one key: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[1]; r.OK || r.Queued || r.Grant != held || r.Grants != nil {
		t.Fatalf("a busy key: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[2]; r.OK || !r.Queued || r.Grant != held || len(r.Grants) != 1 || r.Grants[0] != (Grant{}) {
		t.Fatalf("a wait: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[3]; !r.OK || r.Grant.Fence != 13 || r.Grants[0] != r.Grant {
		t.Fatalf("a semaphore's slot: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[4]; !r.OK || len(r.Grants) != 2 || r.Grants[0].Key != "p" || r.Grants[1].Key != "q" || r.Grant != r.Grants[0] {
		t.Fatalf("a set: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[5]; r.OK || !r.Queued || r.Grant != held || r.Grants[0].Key != "r" || r.Grants[1] != (Grant{}) {
		t.Fatalf("a set queued for one key: %s grants %v", fmtResult(r), r.Grants)
	}
	if r := res[6]; !errors.Is(r.Err, drivers.ErrInvalid) || r.Grants != nil {
		t.Fatalf("a mutex's write side: %s grants %v", fmtResult(r), r.Grants)
	}
	if OpAcquireKeys.String() != "acquire_keys" {
		t.Fatalf("String = %q", OpAcquireKeys.String())
	}
}
