// Package buildinfo says which build of zerotal lock is running, from
// what the Go toolchain records in the binary (runtime/debug.BuildInfo):
// the module version for `go install …@vX` or a build of a tagged
// commit, the release line and the VCS revision for any other build from
// a checkout.
package buildinfo

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Release is the release this source tree is: the version of its newest
// CHANGELOG entry (a test keeps the two equal). A build that the
// toolchain cannot name by a tag (a checkout between tags, or a clone
// without them, which Go names by a pseudo-version) reports Release with
// its revision.
const Release = "v0.1.0"

// Info describes the running build.
type Info struct {
	// Version is the module version ("v1.2.3") of a tagged build, or
	// Release for one from a checkout between tags (then Revision says
	// which commit, and FromCheckout is set).
	Version string
	// FromCheckout is set when Version is Release, not the toolchain's
	// tag.
	FromCheckout bool
	// Revision is the VCS commit the binary was built from, when known,
	// with "-dirty" when the work tree had changes.
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// String is the one-line form used by `--version` and in logs:
// "v1.2.3", or Release and the revision, "v0.1.0 (abc123def456-dirty)".
func (i Info) String() string {
	if i.Revision == "" || !i.FromCheckout {
		return i.Version
	}
	return i.Version + " (" + i.Revision + ")"
}

var (
	once sync.Once
	info Info
)

// Get returns the running build's Info.
func Get() Info {
	once.Do(func() { info = read(debug.ReadBuildInfo()) })
	return info
}

// Version is Get().String().
func Version() string { return Get().String() }

func read(bi *debug.BuildInfo, ok bool) Info {
	if !ok || bi == nil {
		return Info{Version: Release, FromCheckout: true}
	}
	i := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if i.Version == "" || i.Version == "(devel)" || isPseudo(i.Version) {
		i.Version, i.FromCheckout = Release, true
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
			if len(i.Revision) > 12 {
				i.Revision = i.Revision[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && i.Revision != "" {
		i.Revision += "-dirty"
	}
	return i
}

// isPseudo reports whether v is a pseudo-version (v0.0.0-20261205032100-
// 0e445747cc27, v0.1.1-0.20261205032100-0e445747cc27, with +dirty or not):
// what the toolchain names a commit no tag names.
func isPseudo(v string) bool {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return false
	}
	stamp := v[:i]
	j := strings.LastIndexAny(stamp, "-.")
	return j >= 0 && len(stamp)-j-1 == 14
}
