package scheduling

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// object decodes a federated object from JSON, as the API server's
// unstructured objects hold it (integers as int64).
func object(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	return numbersToInt64(obj).(map[string]any)
}

func numbersToInt64(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbersToInt64(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbersToInt64(e)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

func TestReadFederatedObject(t *testing.T) {
	tests := []struct {
		name        string
		obj         string
		current     map[string]int64
		selector    string // of clusters; "" for none
		podSelector string // "" for none
		err         string
	}{
		{
			name: "no overrides and no selector",
			obj:  `{"spec": {"template": {"spec": {}}, "placement": {"clusters": [{"name": "c1"}]}}}`,
		},
		{
			name: "replicas overrides beside others",
			obj: `{"spec": {
				"placement": {"clusterSelector": {"matchLabels": {"tier": "gold"}}},
				"overrides": [
					{"clusterName": "c1", "clusterOverrides": [{"path": "/metadata/labels/a", "value": "b"}, {"path": "/spec/replicas", "value": 3}]},
					{"clusterName": "c2", "clusterOverrides": [{"op": "replace", "path": "/spec/replicas", "value": 0}]},
					{"clusterName": "c3", "clusterOverrides": [{"op": "remove", "path": "/spec/replicas"}]},
					{"clusterName": "c4", "clusterOverrides": [{"path": "/spec/replicas", "value": "many"}]},
					{"clusterName": "c5", "clusterOverrides": [{"path": "/spec/replicas", "value": 2.0}]},
					{"clusterName": "c6"}
				]}}`,
			current:  map[string]int64{"c1": 3, "c2": 0, "c5": 2},
			selector: "tier=gold",
		},
		{
			name:        "a deployment's selector",
			obj:         `{"spec": {"template": {"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}}}`,
			podSelector: "app=web",
		},
		{
			name:        "a replication controller's selector",
			obj:         `{"spec": {"template": {"spec": {"selector": {"app": "web"}}}}}`,
			podSelector: "app=web",
		},
		{
			name:        "the pod template's labels without a selector",
			obj:         `{"spec": {"template": {"spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}}}`,
			podSelector: "app=web",
		},
		{
			name: "a selector of every pod is no selector",
			obj:  `{"spec": {"template": {"spec": {"selector": {"matchLabels": {}}}}}}`,
		},
		{
			name: "a malformed cluster selector",
			obj:  `{"spec": {"placement": {"clusterSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}}}`,
			err:  "spec.placement.clusterSelector",
		},
		{
			name: "malformed overrides",
			obj:  `{"spec": {"overrides": [{"clusterOverrides": []}]}}`,
			err:  "spec.overrides[0].clusterName",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == "spec.placement.clusterSelector" {
				// Read only for a preference that intersects with it.
				if _, err := readFederatedObject(object(t, tt.obj), false); err != nil {
					t.Errorf("without intersection: %v, want no error", err)
				}
			}
			fo, err := readFederatedObject(object(t, tt.obj), true)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one about %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(fo.current, tt.current) || (fo.current == nil) != (tt.current == nil) {
				t.Errorf("current = %v, want %v", fo.current, tt.current)
			}
			if got := selectorString(fo.clusterSelector); got != tt.selector {
				t.Errorf("cluster selector = %q, want %q", got, tt.selector)
			}
			if got := selectorString(fo.podSelector); got != tt.podSelector {
				t.Errorf("pod selector = %q, want %q", got, tt.podSelector)
			}
		})
	}
}

func selectorString(s labels.Selector) string {
	if s == nil {
		return ""
	}
	return s.String()
}

func TestApplySchedule(t *testing.T) {
	tests := []struct {
		name     string
		obj      string
		schedule schedule
		want     string
		changed  bool
	}{
		{
			name:     "first schedule of an object without overrides",
			obj:      `{"spec": {"template": {}, "placement": {"clusterSelector": {}}}}`,
			schedule: schedule{placement: []string{"c2", "c1"}, replicas: map[string]int64{"c1": 3, "c2": 0}},
			want: `{"spec": {"template": {}, "placement": {"clusterSelector": {}, "clusters": [{"name": "c1"}, {"name": "c2"}]},
				"overrides": [
					{"clusterName": "c1", "clusterOverrides": [{"path": "/spec/replicas", "value": 3}]},
					{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 0}]}]}}`,
			changed: true,
		},
		{
			name: "other overrides stay, in place",
			obj: `{"spec": {"placement": {"clusters": [{"name": "c1"}]}, "overrides": [
				{"clusterName": "c1", "clusterOverrides": [{"path": "/metadata/labels/a", "value": "b"}, {"op": "remove", "path": "/spec/replicas"}, {"path": "/spec/paused", "value": true}]},
				{"clusterName": "other", "clusterOverrides": [{"path": "/metadata/labels/a", "value": "c"}, {"path": "/spec/replicas", "value": 9}]},
				{"clusterName": "gone", "clusterOverrides": [{"path": "/spec/replicas", "value": 9}]}]}}`,
			schedule: schedule{placement: []string{"c1", "c2"}, replicas: map[string]int64{"c1": 4, "c2": 1}},
			want: `{"spec": {"placement": {"clusters": [{"name": "c1"}, {"name": "c2"}]}, "overrides": [
				{"clusterName": "c1", "clusterOverrides": [{"path": "/metadata/labels/a", "value": "b"}, {"op": "replace", "path": "/spec/replicas", "value": 4}, {"path": "/spec/paused", "value": true}]},
				{"clusterName": "other", "clusterOverrides": [{"path": "/metadata/labels/a", "value": "c"}]},
				{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 1}]}]}}`,
			changed: true,
		},
		{
			name: "a failed-over cluster keeps its override and its place",
			obj: `{"spec": {"placement": {"clusters": [{"name": "c1"}, {"name": "c2"}]}, "overrides": [
				{"clusterName": "c1", "clusterOverrides": [{"path": "/spec/replicas", "value": 5}]},
				{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 5}]}]}}`,
			schedule: schedule{placement: []string{"c1", "c2"}, replicas: map[string]int64{"c2": 10}},
			want: `{"spec": {"placement": {"clusters": [{"name": "c1"}, {"name": "c2"}]}, "overrides": [
				{"clusterName": "c1", "clusterOverrides": [{"path": "/spec/replicas", "value": 5}]},
				{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 10}]}]}}`,
			changed: true,
		},
		{
			name: "an up-to-date object is not changed",
			obj: `{"spec": {"placement": {"clusters": [{"name": "c1"}, {"name": "c2"}]}, "overrides": [
				{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 2}]},
				{"clusterName": "c1", "clusterOverrides": [{"op": "add", "path": "/spec/replicas", "value": 1}]}]}}`,
			schedule: schedule{placement: []string{"c2", "c1"}, replicas: map[string]int64{"c1": 1, "c2": 2}},
			want: `{"spec": {"placement": {"clusters": [{"name": "c1"}, {"name": "c2"}]}, "overrides": [
				{"clusterName": "c2", "clusterOverrides": [{"path": "/spec/replicas", "value": 2}]},
				{"clusterName": "c1", "clusterOverrides": [{"op": "add", "path": "/spec/replicas", "value": 1}]}]}}`,
		},
		{
			name:     "no candidates place nowhere",
			obj:      `{"spec": {"placement": {"clusterSelector": {}}}}`,
			schedule: schedule{},
			want:     `{"spec": {"placement": {"clusterSelector": {}, "clusters": []}}}`,
			changed:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.obj)
			changed, err := applySchedule(obj, tt.schedule)
			if err != nil {
				t.Fatal(err)
			}
			if want := object(t, tt.want); !reflect.DeepEqual(obj, want) {
				got, _ := json.Marshal(obj)
				t.Errorf("got %s", got)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			// Applying again changes nothing.
			if again, _ := applySchedule(obj, tt.schedule); again {
				t.Error("a second application changed the object again")
			}
		})
	}
}
