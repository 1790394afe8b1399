package httpapi

import (
	"testing"

	"github.com/zerotal/lock/cluster/internal/apifuzz"
)

// The oracle's surrogate scan and the handler's agree on a few cases that
// matter (both are fuzzed against each other through FuzzAcquire).
func TestLoneSurrogate_Oracle(t *testing.T) {
	cases := map[string]bool{
		`{"key":"\ud800"}`:                    true,
		`{"key":"\udcff"}`:                    true,
		`{"key":"\ud83d\ude00"}`:              false, // a pair: U+1F600
		`{"key":"\ud83d\u0041"}`:              true,
		`{"key":"\ud83dx"}`:                   true,
		`{"key":"\\ud800"}`:                   false, // an escaped backslash, then text
		`{"key":"\\\ud800"}`:                  true,
		`{"key":"\ude00\ud83d"}`:              true,
		`{"key":"\ud83d\ude00\ud83d"}`:        true,
		`{"key":"\uD83D\uDE00","o":"\u00e9"}`: false,
	}
	for in, lone := range cases {
		if got := apifuzz.HasLoneSurrogate([]byte(in)); got != lone {
			t.Errorf("oracle(%s) = %v, want %v", in, got, lone)
		}
		if got := loneSurrogate([]byte(in)) >= 0; got != lone {
			t.Errorf("loneSurrogate(%s) = %v, want %v", in, got, lone)
		}
	}
}
