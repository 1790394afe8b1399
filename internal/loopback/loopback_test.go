package loopback

import "testing"

// Addresses asked for one after another, none bound yet, are all
// different: a port free at each probe is not handed out twice.
func TestFreeAddr_NeverTheSameTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		addr := MustFreeAddr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
	}
}
