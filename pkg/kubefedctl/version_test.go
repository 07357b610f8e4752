package kubefedctl

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubefed-io/kubefed/pkg/version"
)

func TestVersion(t *testing.T) {
	w := newWorld(t)
	want := version.Get()

	out := w.mustRun(t, "version")
	if out != "Client Version: "+want.String()+"\n" {
		t.Errorf("text output %q", out)
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
