package access

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// The token file has one credential a line, four fields separated by
// white space; blank lines and lines starting with # are skipped:
//
//	# name     role      prefixes            credential
//	deployer   operator  *                   sha256:<hex SHA-256 of the token>
//	team-a     client    jobs/a/,locks/a/    sha256:...
//	scraper    metrics   -                   sha256:...
//	worker-7   client    jobs/               cn:worker-7
//
// prefixes is a comma-separated list, "*" for every key, or "-" for
// none (a role without key rights). The token itself is never in the
// file, only its digest: `lockcluster token` makes a token and its line.
// cn: maps a TLS client certificate, verified against the node's CA, by
// its subject common name.
//
// A file with nothing but blank lines is refused: it is what a reload
// reads between the file's truncation and its write, and applying it
// would refuse every client. A file that admits no one on purpose says so
// with a comment line. Replace the file by renaming a complete one over
// it: a reload never then reads half a file.

// ParseFile reads a token file (see Parse).
func ParseFile(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads credentials in the token file's format; source names the
// input in errors, which give the line but never a secret (there is
// none in the file).
func Parse(r io.Reader, source string) (*Set, error) {
	s := NewSet()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	written := false // a line that is not blank
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		written = written || text != ""
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c, ref, err := parseLine(text)
		if err == nil {
			err = s.add(c, ref)
		}
		if err != nil {
			return nil, fmt.Errorf("token file %s, line %d: %w", source, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", source, err)
	}
	if !written {
		return nil, fmt.Errorf("token file %s is empty (read while it was being written?): refused; "+
			"a file that admits no one says so with a comment line, such as # no credentials", source)
	}
	return s, nil
}

func parseLine(text string) (*Credential, string, error) {
	f := strings.Fields(text)
	if len(f) != 4 {
		return nil, "", fmt.Errorf("%d fields, want 4: name role prefixes credential", len(f))
	}
	c := &Credential{Name: f[0], Role: Role(f[1])}
	if _, ok := rights[c.Role]; !ok {
		return nil, "", fmt.Errorf("role %q is none of %v", f[1], Roles())
	}
	switch f[2] {
	case "*":
	case "-":
		c.Prefixes = []string{}
	default:
		for _, p := range strings.Split(f[2], ",") {
			if p == "" {
				return nil, "", fmt.Errorf("prefixes %q has an empty item (use * for every key)", f[2])
			}
			c.Prefixes = append(c.Prefixes, p)
		}
		slices.Sort(c.Prefixes)
	}
	return c, f[3], nil
}
