package jsonvalue

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestTypeName(t *testing.T) {
	var nilMap map[string]any
	cases := map[string]any{
		"null": nil, "an object": map[string]any{}, "a list": []any{}, "a string": "x",
		"a boolean": true, "a number": json.Number("1"), "a struct {}": struct{}{},
	}
	for want, v := range cases {
		if got := TypeName(v); got != want {
			t.Errorf("TypeName(%#v) = %q, want %q", v, got, want)
		}
	}
	if got := TypeName(nilMap); got != "null" {
		t.Errorf("TypeName(nil map) = %q", got)
	}
}

func TestCopyIsDeep(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": "c"}}, "n": int64(1)}
	out := Copy(in).(map[string]any)
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("copy differs: %v", out)
	}
	out["a"].([]any)[0].(map[string]any)["b"] = "changed"
	if in["a"].([]any)[0].(map[string]any)["b"] != "c" {
		t.Fatal("copy shares nested values with the original")
	}
}

func TestInt64(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{int64(-3), -3, true}, {7, 7, true}, {int32(4), 4, true}, {float64(12), 12, true},
		{1.5, 0, false}, {"3", 0, false}, {nil, 0, false}, {1e19, 0, false},
	} {
		if got, ok := Int64(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Int64(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCondition(t *testing.T) {
	ready := map[string]any{"type": "Ready", "status": "True"}
	status := map[string]any{"conditions": []any{"not an object", map[string]any{"type": "Established", "status": "False"}, ready}}
	if got := Condition(status, "Ready"); !reflect.DeepEqual(got, ready) {
		t.Errorf("Ready: %v, want %v", got, ready)
	}
	if got := Condition(status, "Available"); got != nil {
		t.Errorf("a type not listed: %v, want nil", got)
	}
	for _, s := range []map[string]any{nil, {}, {"conditions": "not a list"}} {
		if got := Condition(s, "Ready"); got != nil {
			t.Errorf("status %v: %v, want nil", s, got)
		}
	}
}
