// Package version reports the build of the kubefed binaries; the Makefile
// stamps Version with -ldflags.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release, set at build time.
var Version = "dev"

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	Revision  string `json:"revision,omitempty"`
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
			if s.Key == "vcs.revision" {
				info.Revision = s.Value
			}
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
