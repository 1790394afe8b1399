package apifuzz

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// AddBytes adds to f the []byte seeds in dir, a testdata/fuzz/<Target>
// directory of another package, so that a second target of the same
// input runs the same seeds without a copy of them.
func AddBytes(f *testing.F, dir string) {
	f.Helper()
	for _, v := range seeds(f, dir, "[]byte(") {
		f.Add([]byte(v))
	}
}

// AddStrings is AddBytes for a target of a string.
func AddStrings(f *testing.F, dir string) {
	f.Helper()
	for _, v := range seeds(f, dir, "string(") {
		f.Add(v)
	}
}

// seeds reads the values of the corpus files in dir, each one value in
// the format `go test` writes (go test fuzz v1) of the type kind names.
func seeds(f *testing.F, dir, kind string) []string {
	f.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in %s (%v)", dir, err)
	}
	var vals []string
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		if len(lines) != 2 || string(lines[0]) != "go test fuzz v1" {
			f.Fatalf("%s: not one value in go test fuzz v1 format", name)
		}
		lit, ok := bytes.CutPrefix(lines[1], []byte(kind))
		if !ok || !bytes.HasSuffix(lit, []byte(")")) {
			f.Fatalf("%s: %q is not a %s...) value", name, lines[1], kind)
		}
		v, err := strconv.Unquote(string(lit[:len(lit)-1]))
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		vals = append(vals, v)
	}
	return vals
}
