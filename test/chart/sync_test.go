package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// repoRoot is the repository root, relative to this package.
var repoRoot = filepath.Join("..", "..")

// chartDir is the chart under test.
var chartDir = filepath.Join(repoRoot, "charts", "kubefed")

// copies maps each folder of the chart that holds verbatim copies to the
// folders of config/ they come from.
var copies = map[string][]string{
	filepath.Join("charts", "kubefed", "crds"): {
		filepath.Join("config", "crd", "bases"),
		filepath.Join("config", "crd", "federated"),
	},
	filepath.Join("charts", "kubefed", "files", "default-types"): {
		filepath.Join("config", "default-types"),
	},
	filepath.Join("charts", "kubefed", "files", "admission"): {
		filepath.Join("config", "admission"),
	},
}

// yamlFiles maps the base names of the YAML files of dirs to their content.
func yamlFiles(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 0 {
			t.Fatalf("no YAML files in %s", dir)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := files[filepath.Base(p)]; dup {
				t.Fatalf("%s is in more than one of %v", filepath.Base(p), dirs)
			}
			files[filepath.Base(p)] = data
		}
	}
	return files
}

// TestChartCopiesAreCurrent fails when the chart's CRDs or default
// FederatedTypeConfigs differ from config/, which `make manifests`
// generates: the chart would install stale types.
func TestChartCopiesAreCurrent(t *testing.T) {
	for chartCopy, sources := range copies {
		want := yamlFiles(t, sources...)
		got := yamlFiles(t, chartCopy)
		var stale []string
		for name, data := range want {
			if have, ok := got[name]; !ok {
				stale = append(stale, name+" is missing")
			} else if !bytes.Equal(have, data) {
				stale = append(stale, name+" differs")
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				stale = append(stale, name+" is not in config/ any more")
			}
		}
		sort.Strings(stale)
		for _, s := range stale {
			t.Errorf("%s: %s", chartCopy, s)
		}
	}
	if t.Failed() {
		t.Log("the chart's copies are stale: run hack/sync-chart.sh")
	}
}
