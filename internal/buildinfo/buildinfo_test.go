package buildinfo

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, Release},
		{"go install of a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true, "v1.4.0"},
		{"build of a tagged commit", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "v0.1.0"},
		{"checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
		}}, true, Release + " (0123456789ab-dirty)"},
		{"checkout, clean", &debug.BuildInfo{Main: debug.Module{Version: ""}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"},
		}}, true, Release + " (abc)"},
		{"checkout without tags: a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261205032100-0e445747cc27+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0e445747cc27ffff"}, {Key: "vcs.modified", Value: "true"},
		}}, true, Release + " (0e445747cc27-dirty)"},
		{"checkout after a tag: a pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261205032100-0e445747cc27"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0e445747cc27ffff"},
		}}, true, Release + " (0e445747cc27)"},
		{"a pre-release tag is no pseudo-version", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0-rc.1"}}, true, "v0.2.0-rc.1"},
	}
	for _, c := range cases {
		if got := read(c.bi, c.ok).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if Version() == "" {
		t.Error("Version is empty")
	}
}

// The newest CHANGELOG entry is the release the tree says it is.
func TestRelease_IsTheNewestChangelogEntry(t *testing.T) {
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(line, "## ") || strings.Contains(strings.ToLower(line), "unreleased") {
			continue
		}
		if !strings.Contains(line, Release) {
			t.Fatalf("the newest CHANGELOG entry is %q; Release is %s", line, Release)
		}
		return
	}
	t.Fatalf("CHANGELOG.md has no entry for %s", Release)
}
