package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
)

// A list of several keys at their holder cap, each with the longest
// owners, is cut to what one stream answer carries and marked truncated;
// a list of the API's largest limit of ordinary locks is whole.
func TestList_AnswerOfFullSharedKeysFitsTheStream(t *testing.T) {
	e, err := engine.NewReplicated(engine.Config{MaxKeys: -1, MaxHoldersPerKey: DefaultMaxHoldersPerKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const now = int64(1_000_000_000)
	const keys = 3
	for k := range keys {
		key := fmt.Sprintf("full/%d/", k) + strings.Repeat("\x01", drivers.MaxKeyLen-8)
		var cmds []engine.Command
		for i := range DefaultMaxHoldersPerKey {
			id := fmt.Sprint(i)
			owner := id + strings.Repeat("\x01", drivers.MaxOwnerLen-len(id))
			cmds = append(cmds, engine.Command{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: owner, TTL: time.Minute, Now: now, Claim: engine.Claim{Kind: engine.RWLock}})
		}
		res, err := e.Apply(t.Context(), cmds)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if !r.OK {
				t.Fatalf("key %d, reader %d: %+v", k, i, r)
			}
		}
	}
	infos, err := e.List(t.Context(), "full/", 0)
	if err != nil || len(infos) != keys {
		t.Fatalf("List = %d keys, %v", len(infos), err)
	}
	var locks []api.Lock
	for _, in := range infos {
		l, held := heldLock(in, now)
		if !held {
			t.Fatal("a full key reads as free")
		}
		locks = append(locks, l)
	}
	kept, cut := fitList(locks, maxListAnswer)
	if !cut || len(kept) == 0 || len(kept) == keys {
		t.Fatalf("kept %d of %d full keys, cut %v; want some, not all, and the answer marked truncated", len(kept), keys, cut)
	}
	body, err := json.Marshal(api.LockList{Locks: kept, Truncated: cut})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.AppendAnswer(nil, stream.Answer{ID: 1 << 62, Status: http.StatusOK, Body: body}); err != nil {
		t.Fatalf("a list of %d full keys (%d bytes) does not fit one stream answer (%d): %v", len(kept), len(body), stream.MaxAnswer, err)
	}
	t.Logf("a list of full keys: %d of %d kept, %d bytes", len(kept), keys, len(body))

	// The API's largest limit of ordinary locks, with long keys and owners,
	// is not cut.
	var plain []api.Lock
	for i := range 10_000 {
		plain = append(plain, api.Lock{Key: fmt.Sprintf("jobs/%05d/", i) + strings.Repeat("k", 200), Owner: strings.Repeat("o", 200), Fence: uint64(i + 1)})
	}
	if kept, cut := fitList(plain, maxListAnswer); cut || len(kept) != len(plain) {
		t.Fatalf("a list of %d plain locks kept %d, cut %v; want it whole", len(plain), len(kept), cut)
	}
	// A single key larger than the budget is still listed: a list always
	// makes progress.
	if kept, cut := fitList(locks[:1], 1); len(kept) != 1 || cut {
		t.Fatalf("one key over the budget: kept %d, cut %v; want it kept", len(kept), cut)
	}
}
