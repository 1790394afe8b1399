// Package buildinfo says which build of zerotal lock is running, from
// what the Go toolchain records in the binary (runtime/debug.BuildInfo):
// the module version for `go install …@vX`, the VCS revision for a build
// from a checkout.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Info describes the running build.
type Info struct {
	// Version is the module version ("v1.2.3"), or "devel" for a build
	// from a checkout (then Revision says which commit).
	Version string
	// Revision is the VCS commit the binary was built from, when known,
	// with "-dirty" when the work tree had changes.
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// String is the one-line form used by `--version` and in logs:
// "v1.2.3" or "devel (abc123def456-dirty)".
func (i Info) String() string {
	if i.Revision == "" || i.Version != "devel" {
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
		return Info{Version: "devel"}
	}
	i := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if i.Version == "" || i.Version == "(devel)" {
		i.Version = "devel"
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
