package access

import (
	"strings"
	"testing"
)

// A credential records owners behind an id of fixed length, whatever its
// name; SplitOwner gives back the id and the owner as named, and an owner
// recorded without credentials as itself. Each credential sees the
// tokens of its own owners; an operator sees every one.
func TestOwner_RecordedByCredential(t *testing.T) {
	a := &Credential{Name: "team-a", Role: RoleClient}
	b := &Credential{Name: strings.Repeat("b", 4000), Role: RoleClient}
	ops := &Credential{Name: "ops", Role: RoleOperator}
	for _, c := range []*Credential{a, b, ops} {
		rec := c.Owner("tok:holder")
		if len(rec) != OwnerPrefixLen+len("tok:holder") {
			t.Fatalf("%.10s records %q: %d bytes", c.Name, rec, len(rec))
		}
		id, owner, ok := SplitOwner(rec)
		if !ok || id != c.ID() || owner != "tok:holder" {
			t.Fatalf("SplitOwner(%q) = %q, %q, %v", rec, id, owner, ok)
		}
	}
	if a.ID() == b.ID() || a.ID() == ops.ID() {
		t.Fatalf("two credentials share an id: %s %s %s", a.ID(), b.ID(), ops.ID())
	}
	if got := Open.Owner("o"); got != "o" {
		t.Fatalf("Open records %q as %q; want it as it is", "o", got)
	}
	for _, plain := range []string{"o", "@0123:o", "@0123456789abcdeX:o", ""} {
		if id, owner, ok := SplitOwner(plain); ok || id != "" || owner != plain {
			t.Fatalf("SplitOwner(%q) = %q, %q, %v; want it recorded without credentials", plain, id, owner, ok)
		}
	}
	rec := a.Owner("tok:holder")
	for c, want := range map[*Credential]bool{a: true, b: false, ops: true, Open: true} {
		if got := c.SeesOwner(rec); got != want {
			t.Errorf("%.10s sees team-a's owner: %v, want %v", c.Name, got, want)
		}
	}
	if b.SeesOwner("tok:holder") || !ops.SeesOwner("tok:holder") {
		t.Error("an owner recorded without credentials is shown to a client, or hidden from an operator")
	}
}
