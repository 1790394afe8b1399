package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
)

// locks says when the wait-for edges were cut at api.MaxWaitEdges, as
// the page does, so that a reader does not take the rows shown for all.
func TestLocks_SaysWhenEdgesAreCut(t *testing.T) {
	var b bytes.Buffer
	printWaits(&b, api.LockList{Edges: []api.WaitEdge{{From: "A", To: "B", Key: "k"}}, EdgesTruncated: true})
	if !strings.Contains(b.String(), "edges not shown") {
		t.Fatalf("locks with its edges cut says nothing of it:\n%s", b.String())
	}
	b.Reset()
	printWaits(&b, api.LockList{Edges: []api.WaitEdge{{From: "A", To: "B", Key: "k"}}})
	if strings.Contains(b.String(), "not shown") {
		t.Fatalf("locks with every edge says some were cut:\n%s", b.String())
	}
}
