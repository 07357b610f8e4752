package overrides

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePointer(t *testing.T) {
	cases := []struct {
		in      string
		want    Pointer
		wantErr string
	}{
		{in: "/spec/replicas", want: Pointer{"spec", "replicas"}},
		{in: "/spec/template/spec/containers/0/image", want: Pointer{"spec", "template", "spec", "containers", "0", "image"}},
		{in: "/metadata/labels/app.kubernetes.io~1name", want: Pointer{"metadata", "labels", "app.kubernetes.io/name"}},
		{in: "/a~0b", want: Pointer{"a~b"}},
		{in: "/~01", want: Pointer{"~1"}},
		{in: "/~10", want: Pointer{"/0"}},
		{in: "/", want: Pointer{""}},
		{in: "/a//b/", want: Pointer{"a", "", "b", ""}},
		{in: "", wantErr: `path "": a JSON pointer must start with "/"`},
		{in: "spec/replicas", wantErr: `path "spec/replicas": a JSON pointer must start with "/", such as "/spec/replicas"`},
		{in: "spec.replicas", wantErr: `path "spec.replicas": a JSON pointer must start with "/", such as "/spec/replicas"`},
		{in: "spec.template.spec.containers[0].image", wantErr: `such as "/spec/template/spec/containers/0/image"`},
		{in: "/a~", wantErr: `path "/a~": token "a~" ends with "~"`},
		{in: "/a~2b", wantErr: `path "/a~2b": token "a~2b" has "~2"; only ~0 and ~1 are valid escapes`},
		{in: "/x/~~1", wantErr: `has "~~"`},
	}
	for _, tc := range cases {
		got, err := ParsePointer(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParsePointer(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParsePointer(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParsePointer(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("ParsePointer(%q).String() = %q", tc.in, s)
		}
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a/b", "/a~0~1b", "/~01", "a", "/a~", "/a~2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzLen {
			return
		}
		p, err := ParsePointer(s)
		if err != nil {
			return
		}
		// Escaping is canonical, so a valid pointer prints as written.
		if got := p.String(); got != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, got)
		}
	})
}

func TestPointerLookup(t *testing.T) {
	doc := map[string]any{
		"spec": map[string]any{
			"list": []any{"a", map[string]any{"x~y/z": int64(2)}},
		},
	}
	for path, want := range map[string]any{
		"/spec/list/0":          "a",
		"/spec/list/1/x~0y~1z":  int64(2),
		"/spec/list/2":          nil,
		"/spec/list/01":         nil,
		"/spec/list/-":          nil,
		"/spec/missing":         nil,
		"/spec/list/0/deeper":   nil,
		"/spec/list/1/x~0y~1z/": nil,
	} {
		p, err := ParsePointer(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, ok := p.Lookup(doc)
		if ok != (want != nil) || got != want {
			t.Errorf("Lookup(%s) = %v, %v; want %v", path, got, ok, want)
		}
	}
}
