package access

import (
	"strings"
	"testing"
)

// The token file's lines: each mistake is refused with its line number
// and what is wrong, and never holds a token (there is none in the file).
func TestParse_RefusesEveryMistakeByLine(t *testing.T) {
	good := "sha256:" + HashToken("a-token-0123456789")
	for _, tc := range []struct{ text, want string }{
		{"a client", "2 fields, want 4"},
		{"a boss * " + good, `role "boss"`},
		{"a client a/,,b/ " + good, "empty item"},
		{"a client * sha256:abc", "not a SHA-256 digest"},
		{"a client * md5:abc", "must be sha256:"},
		{"a client * " + good + "\nb client * " + good, "same token"},
		{"a client * " + good + "\na client * cn:x", `name "a" is used twice`},
		{"a client * cn:x\nb client * cn:x", `subject "x"`},
	} {
		_, err := Parse(strings.NewReader("# comment\n"+tc.text), "f")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "token file f, line") {
			t.Errorf("%q: %v, want an error naming the line and %q", tc.text, err, tc.want)
		}
	}
}

// Roles and prefixes as the file gives them.
func TestParse_RolesAndPrefixes(t *testing.T) {
	set, err := Parse(strings.NewReader(strings.Join([]string{
		"team-a client jobs/a/,locks/a/ sha256:" + HashToken("tok-a-0123456789"),
		"", "  # indented comment",
		"ops operator * sha256:" + HashToken("tok-ops-0123456789"),
		"prom metrics - sha256:" + HashToken("tok-prom-0123456789"),
	}, "\n")), "f")
	if err != nil {
		t.Fatal(err)
	}
	a, ops, prom := set.ByToken("tok-a-0123456789"), set.ByToken("tok-ops-0123456789"), set.ByToken("tok-prom-0123456789")
	if a == nil || ops == nil || prom == nil || set.ByToken("nope") != nil || set.Len() != 3 {
		t.Fatalf("lookup: %v %v %v, len %d", a, ops, prom, set.Len())
	}
	if !a.Can(RightLock) || a.Can(RightMembership) || a.Can(RightMetrics) || !a.CoversKey("locks/a/x") || a.CoversKey("jobs/b/x") {
		t.Errorf("team-a: %+v", a)
	}
	if !ops.Can(RightMembership) || !ops.Can(RightDebug) || !ops.CoversKey("anything") {
		t.Errorf("ops: %+v", ops)
	}
	if !prom.Can(RightMetrics) || prom.Can(RightLock) || prom.Can(RightStatus) || prom.CoversKey("") {
		t.Errorf("prom: %+v", prom)
	}
	with, err := set.WithOperator("--token", "single-token-0123456789")
	if err != nil || with.ByToken("single-token-0123456789").Role != RoleOperator || with.Len() != 4 || set.Len() != 3 {
		t.Fatalf("WithOperator: %v", err)
	}
	// The file's own operator token given as --token too is the same
	// credential; a client's is a contradiction.
	if again, err := set.WithOperator("--token", "tok-ops-0123456789"); err != nil || again.Len() != 3 {
		t.Fatalf("WithOperator of the file's operator token: %v", err)
	}
	if _, err := set.WithOperator("--token", "tok-a-0123456789"); err == nil || !strings.Contains(err.Error(), `credential "team-a", a client`) {
		t.Fatalf("WithOperator of a client's token: %v", err)
	}
}

// A file with nothing in it (caught between its truncation and its write,
// say) is refused, so that a reload keeps the credentials in force; a file
// whose lines are all comments says on purpose that it admits no one.
func TestParse_EmptyFileIsRefusedACommentedOneAdmitsNoOne(t *testing.T) {
	for _, text := range []string{"", "\n", "  \n\t\n"} {
		set, err := Parse(strings.NewReader(text), "f")
		if err == nil || !strings.Contains(err.Error(), "token file f is empty") || !strings.Contains(err.Error(), "comment") {
			t.Errorf("%q: set %v, err %v; want it refused as empty, naming the comment that admits no one", text, set, err)
		}
	}
	set, err := Parse(strings.NewReader("# every token revoked\n"), "f")
	if err != nil || set == nil || set.Len() != 0 {
		t.Fatalf("a file of comments: set %v, err %v; want an empty set", set, err)
	}
}
