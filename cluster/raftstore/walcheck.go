package raftstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// raft-wal trusts its files more than a lock table can afford to. What
// it checks when it opens: the header of each sealed segment against
// wal-meta.db, and the checksum of the last batch of the tail segment
// (a torn last batch, never acknowledged, is dropped: correct). What it
// does not, and checkWALFiles does before it opens:
//
//   - wal-meta.db missing while segments exist (raft-wal would start a
//     new, empty log and delete every segment as a left-over), empty
//     (bbolt makes it a new database, and raft-wal then panics on the
//     missing bucket), truncated or damaged (bbolt faults or panics, as
//     for raft.db: the same page walk checks it), or listing no log;
//   - a segment file newer than wal-meta.db (raft-wal deletes it);
//   - a segment file missing, shorter than the size raft-wal allocated
//     it (truncated), or whose header is not the one wal-meta.db lists;
//   - the checksum of any batch but the tail's last: raft-wal reads the
//     entries of a sealed segment, and of the tail's earlier batches,
//     without looking at a checksum, so damage returns wrong entries;
//   - damage in the tail before its last batch: raft-wal reads frames up
//     to the first bad one and takes everything after it for a torn
//     write, dropping acknowledged batches without a word. A later batch
//     whose checksum holds shows that the damage is not a torn write.
//
// raft.db records that the data dir's log is a WAL (wal.go): a WAL
// missing while raft has run on the data dir is refused here. A segment
// that raft-wal sealed without an index is given one first
// (walrepair.go).

const (
	walDir           = "wal"
	walMetaBucket    = metadb.MetaBucket
	walMetaKey       = metadb.MetaKey
	walSegmentSuffix = ".wal"

	walFileHeaderLen  = 32
	walFrameHeaderLen = 8
	walMagic          = 0x58eb6b0d
	walFrameEntry     = 1
	walFrameIndex     = 2
	walFrameCommit    = 3

	// walMaxTornBytes bounds what one unacknowledged batch can leave after
	// the last good one: raft appends at most MaxAppendEntries (256)
	// entries at once, each at most a request body (64 KiB) plus framing.
	// Written bytes further out than that are not a torn write.
	walMaxTornBytes = 32 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkWALFiles checks the WAL directory dir before raft-wal opens it
// (see the top of this file). hadWAL: raft.db records that this data dir
// has a WAL, so a missing one is a loss, not a new node. A torn last
// batch is reported through warn, not refused.
func checkWALFiles(dir string, hadWAL bool, warn func(msg string, args ...any)) error {
	metaPath := filepath.Join(dir, metadb.FileName)
	segs, err := listSegmentFiles(dir)
	if err != nil {
		return &dataError{path: dir, problem: err.Error(), hint: replaceHint}
	}
	info, err := os.Stat(metaPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(segs) > 0:
		return &dataError{path: metaPath, problem: fmt.Sprintf("missing, but %d segment file(s) exist: raft-wal would start an empty log and delete them", len(segs)), hint: replaceHint}
	case errors.Is(err, os.ErrNotExist) && hadWAL:
		return &dataError{path: dir, problem: "holds no WAL, but raft.db records that this node's log is there: the log is lost", hint: replaceHint}
	case errors.Is(err, os.ErrNotExist):
		return nil // a new WAL
	case err != nil:
		return &dataError{path: metaPath, problem: err.Error()}
	case info.Size() == 0:
		return &dataError{path: metaPath, problem: "empty (0 bytes): the list of log segments is lost", hint: replaceHint}
	}
	if err := checkBoltFile(metaPath); err != nil {
		if inUse(metaPath) {
			return nil // another node is writing it: opening raft.db said so first
		}
		return &dataError{path: metaPath, problem: err.Error(), hint: replaceHint}
	}
	state, err := readWALMeta(metaPath)
	if err != nil {
		return &dataError{path: metaPath, problem: err.Error(), hint: replaceHint}
	}
	if hadWAL && len(state.Segments) == 0 {
		return &dataError{path: metaPath, problem: "lists no log segment, but raft.db records that this node's log is here: the file was replaced", hint: replaceHint}
	}
	if err := sealWithIndex(dir, metaPath, &state); err != nil {
		return err
	}
	listed := map[uint64]bool{}
	for _, si := range state.Segments {
		listed[si.ID] = true
	}
	for id, base := range segs {
		if !listed[id] && id >= state.NextSegmentID {
			return &dataError{path: filepath.Join(dir, segment.FileName(types.SegmentInfo{ID: id, BaseIndex: base})),
				problem: fmt.Sprintf("segment %d is newer than %s (next segment %d): the meta file was replaced or rolled back, and raft-wal would delete this segment",
					id, metadb.FileName, state.NextSegmentID), hint: replaceHint}
		}
	}
	for i, si := range state.Segments {
		tail := i == len(state.Segments)-1 && si.SealTime.IsZero()
		path := filepath.Join(dir, segment.FileName(si))
		torn, err := checkSegmentFile(path, si, tail)
		if err != nil {
			return &dataError{path: path, problem: err.Error(), hint: replaceHint}
		}
		if torn > 0 && warn != nil {
			warn("torn write at the end of the log dropped: it was never acknowledged", "file", path, "bytes", torn)
		}
	}
	return nil
}

// listSegmentFiles maps the ID of each segment file in dir to its base
// index, as raft-wal lists them; a missing dir has none.
func listSegmentFiles(dir string) (map[uint64]uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	segs := map[uint64]uint64{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), walSegmentSuffix) {
			continue
		}
		var base, id uint64
		if _, err := fmt.Sscanf(e.Name(), "%020d-%016x"+walSegmentSuffix, &base, &id); err != nil {
			return nil, fmt.Errorf("%s: not a segment file name raft-wal can read", e.Name())
		}
		segs[id] = base
	}
	return segs, nil
}

