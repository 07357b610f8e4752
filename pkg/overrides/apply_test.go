package overrides

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

// object decodes a YAML manifest the way the API server's unstructured
// decoding does (integers as int64).
func object(t testing.TB, manifest string) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// value decodes one YAML value like object does.
func value(t testing.TB, manifest string) any {
	t.Helper()
	return object(t, "v: "+manifest)["v"]
}

func mustPointer(s string) Pointer {
	p, err := ParsePointer(s)
	if err != nil {
		panic(err)
	}
	return p
}

func add(path string, v any) Operation {
	return Operation{Op: typesv1beta1.OverrideAdd, Path: mustPointer(path), Value: v}
}

func replace(path string, v any) Operation {
	return Operation{Op: typesv1beta1.OverrideReplace, Path: mustPointer(path), Value: v}
}

func remove(path string) Operation {
	return Operation{Op: typesv1beta1.OverrideRemove, Path: mustPointer(path)}
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: app, image: "nginx:1.0", env: [{name: A, value: "1"}]}
      - {name: sidecar, image: envoy}
`

func TestApply(t *testing.T) {
	cases := []struct {
		name string
		ops  []Operation
		// edit turns the decoded deployment into the wanted object.
		edit    func(t *testing.T, want map[string]any)
		wantErr string
	}{
		{
			name: "seed example: KubeFed's sample FederatedDeployment overrides",
			ops: []Operation{
				{Path: mustPointer("/spec/replicas"), Value: int64(5)},
				{Path: mustPointer("/spec/template/spec/containers/0/image"), Value: "nginx:1.17.0-alpine"},
				add("/metadata/annotations", map[string]any{"foo": "bar"}),
				remove("/metadata/annotations/foo"),
			},
			edit: func(t *testing.T, w map[string]any) {
				spec(w)["replicas"] = int64(5)
				container(w, 0)["image"] = "nginx:1.17.0-alpine"
				metadata(w)["annotations"] = map[string]any{}
			},
		},
		{
			name: "seed: replace /spec/replicas",
			ops:  []Operation{replace("/spec/replicas", int64(5))},
			edit: func(t *testing.T, w map[string]any) { spec(w)["replicas"] = int64(5) },
		},
		{
			name: "seed: replace an image through a list index",
			ops:  []Operation{replace("/spec/template/spec/containers/0/image", "nginx:2.0")},
			edit: func(t *testing.T, w map[string]any) { container(w, 0)["image"] = "nginx:2.0" },
		},
		{
			name: "seed: add an annotations object",
			ops:  []Operation{add("/metadata/annotations", map[string]any{"foo": "bar"})},
			edit: func(t *testing.T, w map[string]any) { metadata(w)["annotations"] = map[string]any{"foo": "bar"} },
		},
		{
			name: "empty op means replace",
			ops:  []Operation{{Path: mustPointer("/spec/replicas"), Value: int64(1)}},
			edit: func(t *testing.T, w map[string]any) { spec(w)["replicas"] = int64(1) },
		},
		{
			name: "replace of a missing object key adds it",
			ops:  []Operation{replace("/spec/paused", true)},
			edit: func(t *testing.T, w map[string]any) { spec(w)["paused"] = true },
		},
		{
			name: "replace without a value sets null",
			ops:  []Operation{{Op: typesv1beta1.OverrideReplace, Path: mustPointer("/spec/replicas")}},
			edit: func(t *testing.T, w map[string]any) { spec(w)["replicas"] = nil },
		},
		{
			name: "add without a value sets null",
			ops:  []Operation{{Op: typesv1beta1.OverrideAdd, Path: mustPointer("/spec/paused")}},
			edit: func(t *testing.T, w map[string]any) { spec(w)["paused"] = nil },
		},
		{
			name: "add on an existing object key replaces it",
			ops:  []Operation{add("/metadata/labels", map[string]any{"tier": "web"})},
			edit: func(t *testing.T, w map[string]any) { metadata(w)["labels"] = map[string]any{"tier": "web"} },
		},
		{
			name: "add on a list index inserts there",
			ops:  []Operation{add("/spec/template/spec/containers/1", map[string]any{"name": "mid"})},
			edit: func(t *testing.T, w map[string]any) {
				c := containers(w)
				spec(template(w))["containers"] = []any{c[0], map[string]any{"name": "mid"}, c[1]}
			},
		},
		{
			name: "add at index 0 prepends",
			ops:  []Operation{add("/spec/template/spec/containers/0", "first")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = append([]any{"first"}, containers(w)...)
			},
		},
		{
			name: "add at - appends",
			ops:  []Operation{add("/spec/template/spec/containers/0/env/-", map[string]any{"name": "B", "value": "2"})},
			edit: func(t *testing.T, w map[string]any) {
				c := container(w, 0)
				c["env"] = append(c["env"].([]any), map[string]any{"name": "B", "value": "2"})
			},
		},
		{
			name: "add at the length appends",
			ops:  []Operation{add("/spec/template/spec/containers/2", "last")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = append(containers(w), "last")
			},
		},
		{
			name: "add at -1 appends (negative indexes count from the end)",
			ops:  []Operation{add("/spec/template/spec/containers/-1", "last")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = append(containers(w), "last")
			},
		},
		{
			name: "add at -3 of two elements prepends",
			ops:  []Operation{add("/spec/template/spec/containers/-3", "first")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = append([]any{"first"}, containers(w)...)
			},
		},
		{
			name: "replace a list element",
			ops:  []Operation{replace("/spec/template/spec/containers/1", map[string]any{"name": "other"})},
			edit: func(t *testing.T, w map[string]any) { containers(w)[1] = map[string]any{"name": "other"} },
		},
		{
			name: "replace through a negative index",
			ops:  []Operation{replace("/spec/template/spec/containers/-1/image", "envoy:2")},
			edit: func(t *testing.T, w map[string]any) { container(w, 1)["image"] = "envoy:2" },
		},
		{
			name: "replace a list as a whole",
			ops:  []Operation{replace("/spec/template/spec/containers/0/env", []any{})},
			edit: func(t *testing.T, w map[string]any) { container(w, 0)["env"] = []any{} },
		},
		{
			name: "remove a list element",
			ops:  []Operation{remove("/spec/template/spec/containers/0")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = containers(w)[1:]
			},
		},
		{
			name: "remove the last list element with -1",
			ops:  []Operation{remove("/spec/template/spec/containers/-1")},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = containers(w)[:1]
			},
		},
		{
			name: "remove an object key",
			ops:  []Operation{remove("/metadata/labels/app")},
			edit: func(t *testing.T, w map[string]any) { delete(labels(w), "app") },
		},
		{
			name: "escaped key",
			ops:  []Operation{add("/metadata/labels/app.kubernetes.io~1name", "web"), add("/metadata/labels/a~0b", "x")},
			edit: func(t *testing.T, w map[string]any) {
				labels(w)["app.kubernetes.io/name"] = "web"
				labels(w)["a~b"] = "x"
			},
		},
		{
			name: "operations apply in order",
			ops: []Operation{
				add("/spec/template/spec/containers/-", map[string]any{"name": "c"}),
				replace("/spec/template/spec/containers/2/image", "busybox"),
			},
			edit: func(t *testing.T, w map[string]any) {
				spec(template(w))["containers"] = append(containers(w), map[string]any{"name": "c", "image": "busybox"})
			},
		},
		{
			name: "Go ints are stored as int64",
			ops:  []Operation{replace("/spec/replicas", 7)},
			edit: func(t *testing.T, w map[string]any) { spec(w)["replicas"] = int64(7) },
		},

		// Errors.
		{
			name:    "replace does not create missing intermediate objects",
			ops:     []Operation{replace("/spec/strategy/type", "Recreate")},
			wantErr: "replace /spec/strategy/type: /spec/strategy does not exist",
		},
		{
			name:    "add does not create missing intermediate objects",
			ops:     []Operation{add("/metadata/annotations/foo", "bar")},
			wantErr: "add /metadata/annotations/foo: /metadata/annotations does not exist",
		},
		{
			name:    "remove of a missing key names the path",
			ops:     []Operation{remove("/metadata/labels/nope")},
			wantErr: "remove /metadata/labels/nope: /metadata/labels/nope does not exist",
		},
		{
			name:    "remove under a missing object",
			ops:     []Operation{remove("/metadata/annotations/foo")},
			wantErr: "remove /metadata/annotations/foo: /metadata/annotations does not exist",
		},
		{
			name:    "index beyond the list names the list and the index",
			ops:     []Operation{replace("/spec/template/spec/containers/5/image", "x")},
			wantErr: "replace /spec/template/spec/containers/5/image: /spec/template/spec/containers: index 5 is out of range: the list has 2 elements",
		},
		{
			name:    "replace at the length is out of range",
			ops:     []Operation{replace("/spec/template/spec/containers/2", "x")},
			wantErr: "/spec/template/spec/containers: index 2 is out of range",
		},
		{
			name:    "add beyond the length is out of range",
			ops:     []Operation{add("/spec/template/spec/containers/3", "x")},
			wantErr: "/spec/template/spec/containers: index 3 is out of range",
		},
		{
			name:    "remove out of range",
			ops:     []Operation{remove("/spec/template/spec/containers/0/env/1")},
			wantErr: "remove /spec/template/spec/containers/0/env/1: /spec/template/spec/containers/0/env: index 1 is out of range: the list has 1 element",
		},
		{
			name:    "negative index beyond the start",
			ops:     []Operation{replace("/spec/template/spec/containers/-3/image", "x")},
			wantErr: "index -3 is out of range",
		},
		{
			name:    "replace at - is an error",
			ops:     []Operation{replace("/spec/template/spec/containers/-", "x")},
			wantErr: `index "-" (after the last element) is only valid for add`,
		},
		{
			name:    "- inside a path is an error",
			ops:     []Operation{add("/spec/template/spec/containers/-/image", "x")},
			wantErr: `/spec/template/spec/containers: index "-"`,
		},
		{
			name:    "a name is not a list index",
			ops:     []Operation{replace("/spec/template/spec/containers/app/image", "x")},
			wantErr: `/spec/template/spec/containers: "app" is not a list index`,
		},
		{
			name:    "cannot go inside a scalar",
			ops:     []Operation{replace("/spec/replicas/value", 1)},
			wantErr: "/spec/replicas is a number, not an object or a list",
		},
		{
			name:    "cannot go further inside a scalar",
			ops:     []Operation{replace("/metadata/name/a/b", 1)},
			wantErr: "/metadata/name is a string, not an object or a list",
		},
		{
			name:    "forbidden path",
			ops:     []Operation{replace("/metadata/namespace", "x")},
			wantErr: "replace /metadata/namespace: path /metadata/namespace may not be overridden",
		},
		{
			name:    "unknown op",
			ops:     []Operation{{Op: "move", Path: mustPointer("/spec/replicas")}},
			wantErr: `op "move" is not add, remove or replace`,
		},
		{
			name:    "empty path",
			ops:     []Operation{{Op: typesv1beta1.OverrideReplace, Value: map[string]any{}}},
			wantErr: "path must not be empty",
		},
		{
			name:    "value that is not JSON",
			ops:     []Operation{replace("/spec/replicas", []string{"a"})},
			wantErr: "value of type []string is not a JSON value",
		},
		{
			name:    "the failing operation is the one named",
			ops:     []Operation{replace("/spec/replicas", int64(2)), remove("/spec/nope")},
			wantErr: "remove /spec/nope: /spec/nope does not exist",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, deployment)
			err := Apply(obj, tc.ops)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := object(t, deployment)
			tc.edit(t, want)
			if !reflect.DeepEqual(obj, want) {
				t.Errorf("got  %s\nwant %s", mustJSON(t, obj), mustJSON(t, want))
			}
		})
	}
}

func TestApplyNullIntermediate(t *testing.T) {
	obj := object(t, `metadata: {annotations: null, labels: {a: b}}`)
	err := Apply(obj, []Operation{add("/metadata/annotations/foo", "bar")})
	if err == nil || !strings.Contains(err.Error(), "/metadata/annotations does not exist") {
		t.Errorf("got %v, want an error: null is not an object to add to", err)
	}
	obj = object(t, `spec: {list: [null]}`)
	err = Apply(obj, []Operation{replace("/spec/list/0/x", 1)})
	if err == nil || !strings.Contains(err.Error(), "/spec/list/0 is null") {
		t.Errorf("got %v, want an error naming the null element", err)
	}
	// A key holding null exists: it can be replaced and removed.
	obj = object(t, `metadata: {annotations: null}`)
	if err := Apply(obj, []Operation{remove("/metadata/annotations")}); err != nil {
		t.Errorf("remove of a null key: %v", err)
	}
}

func TestApplyNilObject(t *testing.T) {
	if err := Apply(nil, []Operation{replace("/spec/replicas", 1)}); err == nil {
		t.Error("want an error for a nil object")
	}
	if err := Apply(nil, nil); err != nil {
		t.Errorf("no operations on a nil object: %v", err)
	}
}

// TestApplyDoesNotAlias checks that override values are copied: changing the
// object of one cluster must not change the federated object or another
// cluster's object.
func TestApplyDoesNotAlias(t *testing.T) {
	v := value(t, `{annotations: {a: b}, list: [{x: 1}]}`)
	ops := []Operation{replace("/metadata/extra", v), add("/spec/template/spec/containers/-", v)}
	c1, c2 := object(t, deployment), object(t, deployment)
	for _, obj := range []map[string]any{c1, c2} {
		if err := Apply(obj, ops); err != nil {
			t.Fatal(err)
		}
	}
	extra := metadata(c1)["extra"].(map[string]any)
	extra["annotations"].(map[string]any)["a"] = "changed"
	extra["list"].([]any)[0].(map[string]any)["x"] = int64(2)
	containers(c1)[2].(map[string]any)["list"] = nil

	want := value(t, `{annotations: {a: b}, list: [{x: 1}]}`)
	if !reflect.DeepEqual(v, want) {
		t.Errorf("override value changed: %v", v)
	}
	if got := metadata(c2)["extra"]; !reflect.DeepEqual(got, want) {
		t.Errorf("other cluster's object changed: %v", got)
	}
	if got := containers(c2)[2]; !reflect.DeepEqual(got, want) {
		t.Errorf("other cluster's list element changed: %v", got)
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func metadata(obj map[string]any) map[string]any { return obj["metadata"].(map[string]any) }
func labels(obj map[string]any) map[string]any   { return metadata(obj)["labels"].(map[string]any) }
func spec(obj map[string]any) map[string]any     { return obj["spec"].(map[string]any) }
func template(obj map[string]any) map[string]any { return spec(obj)["template"].(map[string]any) }
func containers(obj map[string]any) []any        { return spec(template(obj))["containers"].([]any) }
func container(obj map[string]any, i int) map[string]any {
	return containers(obj)[i].(map[string]any)
}

// fuzzOps are the op values FuzzApply picks from; the op is a selector
// rather than a free string so that the fuzzer spends its time on objects
// and paths (a long garbage op only reaches the "not add, remove or
// replace" error).
var fuzzOps = []typesv1beta1.OverrideOp{"", typesv1beta1.OverrideAdd, typesv1beta1.OverrideRemove, typesv1beta1.OverrideReplace, "move"}

// maxFuzzLen bounds the fuzzed strings: the fuzzer minimizes every new
// input in time quadratic in its length, and long inputs add no coverage.
const maxFuzzLen = 256

func FuzzApply(f *testing.F) {
	seeds := []struct {
		obj  string
		op   uint8
		path string
		val  string
	}{
		{`{"spec":{"replicas":3}}`, 3, "/spec/replicas", `5`},
		{`{"spec":{"containers":[{"image":"a"}]}}`, 0, "/spec/containers/0/image", `"b"`},
		{`{"metadata":{}}`, 1, "/metadata/annotations", `{"foo":"bar"}`},
		{`{"metadata":{"annotations":{"foo":"bar"}}}`, 2, "/metadata/annotations/foo", ``},
		{`{"a":[1,2,3]}`, 1, "/a/-", `4`},
		{`{"a":[1,2,3]}`, 1, "/a/-4", `0`},
		{`{"a":[1,2,3]}`, 2, "/a/-1", ``},
		{`{"a":[[1],{"b":null}]}`, 3, "/a/1/b/c", `1`},
		{`{"a":{"~/":1}}`, 2, "/a/~0~1", ``},
		{`{}`, 4, "/a", `1`},
	}
	for _, s := range seeds {
		f.Add(s.obj, s.op, s.path, s.val)
	}
	f.Fuzz(func(t *testing.T, objJSON string, opIndex uint8, path, valueJSON string) {
		if len(objJSON) > maxFuzzLen || len(path) > maxFuzzLen || len(valueJSON) > maxFuzzLen {
			return
		}
		var obj map[string]any
		if err := utiljson.Unmarshal([]byte(objJSON), &obj); err != nil {
			return
		}
		var v any
		if valueJSON != "" {
			if err := utiljson.Unmarshal([]byte(valueJSON), &v); err != nil {
				return
			}
		}
		p, err := ParsePointer(path)
		if err != nil {
			return
		}
		op := fuzzOps[int(opIndex)%len(fuzzOps)]
		if err := Apply(obj, []Operation{{Op: op, Path: p, Value: v}}); err != nil {
			return
		}
		// The result must stay a valid unstructured object: these panic or
		// fail on values that are not JSON.
		runtime.DeepCopyJSON(obj)
		if _, err := json.Marshal(obj); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		// Scribbling over every container in the result must not reach the
		// override value: Apply copied it.
		scribble(obj)
		var fresh any
		if valueJSON != "" {
			if err := utiljson.Unmarshal([]byte(valueJSON), &fresh); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(v, fresh) {
			t.Fatalf("override value aliased by the object: now %v, was %s", v, valueJSON)
		}
	})
}

func scribble(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if _, ok := e.(map[string]any); ok {
				scribble(e)
			} else if _, ok := e.([]any); ok {
				scribble(e)
			} else {
				v[k] = "scribbled"
			}
		}
		v["scribbled"] = true
	case []any:
		for i, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				v[i] = "scribbled"
			}
		}
	}
}

func TestCopyValue(t *testing.T) {
	cases := []struct {
		in      any
		want    any
		wantErr string
	}{
		{in: nil, want: nil},
		{in: "s", want: "s"},
		{in: true, want: true},
		{in: int64(1), want: int64(1)},
		{in: 1.5, want: 1.5},
		{in: json.Number("12"), want: json.Number("12")},
		{in: 3, want: int64(3)},
		{in: int8(-3), want: int64(-3)},
		{in: int16(3), want: int64(3)},
		{in: int32(3), want: int64(3)},
		{in: uint8(3), want: int64(3)},
		{in: uint16(3), want: int64(3)},
		{in: uint32(3), want: int64(3)},
		{in: uint(3), want: int64(3)},
		{in: uint64(3), want: int64(3)},
		{in: float32(0.5), want: float64(0.5)},
		{in: map[string]any(nil), want: nil},
		{in: []any(nil), want: nil},
		{in: map[string]any{"a": []any{1, map[string]any{"b": uint8(2)}}}, want: map[string]any{"a": []any{int64(1), map[string]any{"b": int64(2)}}}},
		{in: uint64(1 << 63), wantErr: "does not fit in int64"},
		{in: []any{struct{}{}}, wantErr: "value of type struct {} is not a JSON value"},
		{in: map[string]any{"a": map[string]string{}}, wantErr: "value of type map[string]string is not a JSON value"},
	}
	for _, tc := range cases {
		got, err := copyValue(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("copyValue(%#v) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("copyValue(%#v) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}
