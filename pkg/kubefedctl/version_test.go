package kubefedctl

import (
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubefed-io/kubefed/pkg/version"
)

func TestVersion(t *testing.T) {
	w := newWorld(t)
	want := version.Get()

	// KubeFed's line, which scripts parse.
	out := w.mustRun(t, "version")
	line := regexp.MustCompile(`^kubefedctl version: version\.Info\{Version:"([^"]*)", GitCommit:"([^"]*)", GitTreeState:"(clean|dirty|unknown)", BuildDate:"unknown", GoVersion:"([^"]*)", Compiler:"gc", Platform:"([^"]*)"\}\n$`)
	m := line.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("text output %q is not KubeFed's line", out)
	}
	commit := want.Revision
	if commit == "" {
		commit = "unknown"
	}
	if m[1] != want.Version || m[2] != commit || m[4] != runtime.Version() || m[5] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("text output %q, want %+v", out, want)
	}
	if got := kubefedVersionLine(version.Info{Version: "v0.9.0", Revision: "abc", TreeState: "dirty", GoVersion: "go1.26", Platform: "linux/amd64"}); got !=
		`kubefedctl version: version.Info{Version:"v0.9.0", GitCommit:"abc", GitTreeState:"dirty", BuildDate:"unknown", GoVersion:"go1.26", Compiler:"gc", Platform:"linux/amd64"}`+"\n" {
		t.Errorf("line %q", got)
	}
	for format, unmarshal := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) }} {
		var got versionOutput
		if err := unmarshal([]byte(w.mustRun(t, "version", "-o", format)), &got); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if got.ClientVersion != want {
			t.Errorf("%s: got %+v, want %+v", format, got.ClientVersion, want)
		}
	}
	if _, _, err := w.run(t, "version", "-o", "wide"); err == nil || !strings.Contains(err.Error(), "must be json or yaml") {
		t.Errorf("-o wide: got %v", err)
	}
}

// KubeFed's scripts and docs pass klog's --v (or -v) to every verb.
func TestKlogFlagsAreAccepted(t *testing.T) {
	w := newWorld(t)
	for _, args := range [][]string{{"version", "--v=2"}, {"-v=4", "version"}, {"version", "--vmodule=x=2", "--logtostderr"}} {
		if _, _, err := w.run(t, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
