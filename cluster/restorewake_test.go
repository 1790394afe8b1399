package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
)

// A node whose table changes by a snapshot it installs, not by entries it
// applies, wakes its watches of keys (GET /v1/watch) and of the whole
// table (GET /ui/events) at once, as an applied entry does: here k's
// holder changes only in the snapshot a follower installs, and both are
// answered within a second of it. (They were answered only when their
// long poll ended.)
//
// The snapshot comes through raft's restore on the leader: raft leaves a
// hole in the log behind it, so the followers install it as a follower
// far behind does.
func TestCluster_SnapshotInstallWakesWatches(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	f := followers(nodes, leader)[0]
	addr := leader.HTTPAddr()

	mustStatus(t, c.acquire(addr, "k", "b", 2*time.Minute, 0), http.StatusOK, "b acquires k")
	meta, snap := leaderSnapshot(t, leader) // k held by b
	mustStatus(t, c.release(addr, "k", "b"), http.StatusOK, "b releases k")
	r := c.acquire(addr, "k", "a", 2*time.Minute, 0)
	mustStatus(t, r, http.StatusOK, "a acquires k")
	waitFor(t, 10*time.Second, "the follower to apply a's grant of k", func() bool { return holderOn(f, "k") == "a" })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	type answer struct {
		r  reply
		at time.Time
	}
	watched := make(chan answer, 1)
	go func() {
		r := getCtx(ctx, c, f.HTTPAddr(), fmt.Sprintf("%s?key=k&seen=%d&wait_ms=25000", api.PathWatch, r.num("fence")))
		watched <- answer{r, time.Now()}
	}()
	waitFor(t, 10*time.Second, "the watch of k on the follower to wait", f.watches.Watched)
	events := tableEvents(ctx, t, c, f.HTTPAddr())

	select {
	case <-events: // a change told before the restore is not the one awaited
	default:
	}
	restoreOnLeader(t, leader, meta, snap)
	waitFor(t, 20*time.Second, "the follower to install the snapshot (k held by b)", func() bool { return holderOn(f, "k") == "b" })
	installed := time.Now()

	// Within a second of the install, on a loaded machine too: a watch
	// that is not woken waits its 25 s.
	const within = time.Second
	timer := time.NewTimer(time.Until(installed.Add(within)))
	defer timer.Stop()
	select {
	case a := <-watched:
		if a.r.Status != http.StatusOK || a.r.str("owner") != "b" {
			t.Fatalf("the watch of k answered %d %s, want k held by b", a.r.Status, a.r.Raw)
		}
		t.Logf("the watch of k answered %v from the install as this test saw it (by polling)", a.at.Sub(installed).Round(time.Millisecond))
	case <-timer.C:
		t.Fatalf("the watch of k on %s was not answered within %v of the snapshot install", f.ID(), within)
	}
	select {
	case <-events:
		t.Logf("the table's watch told a change %v from the install as this test saw it", time.Since(installed).Round(time.Millisecond))
	case <-time.After(time.Until(installed.Add(within))):
		t.Fatalf("GET /ui/events on %s told no change within %v of the snapshot install", f.ID(), within)
	}
}

