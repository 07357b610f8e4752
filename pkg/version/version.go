// Package version reports the build of the kubefed binaries; the Makefile
// stamps Version with -ldflags.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release, set at build time.
var Version = "dev"

// Commit is the git commit built, set at build time where the Go
// toolchain does not stamp it (-buildvcs=false).
var Commit = ""

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	Revision  string `json:"revision,omitempty"`
	// TreeState is "clean" or "dirty": whether the tree the binary was
	// built from had changes beyond Revision.
	TreeState string `json:"treeState,omitempty"`
}

// Get returns the running binary's Info.
func Get() Info {
	info := Info{
		Version:   Version,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.TreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	if info.Revision == "" && Commit != "" {
		info.Revision = Commit
		// The Makefile's Version is `git describe --dirty`.
		info.TreeState = "clean"
		if strings.HasSuffix(Version, "-dirty") {
			info.TreeState = "dirty"
		}
	}
	return info
}

// String renders Info on one line.
func (i Info) String() string {
	s := fmt.Sprintf("kubefed %s (%s, %s)", i.Version, i.GoVersion, i.Platform)
	if i.Revision != "" {
		s += " revision " + i.Revision
	}
	return s
}
