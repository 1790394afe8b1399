package lock_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The import rules of ARCHITECTURE.md ("What each package may import"),
// checked: each package's dependencies inside this module are within the
// set the document allows, and raft is linked only where it says.
func TestArchitecture_ImportRules(t *testing.T) {
	t.Parallel()
	const mod = "github.com/zerotal/lock"
	for _, rule := range []struct {
		pkg     string
		allowed []string // this module's packages it may depend on, itself aside
		noRaft  bool
	}{
		{"api", nil, true},
		{"api/stream", []string{"api"}, true},
		// A resource imports fence and links none of the lock code.
		{"fence", nil, true},
		{"drivers", nil, true},
		// The waiting rules of the SQL backends, once for both.
		{"drivers/internal/rules", []string{"drivers"}, true},
		{"engine", []string{"drivers", "internal/keywatch"}, true},
		{"client", []string{"api", "api/stream", "drivers", "internal/background"}, true},
		{"cluster/access", nil, true},
		{"cluster/httpapi", []string{"api", "api/stream", "drivers", "cluster/access", "internal/hostport"}, true},
		{"fsm", []string{"engine", "drivers", "internal/keywatch"}, false},
		{"cluster/handoff", []string{"fsm", "engine", "drivers", "internal/keywatch"}, false},
		{"cluster/rounds", []string{"fsm", "engine", "drivers", "internal/keywatch"}, false},
		{"cluster/term", []string{"cluster/rounds", "fsm", "engine", "drivers", "internal/keywatch"}, false},
		{".", []string{"drivers", "drivers/memory", "engine", "internal/heldwatch", "internal/keywatch"}, true},
		{"election", []string{".", "drivers", "drivers/memory", "engine", "internal/heldwatch", "internal/keywatch"}, true},
		// The conformance suite tests a driver alone: a driver's tests
		// import it, so it must not bring in the Manager above them; the
		// test kit's leaf helpers (polling, starting a child, a locked
		// buffer) are fine.
		{"drivers/driverstest", []string{"drivers", "internal/testkit/poll", "internal/testkit/proctest", "internal/testkit/syncbuf"}, true},
	} {
		path := mod
		if rule.pkg != "." {
			path += "/" + rule.pkg
		}
		for _, dep := range goListDeps(t, path) {
			if rule.noRaft && strings.HasPrefix(dep, "github.com/hashicorp/raft") {
				t.Errorf("%s links %s; ARCHITECTURE.md says it knows nothing of raft", rule.pkg, dep)
			}
			inner, ok := strings.CutPrefix(dep, mod+"/")
			if dep == mod {
				inner, ok = ".", true // the root package, package lock
			}
			if !ok || dep == path || slices.Contains(rule.allowed, inner) {
				continue
			}
			t.Errorf("%s depends on %s, which ARCHITECTURE.md does not allow it", rule.pkg, inner)
		}
	}
}

// goListDeps lists every package pkg depends on, itself included (go list
// -deps).
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list a package's dependencies: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}
