package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zerotal/lock/cluster/access"
)

// lockcluster token prints the bare token, alone, on stdout, where a
// script reads it (TOKEN=$(lockcluster token ...)); what it is and the
// line that admits it go to stderr, or with --token-file the line is
// appended to that file, which stays a token file the agent reads.
func TestToken_BareTokenOnStdoutLineInTheFile(t *testing.T) {
	bare := regexp.MustCompile(`^zlt_[0-9a-f]{48}\n$`)

	code, stdout, stderr := runCLI(t, nil, "token", "--name", "team-a", "--role", "client", "--prefixes", "jobs/")
	if code != exitOK || !bare.MatchString(stdout) {
		t.Fatalf("lockcluster token: exit %d, stdout %q; want the bare token alone", code, stdout)
	}
	tok := strings.TrimSpace(stdout)
	line := "team-a client jobs/ sha256:" + access.HashToken(tok)
	if !strings.Contains(stderr, line) || strings.Contains(stderr, tok) {
		t.Errorf("stderr %q; want the token file's line, and not the token again", stderr)
	}

	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("ops operator * sha256:"+access.HashToken("ops-token-0123456789")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, nil, "token", "--name", "team-b", "--role", "client", "--prefixes", "jobs/b/", "--token-file", file)
	if code != exitOK || !bare.MatchString(stdout) {
		t.Fatalf("lockcluster token --token-file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "team-b client jobs/b/ sha256:" + access.HashToken(strings.TrimSpace(stdout)) + "\n"
	if !strings.HasSuffix(string(b), "\n"+want) || !strings.HasPrefix(string(b), "ops operator") {
		t.Fatalf("the token file after --token-file:\n%s\nwant the old line, then %q", b, want)
	}
	if _, err := access.Parse(strings.NewReader(string(b)), file); err != nil {
		t.Fatalf("the token file no longer parses: %v", err)
	}
	// The same name twice would make the file refuse to load: refused
	// before it is written.
	code, _, stderr = runCLI(t, nil, "token", "--name", "team-b", "--role", "client", "--token-file", file)
	if b2, _ := os.ReadFile(file); code != exitUsage || string(b2) != string(b) {
		t.Errorf("a second team-b: exit %d (%s), file changed %v; want 64 and the file as it was", code, stderr, string(b2) != string(b))
	}
}
