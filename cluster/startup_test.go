package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/loopback"
)

// grantSeen is a lock as GET /v1/lock reports it.
type grantSeen struct {
	owner string
	fence int64
}

// dataDirWithLocksOn runs a one-node cluster with its raft log in raftLog
// that grants locks, takes snapshots (each followed by more grants), then
// stops. With compact, the log up to the newest snapshot is deleted, as
// raft does once the log is long. It returns the config to restart with
// and the locks.
func dataDirWithLocksOn(t *testing.T, raftLog string, snapshots int, compact bool) (Config, map[string]grantSeen) {
	t.Helper()
	cfg := testConfig(t, "n1")
	cfg.RaftAddr = loopback.MustFreeAddr(t)
	cfg.RaftLog = raftLog
	n := startNode(t, cfg)
	waitLeader(t, []*Node{n})
	c := newClient(t)
	locks := map[string]grantSeen{}
	grant := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("k%02d", i)
			r := c.acquire(n.HTTPAddr(), key, "o"+key, time.Hour, 0)
			mustStatus(t, r, http.StatusOK, "acquire "+key)
			locks[key] = grantSeen{r.str("owner"), r.num("fence")}
		}
	}
	grant(0, 10)
	var snapIndex uint64
	for i := 0; i < snapshots; i++ {
		f := n.raft.Snapshot()
		if err := f.Error(); err != nil {
			t.Fatal(err)
		}
		meta, rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		_ = rc.Close()
		snapIndex = meta.Index
		grant(10+5*i, 15+5*i)
	}
	shutdown(t, n)
	if compact && raftLog == RaftLogWAL {
		compactWAL(t, cfg.DataDir, snapIndex)
	} else if compact {
		compactLog(t, cfg.DataDir, snapIndex)
	}
	return cfg, locks
}

// compactLog deletes the log entries up to index.
func compactLog(t *testing.T, dir string, index uint64) {
	t.Helper()
	s, err := raftboltdb.New(raftstore.BoltOptions(filepath.Join(dir, "raft.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(first, index); err != nil {
		t.Fatal(err)
	}
}

func restart(t *testing.T, cfg Config) (*Node, error) {
	t.Helper()
	cfg.Logger = testLogger(t, "restart")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := NewNode(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { shutdown(t, n) })
	return n, nil
}

// mustRefuse restarts the node and requires a start-up error that names
// file and contains every one of words.
func mustRefuse(t *testing.T, cfg Config, file string, words ...string) {
	t.Helper()
	n, err := restart(t, cfg)
	if err == nil {
		t.Fatalf("node started (%s) from a damaged data dir", n.ID())
	}
	msg := err.Error()
	if !strings.Contains(msg, file) || !strings.Contains(msg, "refusing to start") {
		t.Fatalf("error does not name %s: %v", file, err)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Fatalf("error does not say %q: %v", w, err)
		}
	}
	t.Logf("refused as expected: %v", err)
}

// mustStartComplete restarts the node and requires every lock with its
// owner and fence.
func mustStartComplete(t *testing.T, cfg Config, locks map[string]grantSeen) {
	t.Helper()
	n, err := restart(t, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	waitLeader(t, []*Node{n})
	c := newClient(t)
	for k, g := range locks {
		r := c.get(n.HTTPAddr(), k)
		if r.str("owner") != g.owner || r.num("fence") != g.fence {
			t.Fatalf("after restart %s = %d %s, want owner %s fence %d", k, r.Status, r.Raw, g.owner, g.fence)
		}
	}
}

// dataDirCase damages the data dir of a stopped node that granted locks,
// then restarts the node.
type dataDirCase struct {
	name      string
	snapshots int  // taken, each followed by more grants
	compact   bool // the log deleted up to the newest snapshot
	damage    damage
	// words are what the refusal says besides the file damage names;
	// none: the node starts with every lock.
	words []string
	// after, if set, checks the data dir once the start was refused.
	after func(t *testing.T, cfg Config)
}

// A damage damages a stopped node's data dir (cfg.DataDir) and returns
// the file or directory a refusal must name.
type damage func(t *testing.T, cfg Config) string

// An edit damages the bytes of a file.
type edit func(t *testing.T, b []byte) []byte

// runDataDirCases runs each case on a data dir whose raft log is in
// raftLog.
func runDataDirCases(t *testing.T, raftLog string, cases []dataDirCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, locks := dataDirWithLocksOn(t, raftLog, tc.snapshots, tc.compact)
			var path string
			if tc.damage != nil {
				path = tc.damage(t, cfg)
			}
			if len(tc.words) == 0 {
				mustStartComplete(t, cfg, locks)
				return
			}
			mustRefuse(t, cfg, path, tc.words...)
			if tc.after != nil {
				tc.after(t, cfg)
			}
		})
	}
}