// readWALMeta reads the segment list from wal-meta.db, which
// checkBoltFile has found safe to open.
func readWALMeta(path string) (types.PersistentState, error) {
	var state types.PersistentState
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		return state, err
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(walMetaBucket))
		if b == nil {
			return fmt.Errorf("has no %q bucket: not raft-wal's meta file", walMetaBucket)
		}
		raw := b.Get([]byte(walMetaKey))
		if raw == nil {
			return nil // no segment yet
		}
		if err := json.Unmarshal(raw, &state); err != nil {
			return fmt.Errorf("the segment list does not parse: %w", err)
		}
		return nil
	})
	return state, err
}

// checkSegmentFile checks the segment file at path that wal-meta.db
// lists as si; tail: it is the segment raft-wal appends to. It returns
// how many bytes of a torn last batch raft-wal will drop.
func checkSegmentFile(path string, si types.SegmentInfo, tail bool) (torn int, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && tail {
		// raft-wal commits a new tail to wal-meta.db before it creates the
		// file, and syncs the directory before the first append to it
		// returns: a missing tail held nothing acknowledged.
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if si.SizeLimit > 0 && len(b) < int(si.SizeLimit) {
		return 0, fmt.Errorf("truncated: %d bytes, but raft-wal allocated it %d", len(b), si.SizeLimit)
	}
	return checkSegment(b, si, tail)
}

// segmentWalk is what walkSegment found in a segment file.
type segmentWalk struct {
	entries  uint64 // in batches whose checksum holds
	offsets  []int  // of those entries' frames
	goodEnd  int    // end of the last batch whose checksum holds (0: none)
	badBatch int    // offset of a commit frame whose checksum fails (-1: none)
	index    int    // offset of the index frame (-1: none)
}

// walkSegment reads the frames of a segment as raft-wal's recovery does
// (up to the first zero or malformed frame header), and checks the
// checksum of every batch, which raft-wal does only for the last.
func walkSegment(b []byte) segmentWalk {
	w := segmentWalk{badBatch: -1, index: -1}
	off, pending := walFileHeaderLen, []int(nil)
	for off+walFrameHeaderLen <= len(b) {
		h := b[off : off+walFrameHeaderLen]
		if h[1] != 0 || h[2] != 0 || h[3] != 0 {
			return w
		}
		v := binary.LittleEndian.Uint32(h[4:])
		switch h[0] {
		case walFrameCommit:
			if crc32.Checksum(b[w.goodEnd:off], castagnoli) != v {
				w.badBatch = off
				return w
			}
			w.entries += uint64(len(pending))
			w.offsets = append(w.offsets, pending...)
			pending = pending[:0]
			off += walFrameHeaderLen
			w.goodEnd = off
			continue
		case walFrameEntry:
			pending = append(pending, off)
		case walFrameIndex:
			w.index = off
		default: // zeros (the end) or a malformed header
			return w
		}
		n := walFrameHeaderLen + int(v) + (walFrameHeaderLen-int(v)%walFrameHeaderLen)%walFrameHeaderLen
		if int(v) > segment.MaxEntrySize || off+n > len(b) {
			return w
		}
		off += n
	}
	return w
}

// checkSegment checks the bytes b of segment si (see checkSegmentFile).
func checkSegment(b []byte, si types.SegmentInfo, tail bool) (torn int, err error) {
	w := walkSegment(b)
	if w.goodEnd > 0 {
		if err := checkSegmentHeader(b, si); err != nil {
			return 0, err
		}
	}
	first := si.BaseIndex + w.entries // the first entry not verified
	if !tail {
		if w.badBatch >= 0 {
			return 0, fmt.Errorf("the batch ending at byte %d (from entry %d) fails its checksum", w.badBatch, first)
		}
		if si.MaxIndex >= si.BaseIndex && first <= si.MaxIndex {
			return 0, fmt.Errorf("entries %d..%d that wal-meta.db lists are not there, or damaged (the readable ones end at byte %d)", first, si.MaxIndex, w.goodEnd)
		}
		if w.index < 0 || uint64(w.index+walFrameHeaderLen) != si.IndexStart {
			return 0, fmt.Errorf("the index of the sealed segment is not at byte %d, where wal-meta.db says it is", si.IndexStart)
		}
		return 0, nil
	}
	// The tail: raft-wal keeps the batches up to goodEnd and drops the
	// rest as a torn write. That is right only when the rest is one
	// batch that was being written: no later batch checks out, and the
	// written bytes do not reach further than one batch can.
	last := lastNonZero(b)
	if last < w.goodEnd {
		return 0, nil
	}
	if at := verifiedBatchAfter(b, w.goodEnd); at >= 0 {
		return 0, fmt.Errorf("damaged from byte %d (entry %d on), but the batch ending at byte %d checks out after it: the damaged entries were acknowledged, and raft-wal would drop or misread them",
			w.goodEnd, first, at)
	}
	if last-w.goodEnd >= walMaxTornBytes {
		return 0, fmt.Errorf("damaged from byte %d (entry %d on) to byte %d: more than one unacknowledged batch can leave, so acknowledged entries would be lost",
			w.goodEnd, first, last)
	}
	return last + 1 - w.goodEnd, nil
}

func checkSegmentHeader(b []byte, si types.SegmentInfo) error {
	h := b[:walFileHeaderLen]
	if binary.LittleEndian.Uint64(h[0:8]) != walMagic {
		return errors.New("the file header is not raft-wal's (bad magic or version)")
	}
	base, id, codec := binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:]), binary.LittleEndian.Uint64(h[24:])
	if base != si.BaseIndex || id != si.ID || codec != si.Codec {
		return fmt.Errorf("the file header (segment %d from entry %d, codec %d) is not what wal-meta.db lists (segment %d from entry %d, codec %d)",
			id, base, codec, si.ID, si.BaseIndex, si.Codec)
	}
	return nil
}

