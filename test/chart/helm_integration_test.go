//go:build integration

package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// binary returns the path of a binary in the repository's bin/, failing
// the test with how to build it when it is missing.
func binary(t *testing.T, name, build string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(repoRoot, "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s is missing; build it with %s", path, build)
	}
	return path
}

// helmCLI runs bin/helm with its own configuration, cache and data
// directories, so that tests neither read nor write the user's.
type helmCLI struct {
	bin string
	env []string
}

func newHelm(t *testing.T) *helmCLI {
	t.Helper()
	home := t.TempDir()
	return &helmCLI{
		bin: binary(t, "helm", "hack/build-helm.sh"),
		env: append(os.Environ(),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
			"HELM_DATA_HOME="+filepath.Join(home, "data"),
		),
	}
}

// run runs helm and returns its standard output; the error carries
// standard error.
func (h *helmCLI) run(args ...string) (string, error) {
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// sets turns key=value pairs into helm --set flags.
func sets(pairs ...string) []string {
	var args []string
	for _, p := range pairs {
		args = append(args, "--set", p)
	}
	return args
}

// template renders the chart as release "kubefed" in namespace with the
// given --set pairs and decodes every document.
func (h *helmCLI) template(t *testing.T, namespace string, extra []string, setPairs ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "kubefed", chartDir, "--namespace", namespace}, extra...)
	out, err := h.run(append(args, sets(setPairs...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decodeManifests decodes a stream of YAML documents, skipping empty ones.
func decodeManifests(stream string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", doc, err)
		}
		if s := strings.TrimSpace(string(data)); s == "null" || s == "{}" {
			continue
		}
		// Unstructured decodes integers as int64, as clients see them.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("decode %s: %w", doc, err)
		}
		objs = append(objs, u)
	}
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	return found
}

// only returns the one rendered object of a kind.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want one %s, rendered %d", kind, len(found))
	}
	return found[0]
}

// into converts a rendered object into a typed one, rejecting unknown fields.
func into(t *testing.T, u *unstructured.Unstructured, typed any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
