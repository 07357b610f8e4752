package retention

import (
	"reflect"
	"testing"
)

func TestSetManagedLabel(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"no metadata", `{}`, `{metadata: {labels: {kubefed.io/managed: "true"}}}`},
		{"no labels", `{metadata: {name: a}}`, `{metadata: {name: a, labels: {kubefed.io/managed: "true"}}}`},
		{"other labels kept", `{metadata: {labels: {app: web}}}`, `{metadata: {labels: {app: web, kubefed.io/managed: "true"}}}`},
		{"false from the template is overwritten", `{metadata: {labels: {kubefed.io/managed: "false"}}}`, `{metadata: {labels: {kubefed.io/managed: "true"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.in)
			if err := SetManagedLabel(obj); err != nil {
				t.Fatal(err)
			}
			if want := object(t, tc.want); !reflect.DeepEqual(obj, want) {
				t.Errorf("got %s, want %s", mustJSON(t, obj), mustJSON(t, want))
			}
			if !IsManaged(obj) {
				t.Error("IsManaged is false after SetManagedLabel")
			}
		})
	}
	for in, want := range map[string]string{
		`{metadata: 1}`:           "desired object metadata: expected an object, got a number",
		`{metadata: {labels: x}}`: "desired object metadata.labels: expected an object, got a string",
	} {
		if err := SetManagedLabel(object(t, in)); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestManagedLabelQueries(t *testing.T) {
	cases := []struct {
		obj                string
		managed, forbidden bool
	}{
		{`{metadata: {labels: {kubefed.io/managed: "true"}}}`, true, false},
		{`{metadata: {labels: {kubefed.io/managed: "false"}}}`, false, true},
		{`{metadata: {labels: {kubefed.io/managed: "yes"}}}`, false, false},
		{`{metadata: {labels: {kubefed.io/managed: true}}}`, false, false},
		{`{metadata: {labels: {app: web}}}`, false, false},
		{`{metadata: {labels: [kubefed.io/managed]}}`, false, false},
		{`{metadata: {}}`, false, false},
		{`{metadata: x}`, false, false},
		{`{}`, false, false},
	}
	for _, tc := range cases {
		obj := object(t, tc.obj)
		if got := IsManaged(obj); got != tc.managed {
			t.Errorf("IsManaged(%s) = %v", tc.obj, got)
		}
		if got := ManagementForbidden(obj); got != tc.forbidden {
			t.Errorf("ManagementForbidden(%s) = %v", tc.obj, got)
		}
	}
	if IsManaged(nil) || ManagementForbidden(nil) {
		t.Error("a nil object is neither managed nor forbidden")
	}
}

func TestRemoveManagedLabel(t *testing.T) {
	cases := []struct {
		in, want string
		removed  bool
	}{
		{`{metadata: {labels: {app: web, kubefed.io/managed: "true"}}}`, `{metadata: {labels: {app: web}}}`, true},
		{`{metadata: {labels: {kubefed.io/managed: "true"}}}`, `{metadata: {labels: {}}}`, true},
		{`{metadata: {labels: {app: web}}}`, `{metadata: {labels: {app: web}}}`, false},
		{`{metadata: {}}`, `{metadata: {}}`, false},
		{`{metadata: {labels: x}}`, `{metadata: {labels: x}}`, false},
		{`{}`, `{}`, false},
	}
	for _, tc := range cases {
		obj := object(t, tc.in)
		if got := RemoveManagedLabel(obj); got != tc.removed {
			t.Errorf("RemoveManagedLabel(%s) = %v, want %v", tc.in, got, tc.removed)
		}
		if want := object(t, tc.want); !reflect.DeepEqual(obj, want) {
			t.Errorf("RemoveManagedLabel(%s): got %s, want %s", tc.in, mustJSON(t, obj), mustJSON(t, want))
		}
	}
	if RemoveManagedLabel(nil) {
		t.Error("nil object")
	}
}
