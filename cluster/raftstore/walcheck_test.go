package raftstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// walSegmentBytes writes entries into a new WAL of small segments and
// returns the segments as wal-meta.db lists them, with their bytes.
func walSegmentBytes(tb testing.TB, entries int) ([]types.SegmentInfo, [][]byte) {
	tb.Helper()
	dir := tb.TempDir()
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(8<<10), wal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 1; i <= entries; i++ {
		l := &raft.Log{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: []byte("an entry of some length, to fill the segments")}
		if err := w.StoreLogs([]*raft.Log{l}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		tb.Fatal(err)
	}
	state, err := readWALMeta(filepath.Join(dir, metadb.FileName))
	if err != nil {
		tb.Fatal(err)
	}
	var files [][]byte
	for _, si := range state.Segments {
		b, err := os.ReadFile(filepath.Join(dir, segment.FileName(si)))
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, b)
	}
	return state.Segments, files
}

// The segment checks accept what raft-wal writes: sealed segments with
// their index, and the tail.
func TestCheckSegment_AcceptsWhatRaftWALWrites(t *testing.T) {
	segs, files := walSegmentBytes(t, 400)
	if len(segs) < 2 {
		t.Fatalf("%d segments, want a sealed one and the tail", len(segs))
	}
	for i, si := range segs {
		tail := i == len(segs)-1
		if torn, err := checkSegment(files[i], si, tail); err != nil || torn != 0 {
			t.Fatalf("segment %d (tail %v): torn %d, %v", si.ID, tail, torn, err)
		}
	}
}

// FuzzCheckSegment: the segment checks never panic on any bytes, and a
// tail they accept loses no batch whose checksum holds: what raft-wal
// keeps (the batches up to the first damage) is then every such batch.
func FuzzCheckSegment(f *testing.F) {
	segs, files := walSegmentBytes(f, 400)
	last := len(segs) - 1
	f.Add(files[last], false)
	f.Add(files[0], true)
	f.Fuzz(func(t *testing.T, b []byte, sealed bool) {
		si, tail := segs[last], true
		if sealed {
			si, tail = segs[0], false
		}
		torn, err := checkSegment(b, si, tail)
		if err != nil || !tail {
			return
		}
		w := walkSegment(b)
		if at := verifiedBatchAfter(b, w.goodEnd); at >= 0 {
			t.Fatalf("accepted a tail with a checked batch ending at %d after the kept ones (up to %d)", at, w.goodEnd)
		}
		if torn < 0 || w.goodEnd+torn > len(b) || slices.ContainsFunc(b[w.goodEnd+torn:], func(c byte) bool { return c != 0 }) {
			t.Fatalf("torn %d bytes from %d does not reach the last written byte of %d", torn, w.goodEnd, len(b))
		}
	})
}

// raft-wal reads a sealed segment through its index, without a checksum:
// a damaged entry in it is refused, naming the batch.
func TestCheckSegment_DamagedSealedSegmentIsRefused(t *testing.T) {
	segs, files := walSegmentBytes(t, 400)
	b := slices.Clone(files[0])
	w := walkSegment(b)
	b[w.offsets[len(w.offsets)/2]+walFrameHeaderLen+1] ^= 0x01
	if _, err := checkSegment(b, segs[0], false); err == nil || !strings.Contains(err.Error(), "fails its checksum") {
		t.Fatalf("a damaged sealed segment: %v, want its checksum failure", err)
	}
}
