package integration

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// A sequential model of one lock, for porcupine. It is applied only to
// keys whose TTL is far longer than the run (nothing expires), so expiry
// does not appear in it: every change is an operation of the history.
//
// State: the holder ("" when free), its fence (0 when the grant came from
// an unknown acquire, whose fence nobody saw) and floor, the highest fence
// seen so far: a new grant must be above it.
//
// An unknown operation (error) may take effect at any instant after its
// start, or never: it is given the return time +inf, and its step
// allows both outcomes.
//
// One leniency: a release whose answer was "not released" may still have
// freed the key when the owner held it, since the client retries a
// request whose answer was lost and the retry finds the key already free.
type lockState struct {
	holder string
	fence  uint64
	floor  uint64
}

type lockInput struct {
	kind  opKind
	owner string
}

type lockOutput struct {
	result outcome
	fence  uint64
	holder string
}

// lockModel is the nondeterministic lock model, partitioned by key.
var lockModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		parts := map[string][]porcupine.Operation{}
		var order []string
		for _, o := range h {
			k := o.Metadata.(string)
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			parts[k] = append(parts[k], o)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, parts[k])
		}
		return out
	},
	Init: func() []any { return []any{lockState{}} },
	Step: func(st, in, out any) []any {
		return stepLock(st.(lockState), in.(lockInput), out.(lockOutput))
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(lockInput), out.(lockOutput)
		return fmt.Sprintf("%s(%s) -> %s fence=%d holder=%s", i.kind, i.owner, o.result, o.fence, o.holder)
	},
	DescribeState: func(st any) string {
		s := st.(lockState)
		return fmt.Sprintf("holder=%q fence=%d floor=%d", s.holder, s.fence, s.floor)
	},
}).ToModel()

// stepLock returns every state the lock may be in after in answered out.
func stepLock(s lockState, in lockInput, out lockOutput) []any {
	free := lockState{floor: s.floor}
	switch in.kind {
	case opAcquire, opWait:
		switch out.result {
		case resOK:
			switch {
			case s.holder == "" && out.fence > s.floor:
				return []any{lockState{holder: in.owner, fence: out.fence, floor: out.fence}}
			case s.holder == in.owner && (s.fence == out.fence || s.fence == 0 && out.fence > s.floor):
				return []any{lockState{holder: in.owner, fence: out.fence, floor: max(s.floor, out.fence)}}
			}
			return nil
		case resFail:
			if s.holder != "" && s.holder != in.owner {
				return []any{s}
			}
			return nil
		default:
			if s.holder == "" {
				return []any{s, lockState{holder: in.owner, floor: s.floor}}
			}
			return []any{s}
		}
	case opRelease:
		switch {
		case out.result == resOK && s.holder == in.owner:
			return []any{free}
		case out.result == resOK:
			return nil
		case out.result == resFail && s.holder == in.owner:
			return []any{free} // see the leniency above
		case out.result == resFail:
			return []any{s}
		case s.holder == in.owner:
			return []any{s, free}
		}
		return []any{s}
	case opExtend:
		switch out.result {
		case resOK:
			if s.holder == in.owner {
				return []any{s}
			}
			return nil
		case resFail:
			if s.holder != in.owner {
				return []any{s}
			}
			return nil
		}
		return []any{s}
	case opGet:
		switch out.result {
		case resOK:
			if s.holder != out.holder || s.holder == "" {
				return nil
			}
			if s.fence == out.fence {
				return []any{s}
			}
			if s.fence == 0 && out.fence > s.floor {
				return []any{lockState{holder: s.holder, fence: out.fence, floor: out.fence}}
			}
			return nil
		case resFail:
			if s.holder == "" {
				return []any{s}
			}
			return nil
		}
		return []any{s}
	}
	return nil
}

// toPorcupine turns recorded ops into porcupine operations; unknown ones
// never return.
func toPorcupine(ops []op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		ret := int64(o.end)
		if o.result == resUnknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{
			ClientId: o.client,
			Input:    lockInput{kind: o.kind, owner: o.owner},
			Call:     int64(o.start),
			Output:   lockOutput{result: o.result, fence: o.fence, holder: o.holder},
			Return:   ret,
			Metadata: o.key,
		})
	}
	return out
}

// checkLinearizable runs porcupine on ops (all of keys without expiry).
func checkLinearizable(ops []op, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(lockModel, toPorcupine(ops), timeout)
}
