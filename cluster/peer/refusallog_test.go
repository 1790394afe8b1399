package peer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A flood of refused connections is one line a second, each saying how
// many went unsaid; the first is said at once.
func TestRefusalLog_OneLineASecondWithTheCountOfTheRest(t *testing.T) {
	var lines []string
	now := time.Unix(1000, 0)
	r := &refusalLog{warn: func(s string) { lines = append(lines, s) }, now: func() time.Time { return now }}
	for range 1000 {
		r.refuse(errors.New("raft connection cut"))
	}
	if len(lines) != 1 || lines[0] != "raft connection cut" {
		t.Fatalf("after 1,000 refusals in one instant: %q; want the first said, alone", lines)
	}
	now = now.Add(refusalLogEvery)
	r.refuse(errors.New("raft connection cut"))
	if len(lines) != 2 || !strings.Contains(lines[1], "and 999 more refused") {
		t.Fatalf("a second later: %q; want one line counting the 999 unsaid", lines)
	}
	now = now.Add(10 * refusalLogEvery)
	r.refuse(errors.New("alone"))
	if len(lines) != 3 || lines[2] != "alone" {
		t.Fatalf("after a quiet while: %q; want the refusal said as it is", lines)
	}
}
