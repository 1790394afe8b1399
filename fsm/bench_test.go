package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/engine"
)

// BenchmarkFSM_ApplyBatch compares applying committed entries one per call
// (what a non-batching FSM does) with whole batches of 64 (one engine round
// trip each), in the same run. Each op is one entry (half acquires, half
// releases of distinct keys).
func BenchmarkFSM_ApplyBatch(b *testing.B) {
	const keys = 1024
	var all []*raft.Log
	for i := 0; i < 2*keys; i++ {
		k := fmt.Sprintf("key/%d", i%keys)
		e := Entry{Op: engine.OpAcquire, Key: k, Owner: "o", TTL: time.Minute, Now: int64(i)}
		if i >= keys {
			e = Entry{Op: engine.OpRelease, Key: k, Owner: "o", Now: int64(i)}
		}
		data, err := Encode(e)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, &raft.Log{Type: raft.LogCommand, Data: data})
	}
	run := func(batch int) time.Duration {
		f, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		index := uint64(0)
		start := time.Now()
		for done := 0; done < b.N; {
			for off := 0; off < len(all) && done < b.N; off += batch {
				chunk := all[off:min(off+batch, len(all))]
				for _, l := range chunk {
					index++
					l.Index = index
				}
				f.ApplyBatch(chunk)
				done += len(chunk)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	single := run(1)
	batched := run(64)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/single.Seconds(), "single_entries/s")
	b.ReportMetric(float64(b.N)/batched.Seconds(), "batch64_entries/s")
	b.ReportMetric(single.Seconds()/batched.Seconds(), "batch_speedup")
}
