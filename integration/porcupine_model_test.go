package integration

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestPorcupine_LockModel(t *testing.T) {
	get := func(start, end int, res outcome, holder string, fence uint64) op {
		return op{key: "k", kind: opGet, start: ms(start), end: ms(end), result: res, holder: holder, fence: fence}
	}
	tests := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"acquire release acquire", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opAcquire, "b", 12, 14, resFail, 0, 0),
			get(15, 16, resOK, "a", 5),
			hop(opExtend, "a", 17, 18, resOK, 0, 0),
			hop(opRelease, "a", 20, 30, resOK, 0, 0),
			get(31, 32, resFail, "", 0),
			hop(opAcquire, "b", 40, 50, resOK, 9, 0),
		}, porcupine.Ok},
		{"concurrent acquires, one wins", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opAcquire, "b", 1, 9, resFail, 0, 0),
		}, porcupine.Ok},
		{"unknown acquire took effect later", []op{
			hop(opAcquire, "a", 0, 10, resUnknown, 0, 0),
			get(20, 21, resFail, "", 0),
			get(30, 31, resOK, "a", 4),
			hop(opAcquire, "b", 40, 41, resFail, 0, 0),
		}, porcupine.Ok},
		{"two holders", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opAcquire, "b", 20, 30, resOK, 9, 0),
		}, porcupine.Illegal},
		{"fence not above the previous one", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opRelease, "a", 20, 30, resOK, 0, 0),
			hop(opAcquire, "b", 40, 50, resOK, 5, 0),
		}, porcupine.Illegal},
		{"stale read", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opRelease, "a", 20, 30, resOK, 0, 0),
			get(40, 50, resOK, "a", 5),
		}, porcupine.Illegal},
		{"lost grant", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			get(40, 50, resFail, "", 0),
		}, porcupine.Illegal},
		{"extend of a lock not held", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 0),
			hop(opExtend, "b", 40, 50, resOK, 0, 0),
		}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkLinearizable(tt.ops, 10*time.Second); got != tt.want {
				t.Fatalf("porcupine says %v, want %v for\n%s", got, tt.want, formatOps(tt.ops))
			}
		})
	}
}
