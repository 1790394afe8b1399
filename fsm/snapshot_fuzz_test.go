package fsm

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeSnapshot: no input makes the snapshot decoder panic, and
// whatever it accepts survives a round trip through the encoder unchanged.
func FuzzDecodeSnapshot(f *testing.F) {
	st := newState()
	st.applied, st.now = 42, int64(time.Hour)
	st.members["n1"] = "127.0.0.1:8080"
	st.waiters[Waiter{"k", "o"}] = struct{}{}
	f.Add(encodeSnapshot(&st, []byte("engine")))
	empty := newState()
	f.Add(encodeSnapshot(&empty, nil))
	f.Add([]byte{snapshotVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, eng, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		st2, eng2, err := decodeSnapshot(encodeSnapshot(&st, eng))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(st, st2) || !bytes.Equal(eng, eng2) {
			t.Fatalf("round trip changed the state: %+v -> %+v", st, st2)
		}
	})
}
