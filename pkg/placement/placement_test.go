package placement

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
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

var candidates = []Cluster{
	{Name: "c3", Labels: map[string]string{"region": "us", "tier": "gold"}, Ready: true},
	{Name: "c1", Labels: map[string]string{"region": "eu"}, Ready: true},
	{Name: "c2", Labels: map[string]string{"region": "us"}},
}

func TestSelect(t *testing.T) {
	set := NewClusterSet(candidates)
	cases := []struct {
		name     string
		manifest string
		want     Result
	}{
		{"no spec places nowhere", `{}`, Result{}},
		{"no placement places nowhere", `spec: {template: {}}`, Result{}},
		{"null placement places nowhere", `spec: {placement: null}`, Result{}},
		{"absent selector places nowhere", `spec: {placement: {}}`, Result{}},
		{"null selector places nowhere", `spec: {placement: {clusterSelector: null}}`, Result{}},
		{"empty selector places everywhere", `spec: {placement: {clusterSelector: {}}}`,
			Result{Clusters: []string{"c1", "c2", "c3"}, Ready: []string{"c1", "c3"}}},
		{"matchLabels", `spec: {placement: {clusterSelector: {matchLabels: {region: us}}}}`,
			Result{Clusters: []string{"c2", "c3"}, Ready: []string{"c3"}}},
		{"matchLabels and matchExpressions are ANDed",
			`spec: {placement: {clusterSelector: {matchLabels: {region: us}, matchExpressions: [{key: tier, operator: In, values: [gold]}]}}}`,
			Result{Clusters: []string{"c3"}, Ready: []string{"c3"}}},
		{"NotIn", `spec: {placement: {clusterSelector: {matchExpressions: [{key: region, operator: NotIn, values: [us]}]}}}`,
			Result{Clusters: []string{"c1"}, Ready: []string{"c1"}}},
		{"Exists", `spec: {placement: {clusterSelector: {matchExpressions: [{key: tier, operator: Exists}]}}}`,
			Result{Clusters: []string{"c3"}, Ready: []string{"c3"}}},
		{"DoesNotExist", `spec: {placement: {clusterSelector: {matchExpressions: [{key: tier, operator: DoesNotExist}]}}}`,
			Result{Clusters: []string{"c1", "c2"}, Ready: []string{"c1"}}},
		{"selector matching nothing", `spec: {placement: {clusterSelector: {matchLabels: {region: mars}}}}`, Result{}},
		{"clusters listed", `spec: {placement: {clusters: [{name: c3}, {name: c2}]}}`,
			Result{Clusters: []string{"c2", "c3"}, Ready: []string{"c3"}}},
		{"empty clusters wins over an all-selector", `spec: {placement: {clusters: [], clusterSelector: {}}}`, Result{}},
		{"clusters win over a selector", `spec: {placement: {clusters: [{name: c1}], clusterSelector: {matchLabels: {region: us}}}}`,
			Result{Clusters: []string{"c1"}, Ready: []string{"c1"}}},
		{"null clusters falls back to the selector", `spec: {placement: {clusters: null, clusterSelector: {}}}`,
			Result{Clusters: []string{"c1", "c2", "c3"}, Ready: []string{"c1", "c3"}}},
		{"unknown names are reported sorted and once",
			`spec: {placement: {clusters: [{name: zz}, {name: c1}, {name: gone}, {name: zz}, {name: c1}]}}`,
			Result{Clusters: []string{"c1"}, Ready: []string{"c1"}, Unknown: []string{"gone", "zz"}}},
		{"invalid selector is not read when clusters are present",
			`spec: {placement: {clusters: [{name: c2}], clusterSelector: {matchExpressions: [{key: a, operator: Bogus}]}}}`,
			Result{Clusters: []string{"c2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromUnstructured(object(t, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			got := set.Select(p)
			if !equalResult(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// equalResult treats nil and empty slices alike: callers only range over them.
func equalResult(a, b Result) bool {
	return slices.Equal(a.Clusters, b.Clusters) && slices.Equal(a.Ready, b.Ready) && slices.Equal(a.Unknown, b.Unknown)
}

func TestFromUnstructuredKeepsPresence(t *testing.T) {
	cases := []struct {
		manifest string
		want     Placement
	}{
		{`spec: {placement: {clusters: []}}`, Placement{Clusters: []string{}, HasClusters: true}},
		{`spec: {placement: {clusters: [{name: a}, {name: b}]}}`, Placement{Clusters: []string{"a", "b"}, HasClusters: true}},
		{`spec: {placement: {}}`, Placement{}},
	}
	for _, tc := range cases {
		got, err := FromUnstructured(object(t, tc.manifest))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.manifest, got, tc.want)
		}
	}
}

func TestFromUnstructuredErrors(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		want     string
	}{
		{"spec not an object", `spec: 3`, "spec: expected an object, got a number"},
		{"placement not an object", `spec: {placement: [a]}`, "spec.placement: expected an object, got a list"},
		{"clusters not a list", `spec: {placement: {clusters: c1}}`, "spec.placement.clusters: expected a list, got a string"},
		{"cluster not an object", `spec: {placement: {clusters: [{name: a}, c1]}}`, "spec.placement.clusters[1]: expected an object, got a string"},
		{"cluster without name", `spec: {placement: {clusters: [{}]}}`, "spec.placement.clusters[0].name: expected a non-empty string, got null"},
		{"cluster with empty name", `spec: {placement: {clusters: [{name: ""}]}}`, `spec.placement.clusters[0].name: expected a non-empty string, got ""`},
		{"cluster name a number", `spec: {placement: {clusters: [{name: 7}]}}`, "spec.placement.clusters[0].name: expected a non-empty string, got a number"},
		{"selector not an object", `spec: {placement: {clusterSelector: all}}`, "spec.placement.clusterSelector: expected an object, got a string"},
		{"matchLabels not an object", `spec: {placement: {clusterSelector: {matchLabels: [a]}}}`, "spec.placement.clusterSelector.matchLabels: expected an object, got a list"},
		{"matchLabels value not a string", `spec: {placement: {clusterSelector: {matchLabels: {a: 1}}}}`, "spec.placement.clusterSelector.matchLabels[a]: expected a string, got a number"},
		{"invalid label key", `spec: {placement: {clusterSelector: {matchLabels: {"bad key": x}}}}`, "spec.placement.clusterSelector.matchLabels[bad key]: "},
		{"invalid label value", `spec: {placement: {clusterSelector: {matchLabels: {k: "-x-"}}}}`, "spec.placement.clusterSelector.matchLabels[k]: "},
		{"matchExpressions not a list", `spec: {placement: {clusterSelector: {matchExpressions: {}}}}`, "spec.placement.clusterSelector.matchExpressions: expected a list, got an object"},
		{"expression not an object", `spec: {placement: {clusterSelector: {matchExpressions: [x]}}}`, "spec.placement.clusterSelector.matchExpressions[0]: expected an object, got a string"},
		{"expression without key", `spec: {placement: {clusterSelector: {matchExpressions: [{operator: Exists}]}}}`, "spec.placement.clusterSelector.matchExpressions[0].key: expected a string, got null"},
		{"expression without operator", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a}]}}}`, "spec.placement.clusterSelector.matchExpressions[0].operator: expected a string, got null"},
		{"unknown operator", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: Equals, values: [b]}]}}}`, `spec.placement.clusterSelector.matchExpressions[0].operator: "Equals" is not one of In, NotIn, Exists, DoesNotExist`},
		{"values not a list", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: In, values: b}]}}}`, "spec.placement.clusterSelector.matchExpressions[0].values: expected a list, got a string"},
		{"value not a string", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: In, values: [1]}]}}}`, "spec.placement.clusterSelector.matchExpressions[0].values[0]: expected a string, got a number"},
		{"In without values", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: In}]}}}`, "spec.placement.clusterSelector.matchExpressions[0]: values: Invalid value"},
		{"Exists with values", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}}`, "spec.placement.clusterSelector.matchExpressions[0]: values: Invalid value"},
		{"second expression is named", `spec: {placement: {clusterSelector: {matchExpressions: [{key: a, operator: Exists}, {key: b, operator: Nope}]}}}`, "matchExpressions[1].operator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromUnstructured(object(t, tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSelectNamespaced(t *testing.T) {
	set := NewClusterSet(candidates)
	all := `spec: {placement: {clusterSelector: {}}}`
	cases := []struct {
		name      string
		obj       string
		namespace string
		want      Result
	}{
		{"namespace restricts the object", all, `spec: {placement: {clusters: [{name: c1}, {name: c2}]}}`,
			Result{Clusters: []string{"c1", "c2"}, Ready: []string{"c1"}}},
		{"object restricts the namespace", `spec: {placement: {clusters: [{name: c3}]}}`, all,
			Result{Clusters: []string{"c3"}, Ready: []string{"c3"}}},
		{"disjoint placements place nowhere", `spec: {placement: {clusters: [{name: c3}]}}`,
			`spec: {placement: {clusters: [{name: c1}]}}`, Result{}},
		{"namespace without placement places nowhere", all, `spec: {}`, Result{}},
		{"namespace selector intersects", all, `spec: {placement: {clusterSelector: {matchLabels: {region: us}}}}`,
			Result{Clusters: []string{"c2", "c3"}, Ready: []string{"c3"}}},
		{"long namespace list", all,
			`spec: {placement: {clusters: [{name: n1}, {name: n2}, {name: n3}, {name: n4}, {name: n5}, {name: n6}, {name: n7}, {name: c3}, {name: n8}, {name: c1}]}}`,
			Result{Clusters: []string{"c1", "c3"}, Ready: []string{"c1", "c3"}}},
		{"object's unknown names are reported even when the namespace excludes them",
			`spec: {placement: {clusters: [{name: c1}, {name: nope}]}}`, `spec: {placement: {clusters: [{name: c2}, {name: other}]}}`,
			Result{Unknown: []string{"nope"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := FromUnstructured(object(t, tc.obj))
			if err != nil {
				t.Fatal(err)
			}
			ns, err := FromUnstructured(object(t, tc.namespace))
			if err != nil {
				t.Fatal(err)
			}
			got := set.SelectNamespaced(obj, ns)
			if !equalResult(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewClusterSetFirstDuplicateWins(t *testing.T) {
	set := NewClusterSet([]Cluster{{Name: "b"}, {Name: "a", Ready: true}, {Name: "a"}})
	got := set.Select(everything(t))
	want := Result{Clusters: []string{"a", "b"}, Ready: []string{"a"}}
	if !equalResult(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestNewClusterSetDoesNotReorderInput(t *testing.T) {
	in := slices.Clone(candidates)
	NewClusterSet(in)
	if !reflect.DeepEqual(in, candidates) {
		t.Errorf("input reordered: %v", in)
	}
}

func everything(t testing.TB) Placement {
	p, err := FromUnstructured(object(t, `spec: {placement: {clusterSelector: {}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIgnoredNamespace(t *testing.T) {
	cases := []struct {
		namespace, kubefedNamespace string
		want                        bool
	}{
		{"kube-system", "kube-federation-system", true},
		{"kube-public", "kube-federation-system", true},
		{"default", "kube-federation-system", true},
		{"kube-federation-system", "kube-federation-system", true},
		{"my-fed", "my-fed", true},
		{"kube-federation-system", "my-fed", false},
		{"demo", "kube-federation-system", false},
		{"kube-node-lease", "kube-federation-system", false},
	}
	for _, tc := range cases {
		if got := IgnoredNamespace(tc.namespace, tc.kubefedNamespace); got != tc.want {
			t.Errorf("IgnoredNamespace(%q, %q) = %v, want %v", tc.namespace, tc.kubefedNamespace, got, tc.want)
		}
	}
}

func TestValidateFederatedNamespace(t *testing.T) {
	if err := ValidateFederatedNamespace("demo", "demo"); err != nil {
		t.Errorf("demo/demo: %v", err)
	}
	err := ValidateFederatedNamespace("other", "demo")
	if err == nil || !strings.Contains(err.Error(), "demo/other") {
		t.Errorf("demo/other: got %v, want an error naming demo/other", err)
	}
}

func FuzzFromUnstructured(f *testing.F) {
	for _, s := range []string{
		`{"spec":{"placement":{"clusters":[{"name":"c1"},{"name":"x"}]}}}`,
		`{"spec":{"placement":{"clusters":[]}}}`,
		`{"spec":{"placement":{"clusterSelector":{}}}}`,
		`{"spec":{"placement":{"clusterSelector":{"matchLabels":{"region":"us"},"matchExpressions":[{"key":"tier","operator":"In","values":["gold"]}]}}}}`,
		`{"spec":{"placement":{"clusterSelector":{"matchExpressions":[{"key":"tier","operator":"Exists","values":[1]}]}}}}`,
		`{"spec":[]}`,
	} {
		f.Add(s)
	}
	set := NewClusterSet(candidates)
	f.Fuzz(func(t *testing.T, s string) {
		// The fuzzer minimizes new inputs in time quadratic in their length;
		// longer inputs add no coverage.
		if len(s) > 1024 {
			return
		}
		var obj map[string]any
		if err := utiljson.Unmarshal([]byte(s), &obj); err != nil {
			return
		}
		p, err := FromUnstructured(obj)
		if err != nil {
			return
		}
		r := set.Select(p)
		if !slices.IsSorted(r.Clusters) || !slices.IsSorted(r.Unknown) {
			t.Fatalf("unsorted result %+v", r)
		}
		if !p.HasClusters {
			if len(r.Unknown) != 0 {
				t.Fatalf("selector placement reported unknown clusters %v", r.Unknown)
			}
			return
		}
		for _, name := range p.Clusters {
			if !slices.Contains(r.Clusters, name) && !slices.Contains(r.Unknown, name) {
				t.Fatalf("listed cluster %q neither placed nor unknown: %+v", name, r)
			}
		}
		if len(r.Clusters)+len(r.Unknown) > len(p.Clusters) {
			t.Fatalf("more results than listed clusters: %+v from %v", r, p.Clusters)
		}
	})
}

func benchClusters(n int) ClusterSet {
	cs := make([]Cluster, n)
	for i := range cs {
		region := []string{"eu", "us", "ap"}[i%3]
		cs[i] = Cluster{Name: fmt.Sprintf("cluster-%03d", i), Labels: map[string]string{"region": region, "env": "prod"}, Ready: i%10 != 0}
	}
	return NewClusterSet(cs)
}

func BenchmarkSelect(b *testing.B) {
	set := benchClusters(100)
	for _, bc := range []struct{ name, manifest string }{
		{"selector-100-clusters", `spec: {placement: {clusterSelector: {matchLabels: {region: eu, env: prod}}}}`},
		{"all-100-clusters", `spec: {placement: {clusterSelector: {}}}`},
		{"list-3-of-100-clusters", `spec: {placement: {clusters: [{name: cluster-042}, {name: cluster-007}, {name: cluster-099}]}}`},
	} {
		p, err := FromUnstructured(object(b, bc.manifest))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set.Select(p)
			}
		})
	}
	obj, _ := FromUnstructured(object(b, `spec: {placement: {clusterSelector: {}}}`))
	ns, _ := FromUnstructured(object(b, `spec: {placement: {clusterSelector: {matchLabels: {region: us}}}}`))
	b.Run("namespaced-100-clusters", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			set.SelectNamespaced(obj, ns)
		}
	})
}

func BenchmarkFromUnstructured(b *testing.B) {
	for _, bc := range []struct{ name, manifest string }{
		{"selector", `spec: {placement: {clusterSelector: {matchLabels: {region: eu}, matchExpressions: [{key: env, operator: In, values: [prod, staging]}]}}}`},
		{"list", `spec: {placement: {clusters: [{name: c1}, {name: c2}, {name: c3}]}}`},
	} {
		obj := object(b, bc.manifest)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromUnstructured(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
