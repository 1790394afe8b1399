package cluster

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// The package doc ("go doc ./cluster") names the raft log a new data dir
// gets, as DefaultRaftLog says, and the stable store beside it.
func TestDoc_NamesTheRaftLogStores(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	want := map[string]string{RaftLogWAL: "raft-wal log by default", RaftLogBolt: "raft-boltdb log by default"}[DefaultRaftLog]
	for _, w := range []string{want, "stable store"} {
		if !strings.Contains(doc, w) {
			t.Errorf("the package doc does not say %q: %.300s", w, doc)
		}
	}
}