func rewrite(t *testing.T, path string, e edit) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, e(t, b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// inDataDir is the path of elem in the data dir.
func inDataDir(elem ...string) func(*testing.T, Config) string {
	return func(_ *testing.T, cfg Config) string {
		return filepath.Join(append([]string{cfg.DataDir}, elem...)...)
	}
}

var raftDB = inDataDir("raft.db")

// rewritten is the damage of e on the file at path.
func rewritten(path func(*testing.T, Config) string, e edit) damage {
	return func(t *testing.T, cfg Config) string {
		p := path(t, cfg)
		rewrite(t, p, e)
		return p
	}
}

// inSnapshot is the damage of e on the file name of the newest snapshot,
// which a refusal names.
func inSnapshot(name string, e edit) damage {
	return func(t *testing.T, cfg Config) string {
		dir := newestSnapshot(t, cfg.DataDir)
		rewrite(t, filepath.Join(dir, name), e)
		return dir
	}
}

// removed is the damage of deleting the file or directory at path.
func removed(path func(*testing.T, Config) string) damage {
	return func(t *testing.T, cfg Config) string {
		p := path(t, cfg)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// newRaftDB swaps raft.db for a new, valid but empty one (say, restored
// from the wrong backup).
func newRaftDB(t *testing.T, cfg Config) string {
	p := removed(raftDB)(t, cfg)
	s, err := raftboltdb.New(raftstore.BoltOptions(p))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func emptied(*testing.T, []byte) []byte { return nil }

func halved(_ *testing.T, b []byte) []byte { return b[:len(b)/2] }

func notABoltFile(*testing.T, []byte) []byte { return bytes.Repeat([]byte("not a database "), 1000) }

// boltTruncated cuts a bbolt file short of its last page in use.
func boltTruncated(t *testing.T, b []byte) []byte {
	m := readBoltMeta(t, b)
	return b[:int(m.highWater-1)*int(m.pageSize)]
}

// replacedBy is the edit that writes body instead.
func replacedBy(body []byte) edit {
	return func(*testing.T, []byte) []byte { return body }
}

func flipBytes(from, n int) edit {
	return func(_ *testing.T, b []byte) []byte {
		for i := from; i < from+n && i < len(b); i++ {
			b[i] ^= 0x5a
		}
		return b
	}
}

func TestStartup_DataDir(t *testing.T) {
	runDataDirCases(t, RaftLogBolt, []dataDirCase{
		// raft: the snapshot's state.bin fails the CRC in meta.json, and
		// no older snapshot exists, so raft refuses to start ("failed to
		// load any existing snapshots", naming neither file nor reason).
		// The node says which file and what, and that the log would do
		// without it.
		{name: "SnapshotStateDamagedIsRefused", snapshots: 1, damage: inSnapshot("state.bin", flipBytes(10, 8)),
			words: []string{"state.bin", "CRC", "move the damaged snapshot"}},
		{name: "SnapshotStateTruncatedIsRefused", snapshots: 1, compact: true, damage: inSnapshot("state.bin", halved),
			words: []string{"state.bin", "CRC", "replace this node's data directory"}},
		// A state.bin that matches its CRC but that the FSM refuses
		// (written by a bug, or forged): raft would only log the FSM's
		// refusal and give up with a vague error; the node names the file
		// and the FSM's reason.
		{name: "SnapshotBodyRefusedByFSMIsRefused", snapshots: 1, damage: snapshotTheFSMRefuses,
			words: []string{"state.bin", "fsm: corrupt snapshot", "format version 9"}},
		// raft skips a snapshot whose meta.json does not parse, with only
		// a warning. When the log still holds every entry, it replays it
		// and the table is complete: the node starts.
		{name: "SnapshotMetaGarbageWithFullLogStartsComplete", snapshots: 1, damage: inSnapshot("meta.json", replacedBy([]byte("garbage")))},
		// ...but when the log was compacted up to that snapshot, raft
		// starts with an empty table and then stops with "log not found"
		// when it applies. The node refuses first and says which entries
		// are missing.
		{name: "SnapshotMetaGarbageWithCompactedLogIsRefused", snapshots: 1, compact: true, damage: inSnapshot("meta.json", halved),
			words: []string{"meta.json is unreadable", "do not cover"}},
		// raft falls back to an older snapshot when the newest is damaged;
		// with the log reaching back to it, nothing is lost and the node
		// starts.
		{name: "DamagedNewestSnapshotFallsBackToOlderComplete", snapshots: 2, damage: func(t *testing.T, cfg Config) string {
			if n := len(snapshotsOf(t, cfg.DataDir)); n != 2 {
				t.Fatalf("%d snapshots, want 2", n)
			}
			return inSnapshot("state.bin", flipBytes(5, 4))(t, cfg)
		}},
		// ...and when the log was compacted up to the damaged snapshot,
		// the older one cannot make up for it: refused.
		{name: "DamagedNewestSnapshotWithCompactedLogIsRefused", snapshots: 2, compact: true, damage: inSnapshot("state.bin", flipBytes(5, 4)),
			words: []string{"CRC", "do not cover"}},
		// bbolt turns a zero-length file into a new, empty database: the
		// node would bootstrap a new cluster with an empty table.
		{name: "EmptyRaftDBIsRefused", damage: rewritten(raftDB, emptied), words: []string{"empty (0 bytes)"}},
		// With a snapshot, an emptied raft.db would start from the
		// snapshot alone and lose every grant after it.
		{name: "EmptyRaftDBWithSnapshotIsRefused", snapshots: 1, damage: rewritten(raftDB, emptied), words: []string{"empty (0 bytes)"}},
		{name: "MissingRaftDBWithSnapshotIsRefused", snapshots: 1, damage: removed(raftDB), words: []string{"missing"}},
		// A truncated raft.db makes bbolt fault with SIGBUS while it opens
		// the file (the process dies with a stack trace).
		{name: "TruncatedRaftDBIsRefused", damage: rewritten(raftDB, boltTruncated), words: []string{"truncated"}},
		{name: "RaftDBNotABoltFileIsRefused", damage: rewritten(raftDB, notABoltFile), words: []string{"not a bbolt database"}},
		// Garbage in the tree pages makes bbolt panic in a goroutine of
		// its own while it rebuilds its free list on open (the process
		// dies).
		{name: "RaftDBGarbagePagesAreRefused", damage: rewritten(raftDB, boltGarbagePages), words: []string{"page"}},
		// The checks do not get in the way of a clean restart, with
		// snapshots and a compacted log.
		{name: "CleanDataDirStartsComplete", snapshots: 2, compact: true},
		// A raft.db swapped for a new, valid but empty one would start
		// from the snapshot alone, losing every grant after it and the
		// node's term and vote.
		{name: "ReplacedRaftDBIsRefused", snapshots: 1, damage: newRaftDB, words: []string{"no current term"}},
	})
}

// snapshotTheFSMRefuses writes a state.bin the FSM refuses to the newest
// snapshot, with its CRC and size in meta.json.
func snapshotTheFSMRefuses(t *testing.T, cfg Config) string {
	dir := newestSnapshot(t, cfg.DataDir)
	body := []byte{9, 9, 9, 9}
	rewrite(t, filepath.Join(dir, "state.bin"), replacedBy(body))
	sum := crc64.Checksum(body, crc64.MakeTable(crc64.ECMA))
	rewrite(t, filepath.Join(dir, "meta.json"), func(t *testing.T, b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["CRC"] = binary.BigEndian.AppendUint64(nil, sum)
		m["Size"] = len(body)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	return dir
}

// boltGarbagePages writes garbage over the element count and headers of
// every tree page of a bbolt file.
func boltGarbagePages(t *testing.T, b []byte) []byte {
	m := readBoltMeta(t, b)
	ps := int(m.pageSize)
	damaged := 0
	for id := 2; (id+1)*ps <= len(b); id++ {
		p := b[id*ps:]
		if binary.LittleEndian.Uint64(p) != uint64(id) || binary.LittleEndian.Uint16(p[8:])&(boltBranchPage|boltLeafPage) == 0 {
			continue
		}
		for i := 10; i < 64; i++ { // element count and headers
			p[i] = 0xff
		}
		damaged++
	}
	if damaged == 0 {
		t.Fatal("no tree page found to damage")
	}
	return b
}

// cutNewestAcquire cuts the last byte off the newest acquire entry at or
// below last, read with get: an entry that does not decode. It returns
// that entry's index (0 when there is none) and the entries from it to
// last.
func cutNewestAcquire(t *testing.T, last uint64, get func(uint64, *raft.Log) error) (uint64, []*raft.Log) {
	t.Helper()
	var tail []*raft.Log
	for i := last; i > 0; i-- {
		l := new(raft.Log)
		if err := get(i, l); err != nil {
			t.Fatal(err)
		}
		tail = append([]*raft.Log{l}, tail...)
		if l.Type == raft.LogCommand && len(l.Data) > 0 && isAcquire(engine.Op(l.Data[0])) {
			l.Data = l.Data[:len(l.Data)-1]
			return i, tail
		}
	}
	t.Fatal("no acquire entry in the log")
	return 0, nil
}

// A log entry after the snapshot that does not decode would stop the FSM
// when applied (fsm.CorruptEntryError); the node refuses to start instead,
// naming the entry.
func TestStartup_UndecodableLogEntryIsRefused(t *testing.T) {
	cfg, _ := dataDirWithLocksOn(t, RaftLogBolt, 1, false)
	path := filepath.Join(cfg.DataDir, "raft.db")
	s, err := raftboltdb.New(raftstore.BoltOptions(path))
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	bad, tail := cutNewestAcquire(t, last, s.GetLog)
	if err := s.StoreLog(tail[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, cfg, path, fmt.Sprintf("log entry %d does not decode", bad), "malformed")
}

// isAcquire reports whether op is an acquire entry: v0.1.0's, or the one
// acquire entry a node writes once every member applies it.
func isAcquire(op engine.Op) bool { return op == engine.OpAcquire || op == engine.OpAcquireKeys }
