package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/election"
)

// lockcluster leader -o json prints the leadership in the HTTP API's
// schema (an api.Lock, as GET /v1/lock): the election's name, the
// leader's value as its holder, the term as its fence, its time left;
// never the leader's owner token.
func TestLeader_JSONIsTheAPISchema(t *testing.T) {
	db := filepath.Join(t.TempDir(), "locks.db")
	m, err := lock.Open(t.Context(), lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: db}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	el, err := election.New(m, "sched", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, err := el.Campaign(t.Context(), "host-2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Resign(t.Context()) }()

	code, stdout, stderr := runCLI(t, nil, "leader", "--driver", "sqlite", "--sqlite-path", db, "-o", "json", "sched")
	if code != exitOK {
		t.Fatalf("leader -o json: exit %d, stderr %q", code, stderr)
	}
	var got api.Lock
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("leader -o json printed %q: %v", stdout, err)
	}
	if got.Key != "sched" || got.Holder != "host-2" || got.Fence != l.Term() || got.Remaining <= 0 || got.Remaining > 30*time.Second || got.Owner != "" {
		t.Errorf("leader -o json = %+v; want key sched, holder host-2, fence %d, a remaining time and no owner", got, l.Term())
	}
	if strings.Contains(stdout, "value=") {
		t.Errorf("leader -o json printed the table form: %q", stdout)
	}
}