// verifiedBatchAfter looks past from, at every 8-byte boundary, for a
// commit frame whose checksum holds over the bytes since the previous
// commit-like frame: the end of an intact batch after damaged bytes.
// It returns the offset of the first such frame's end, or -1.
func verifiedBatchAfter(b []byte, from int) int {
	prev := -1
	for off := from; off+walFrameHeaderLen <= len(b); off += walFrameHeaderLen {
		h := b[off : off+walFrameHeaderLen]
		if h[0] != walFrameCommit || h[1] != 0 || h[2] != 0 || h[3] != 0 {
			continue
		}
		if prev >= 0 && crc32.Checksum(b[prev:off], castagnoli) == binary.LittleEndian.Uint32(h[4:]) {
			return off + walFrameHeaderLen
		}
		prev = off + walFrameHeaderLen
	}
	return -1
}

// lastNonZero is the offset of the last non-zero byte of b, or -1.
func lastNonZero(b []byte) int {
	var zero [4096]byte
	end := len(b)
	for end > 0 {
		start := max(0, end-len(zero))
		if !bytes.Equal(b[start:end], zero[:end-start]) {
			for i := end - 1; i >= start; i-- {
				if b[i] != 0 {
					return i
				}
			}
		}
		end = start
	}
	return -1
}
