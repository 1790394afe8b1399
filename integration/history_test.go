package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// opKind names a client operation of the workload.
type opKind string

const (
	opAcquire opKind = "acquire" // plain acquire (no wait)
	opWait    opKind = "acquire-wait"
	opExtend  opKind = "extend"
	opRelease opKind = "release"
	opGet     opKind = "get"
)

// outcome is what the client learnt.
type outcome string

const (
	// resOK: acquired, extended, released (true), or a get that found
	// the key.
	resOK outcome = "ok"
	// resFail: a definite negative answer: not acquired (409), not
	// extended, not released (false), or a get that found the key free.
	resFail outcome = "fail"
	// resUnknown: an error (timeout, 503, reset): the operation may or
	// may not have taken effect, now or later.
	resUnknown outcome = "unknown"
)

// op is one recorded client operation. Times are on the host's monotonic
// clock, as durations since the history's origin.
type op struct {
	id     int
	client int
	key    string
	owner  string // the owner token the operation ran as
	kind   opKind
	ttl    time.Duration
	// wait is the wait_ms a waiting acquire asked the server for (0: not
	// known, the Go client chose it).
	wait time.Duration
	// via is the node a request was sent to, when the workload chose it.
	via    string
	start  time.Duration
	end    time.Duration
	result outcome
	fence  uint64 // fence of a granted acquire, or of the holder a get saw
	holder string // holder a get saw
	err    string
	// claim is how an acquire of a shared key holds it (zero: a mutex).
	claim drivers.Claim
}

func (o op) String() string {
	var b strings.Builder
	owner := "owner=" + o.owner
	if o.owner == "" {
		owner = ""
	}
	fmt.Fprintf(&b, "#%-5d %9.3fs..%9.3fs c%-2d %-12s %-18s %-16s %-7s", o.id,
		o.start.Seconds(), o.end.Seconds(), o.client, o.kind, o.key, owner, o.result)
	if o.fence != 0 {
		fmt.Fprintf(&b, " fence=%d", o.fence)
	}
	if o.holder != "" {
		fmt.Fprintf(&b, " holder=%s", o.holder)
	}
	if o.ttl != 0 {
		fmt.Fprintf(&b, " ttl=%v", o.ttl)
	}
	if o.wait != 0 {
		fmt.Fprintf(&b, " wait=%v", o.wait)
	}
	if o.via != "" {
		fmt.Fprintf(&b, " via=%s", o.via)
	}
	if o.err != "" {
		fmt.Fprintf(&b, " err=%q", o.err)
	}
	return b.String()
}

// history collects operations from many goroutines.
type history struct {
	origin time.Time

	mu  sync.Mutex
	ops []op
}

func newHistory() *history { return &history{origin: time.Now()} }

// now is the host's monotonic time since the origin.
func (h *history) now() time.Duration { return time.Since(h.origin) }

// add records o (its id is assigned here) and returns it.
func (h *history) add(o op) op {
	h.mu.Lock()
	defer h.mu.Unlock()
	o.id = len(h.ops)
	h.ops = append(h.ops, o)
	return o
}

// snapshot returns a copy of every operation so far, by start time.
func (h *history) snapshot() []op {
	h.mu.Lock()
	out := slices.Clone(h.ops)
	h.mu.Unlock()
	slices.SortStableFunc(out, func(a, b op) int { return int(a.start - b.start) })
	return out
}

// formatOps renders ops one per line, by start time.
func formatOps(ops []op) string {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b op) int { return int(a.start - b.start) })
	var b strings.Builder
	for _, o := range ops {
		b.WriteString(o.String())
		b.WriteByte('\n')
	}
	return b.String()
}
