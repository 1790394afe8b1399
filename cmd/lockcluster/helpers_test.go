package main

import (
	"testing"
	"time"
)

type timeDuration = time.Duration

// waitUntil polls cond until it holds or 10 s pass.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
