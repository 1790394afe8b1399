package raftstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// raft-wal v0.4.0 marks the tail segment sealed when entries are deleted
// from the end of the log (a follower dropping entries its leader never
// committed), but writes no index into it (hashicorp/raft-wal#31, fixed
// after v0.4.0). The running node reads it through the writer's offsets
// in memory; after a restart raft-wal finds no index ("sealed segment has
// no index block") and raft stops. sealWithIndex writes the index that
// raft-wal seals a segment with (an index frame of the entries' offsets,
// then a commit frame), syncs it, and records it in wal-meta.db. The
// entries themselves are not touched. A crash in between leaves an index
// that the next start finds and records.

// sealWithIndex adds the missing index to every sealed segment in state
// that has none, and records the new state in wal-meta.db.
func sealWithIndex(dir, metaPath string, state *types.PersistentState) error {
	changed := false
	for i, si := range state.Segments {
		if si.SealTime.IsZero() || si.IndexStart != 0 {
			continue
		}
		path := filepath.Join(dir, segment.FileName(si))
		start, err := writeSegmentIndex(path, si)
		if err != nil {
			return &dataError{path: path, problem: "sealed without an index (raft-wal v0.4.0 after a tail truncation), and the index could not be written: " + err.Error(), hint: replaceHint}
		}
		state.Segments[i].IndexStart = start
		changed = true
	}
	if !changed {
		return nil
	}
	if err := writeWALMeta(metaPath, *state); err != nil {
		return &dataError{path: metaPath, problem: "record the index of a sealed segment: " + err.Error(), hint: replaceHint}
	}
	return nil
}

// writeSegmentIndex appends the index of si's entries to its file, unless
// a checked one is there already, and returns where the index starts.
func writeSegmentIndex(path string, si types.SegmentInfo) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	w := walkSegment(b)
	if w.goodEnd > 0 {
		if err := checkSegmentHeader(b, si); err != nil {
			return 0, err
		}
	}
	n := si.MaxIndex - si.BaseIndex + 1
	if si.MaxIndex < si.BaseIndex || uint64(len(w.offsets)) < n {
		return 0, fmt.Errorf("wal-meta.db lists entries %d..%d, but %d checked entries are there", si.BaseIndex, si.MaxIndex, len(w.offsets))
	}
	if w.index >= 0 {
		return uint64(w.index + walFrameHeaderLen), nil // written before a crash
	}
	size := int(n) * 4
	frame := make([]byte, walFrameHeaderLen+size+(walFrameHeaderLen-size%walFrameHeaderLen)%walFrameHeaderLen)
	frame[0] = walFrameIndex
	binary.LittleEndian.PutUint32(frame[4:], uint32(size))
	for i, off := range w.offsets[:n] {
		binary.LittleEndian.PutUint32(frame[walFrameHeaderLen+4*i:], uint32(off))
	}
	// The commit frame's checksum covers everything since the previous
	// commit: here, the index frame.
	commit := make([]byte, walFrameHeaderLen)
	commit[0] = walFrameCommit
	binary.LittleEndian.PutUint32(commit[4:], crc32.Checksum(frame, castagnoli))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.WriteAt(append(frame, commit...), int64(w.goodEnd)); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return uint64(w.goodEnd + walFrameHeaderLen), nil
}

// writeWALMeta stores state in wal-meta.db as raft-wal does.
func writeWALMeta(path string, state types.PersistentState) error {
	raw, err := json.Marshal(state)
	if err != nil {
		return err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(walMetaBucket))
		if b == nil {
			return fmt.Errorf("no %q bucket", walMetaBucket)
		}
		return b.Put([]byte(walMetaKey), raw)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
