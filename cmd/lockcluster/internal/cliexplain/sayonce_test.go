package cliexplain

import (
	"errors"
	"strings"
	"testing"
)

// SayOnce counts in words: two nodes that fail the same way are "both
// nodes", never "all 2 nodes".
func TestSayOnce_CountsInWords(t *testing.T) {
	probe := func(addr string) Probe { return Probe{Addr: addr, Err: errors.New("connection refused")} }
	for n, want := range map[int]string{2: "both nodes: ", 3: "all 3 nodes: "} {
		var failed []Probe
		for i := range n {
			failed = append(failed, probe("127.0.0.1:700"+string(rune('1'+i))))
		}
		if got := SayOnce(failed); !strings.HasPrefix(got, want) {
			t.Errorf("SayOnce of %d nodes = %q; want it to start %q", n, got, want)
		}
	}
}