// The ages a node shows after it installed a snapshot do not claim to
// know what happened in the entries the snapshot stands for: b queued
// for k, the snapshot was taken, b's wait ended and b queued again; once
// the snapshot is restored, b's place is the first one again, and the
// age the node shows for it is unknown, never the second wait's (which
// is shorter than b has waited in the restored table).
func TestCluster_AgesAfterSnapshotInstallDoNotLie(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	f := followers(nodes, leader)[0]
	addr := leader.HTTPAddr()

	mustStatus(t, c.acquire(addr, "k", "a", 2*time.Minute, 0), http.StatusOK, "a acquires k")
	first := make(chan reply, 1)
	go func() { first <- c.acquire(addr, "k", "b", 2*time.Minute, 3*time.Second) }()
	waitFor(t, 10*time.Second, "b to queue for k on every node", func() bool {
		return isWaiter(leader, "k", "b") && isWaiter(f, "k", "b")
	})
	queued := time.Now() // b's place in the snapshot was taken before this
	meta, snap := leaderSnapshot(t, leader)
	mustStatus(t, <-first, http.StatusConflict, "b's first wait")
	waitFor(t, 10*time.Second, "b's first wait to be cancelled on every node", func() bool {
		return !isWaiter(leader, "k", "b") && !isWaiter(f, "k", "b")
	})

	second := make(chan reply, 1)
	go func() { second <- c.acquire(addr, "k", "b", 2*time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "b to queue for k again on every node", func() bool {
		return isWaiter(leader, "k", "b") && isWaiter(f, "k", "b")
	})
	restored := time.Now()
	restoreOnLeader(t, leader, meta, snap)
	waitFor(t, 20*time.Second, "the follower to install the snapshot", func() bool { return snapshotInstalled(f, leader) })
	// The follower's clock has passed the second wait's start, so an age
	// taken from it would show.
	waitFor(t, 10*time.Second, "the follower's clock to pass the restore", func() bool { return f.fsm.Time() > restored.UnixNano() })

	check := func(where string, q []api.Waiting) {
		t.Helper()
		if len(q) != 1 || q[0].Owner != "b" {
			t.Fatalf("%s: k's queue is %+v, want b", where, q)
		}
		waited := time.Since(queued)
		if age := time.Duration(q[0].AgeMillis) * time.Millisecond; age > 0 && age < waited {
			t.Fatalf("%s: b's age is %v, but in the restored table it has waited more than %v: the age must be unknown or true", where, age, waited.Round(time.Millisecond))
		}
	}
	r := c.do(addr, "GET", api.PathLocks, nil)
	mustStatus(t, r, http.StatusOK, "list the locks")
	var list api.LockList
	if err := json.Unmarshal([]byte(r.Raw), &list); err != nil || len(list.Locks) != 1 {
		t.Fatalf("GET %s: %v %s", api.PathLocks, err, r.Raw)
	}
	check("GET "+api.PathLocks, list.Locks[0].Queue)
	l, held, err := f.tableLock(context.Background(), "test", "k", f.fsm.Time())
	if err != nil || !held {
		t.Fatalf("k on %s: %+v %v %v", f.ID(), l, held, err)
	}
	check(f.ID()+"'s table", l.Queue)

	mustStatus(t, c.release(addr, "k", "a"), http.StatusOK, "a releases k")
	select {
	case r := <-second:
		t.Logf("b's second wait ended %d", r.Status)
	case <-time.After(30 * time.Second):
		t.Fatal("b's second wait was never answered")
	}
}

// holderOn is the owner of key's grant in n's table ("" when free).
func holderOn(n *Node, key string) string {
	info, ok, err := n.fsm.Get(context.Background(), key)
	if err != nil || !ok {
		return ""
	}
	return info.Owner
}

// snapshotInstalled reports whether f's last snapshot is the one the
// leader's restore made.
func snapshotInstalled(f, leader *Node) bool {
	want := leader.raft.Stats()["last_snapshot_index"]
	return want != "0" && f.raft.Stats()["last_snapshot_index"] == want
}

// leaderSnapshot takes a raft snapshot on the leader and returns it.
func leaderSnapshot(t *testing.T, leader *Node) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	fut := leader.raft.Snapshot()
	if err := fut.Error(); err != nil {
		t.Fatalf("snapshot on %s: %v", leader.ID(), err)
	}
	meta, rc, err := fut.Open()
	if err != nil {
		t.Fatalf("open the snapshot: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read the snapshot: %v", err)
	}
	return meta, b
}

// restoreOnLeader restores snap through raft on the leader, which then
// sends it to the followers to install.
func restoreOnLeader(t *testing.T, leader *Node, meta *raft.SnapshotMeta, snap []byte) {
	t.Helper()
	if err := leader.raft.Restore(meta, bytes.NewReader(snap), 20*time.Second); err != nil {
		t.Fatalf("restore on %s: %v", leader.ID(), err)
	}
}

// getCtx is c.do's GET, ended by ctx.
func getCtx(ctx context.Context, c *apiClient, addr, path string) reply {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
	if err != nil {
		return reply{Raw: err.Error()}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{Raw: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// tableEvents opens GET /ui/events on addr and returns a channel that
// receives each change it tells, once the stream is open (and so
// watching). The stream ends with ctx.
func tableEvents(ctx context.Context, t *testing.T, c *apiClient, addr string) <-chan struct{} {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/ui/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("GET /ui/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET /ui/events: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "retry:") {
		resp.Body.Close()
		t.Fatalf("GET /ui/events began %q, want its retry line", sc.Text())
	}
	changes := make(chan struct{}, 1)
	go func() {
		defer resp.Body.Close()
		for sc.Scan() {
			if sc.Text() == "data: changed" {
				select {
				case changes <- struct{}{}:
				default:
				}
			}
		}
	}()
	return changes
}
