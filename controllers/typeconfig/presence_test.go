package typeconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

var (
	deployments = corev1beta1.APIResource{Group: "apps", Version: "v1", Kind: "Deployment", PluralName: "deployments", Scope: corev1beta1.NamespaceScope}
	configMaps  = corev1beta1.APIResource{Version: "v1", Kind: "ConfigMap", PluralName: "configmaps", Scope: corev1beta1.NamespaceScope}
	widgets     = corev1beta1.APIResource{Group: "example.com", Version: "v1", Kind: "Widget", PluralName: "widgets", Scope: corev1beta1.ClusterScope}
)

// discovered is what a typical member's discovery reports.
func discovered() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true},
			{Name: "pods", Kind: "Pod", Namespaced: true},
			{Name: "pods/status", Kind: "Pod", Namespaced: true},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/scale", Kind: "Scale", Namespaced: true},
		}},
	}
}

func TestMemberAPIsServes(t *testing.T) {
	apis, err := newMemberAPIs(discovered(), map[schema.GroupVersion]error{
		{Group: "example.com", Version: "v1"}: errors.New("service unavailable"),
	})
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*corev1beta1.APIResource)) corev1beta1.APIResource {
		r := deployments
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name    string
		target  corev1beta1.APIResource
		present bool
		unknown string
	}{
		{name: "named group", target: deployments, present: true},
		{name: "core group", target: configMaps, present: true},
		{name: "other version", target: with(func(r *corev1beta1.APIResource) { r.Version = "v1beta1" })},
		{name: "unknown group", target: with(func(r *corev1beta1.APIResource) { r.Group = "apps.example.com" })},
		{name: "other plural", target: with(func(r *corev1beta1.APIResource) { r.PluralName = "deploys" })},
		{name: "same plural, other kind", target: with(func(r *corev1beta1.APIResource) { r.Kind = "Deploy" })},
		{name: "same plural, other scope", target: with(func(r *corev1beta1.APIResource) { r.Scope = corev1beta1.ClusterScope })},
		{name: "subresource is no type", target: with(func(r *corev1beta1.APIResource) { r.PluralName = "deployments/scale"; r.Kind = "Scale" })},
		{name: "failed group version", target: widgets, unknown: "discovery of example.com/v1 failed: service unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			present, err := apis.serves(tc.target)
			if present != tc.present {
				t.Errorf("present = %v, want %v", present, tc.present)
			}
			switch {
			case tc.unknown == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.unknown != "" && (err == nil || err.Error() != tc.unknown):
				t.Errorf("error = %v, want %q", err, tc.unknown)
			}
		})
	}
}

func TestNewMemberAPIsRejectsBadGroupVersion(t *testing.T) {
	_, err := newMemberAPIs([]*metav1.APIResourceList{{GroupVersion: "a/b/c"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `"a/b/c"`) {
		t.Fatalf("error = %v", err)
	}
}

func TestMemberAPIsEqual(t *testing.T) {
	a, _ := newMemberAPIs(discovered(), nil)
	b, _ := newMemberAPIs(discovered(), nil)
	withWidgets := append(discovered(), &metav1.APIResourceList{GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget"}}})
	c, _ := newMemberAPIs(withWidgets, nil)
	d, _ := newMemberAPIs(discovered(), map[schema.GroupVersion]error{{Group: "example.com", Version: "v1"}: errors.New("down")})
	var none *memberAPIs
	for _, tc := range []struct {
		name string
		x, y *memberAPIs
		want bool
	}{
		{"same answers", a, b, true},
		{"a new type", a, c, false},
		{"a failed group", a, d, false},
		{"nil and an answer", none, a, false},
		{"an answer and nil", a, none, false},
		{"nil and nil", none, none, true},
	} {
		if got := tc.x.equal(tc.y); got != tc.want {
			t.Errorf("%s: equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSummarizePresence(t *testing.T) {
	present := func(c string) corev1beta1.TargetTypeClusterStatus {
		return corev1beta1.TargetTypeClusterStatus{ClusterName: c, Status: corev1beta1.TargetTypePresent}
	}
	absent := func(c string) corev1beta1.TargetTypeClusterStatus {
		return corev1beta1.TargetTypeClusterStatus{ClusterName: c, Status: corev1beta1.TargetTypeNotPresent}
	}
	for _, tc := range []struct {
		name  string
		found []clusterPresence
		want  targetPresence
	}{
		{name: "no ready member reports nothing", want: targetPresence{}},
		{
			name:  "present everywhere, sorted by cluster",
			found: []clusterPresence{{cluster: "member2", present: true}, {cluster: "host", present: true}, {cluster: "member1", present: true}},
			want: targetPresence{
				clusters: []corev1beta1.TargetTypeClusterStatus{present("host"), present("member1"), present("member2")},
				overall:  PresentInAllClusters,
			},
		},
		{
			name:  "missing in one",
			found: []clusterPresence{{cluster: "member2"}, {cluster: "member1", present: true}},
			want: targetPresence{
				clusters: []corev1beta1.TargetTypeClusterStatus{present("member1"), absent("member2")},
				overall:  NotPresentInAllClusters,
				missing:  []string{"member2"},
			},
		},
		{
			name:  "a member that could not be asked counts as missing",
			found: []clusterPresence{{cluster: "b", problem: "discovery has not answered yet"}, {cluster: "a"}},
			want: targetPresence{
				clusters: []corev1beta1.TargetTypeClusterStatus{absent("a"), absent("b")},
				overall:  NotPresentInAllClusters,
				missing:  []string{"a", "b"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarizePresence(tc.found)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(reportedMissing(got.clusters), tc.want.missing) {
				t.Errorf("reportedMissing = %v, want %v", reportedMissing(got.clusters), tc.want.missing)
			}
		})
	}
}

func TestNewlyMissing(t *testing.T) {
	status := func(missing ...string) []corev1beta1.TargetTypeClusterStatus {
		out := []corev1beta1.TargetTypeClusterStatus{{ClusterName: "host", Status: corev1beta1.TargetTypePresent}}
		for _, m := range missing {
			out = append(out, corev1beta1.TargetTypeClusterStatus{ClusterName: m, Status: corev1beta1.TargetTypeNotPresent})
		}
		return out
	}
	now := func(missing ...string) targetPresence {
		found := []clusterPresence{{cluster: "host", present: true}}
		for _, m := range missing {
			found = append(found, clusterPresence{cluster: m})
		}
		return summarizePresence(found)
	}
	for _, tc := range []struct {
		name     string
		now      targetPresence
		previous []corev1beta1.TargetTypeClusterStatus
		want     bool
	}{
		{"first report of a missing member", now("member2"), nil, true},
		{"present everywhere", now(), status(), false},
		{"recovered", now(), status("member2"), false},
		{"still missing in the same member", now("member2"), status("member2"), false},
		{"missing in another member too", now("member1", "member2"), status("member2"), true},
		{"one of two recovered", now("member2"), status("member1", "member2"), false},
		{"a member not ready before, missing now", now("member3"), status(), true},
		{"no ready member", now(), nil, false},
	} {
		if got := tc.now.newlyMissing(tc.previous); got != tc.want {
			t.Errorf("%s: newlyMissing = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMissingMessage(t *testing.T) {
	msg := missingMessage(deployments, []clusterPresence{
		{cluster: "member2", problem: "discovery failed: timeout"},
		{cluster: "host", present: true},
		{cluster: "member1"},
	})
	want := "target type apps/v1 Deployment (deployments) is not served by member clusters member1, member2 (discovery failed: timeout); " +
		"its objects cannot be propagated there"
	if msg != want {
		t.Errorf("message\n%s\nwant\n%s", msg, want)
	}
	msg = missingMessage(configMaps, []clusterPresence{{cluster: "member1"}})
	if !strings.Contains(msg, "v1 ConfigMap (configmaps) is not served by member cluster member1;") {
		t.Errorf("message %q", msg)
	}
}

// seriesOf reads the targetMissing series of a type, by cluster.
func seriesOf(t *testing.T, typeConfig string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		targetMissing.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["federatedtypeconfig"] == typeConfig {
			out[labels["cluster"]] = d.GetGauge().GetValue()
		}
	}
	return out
}

func TestPublishPresence(t *testing.T) {
	const ftc = "widgets.test.example.com"
	publishPresence(ftc, []corev1beta1.TargetTypeClusterStatus{
		{ClusterName: "host", Status: corev1beta1.TargetTypePresent},
		{ClusterName: "member1", Status: corev1beta1.TargetTypeNotPresent},
		{ClusterName: "member2", Status: corev1beta1.TargetTypePresent},
	})
	if got, want := seriesOf(t, ftc), map[string]float64{"host": 0, "member1": 1, "member2": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}

	// member2 is no longer ready; member1 installed the type.
	publishPresence(ftc, []corev1beta1.TargetTypeClusterStatus{
		{ClusterName: "host", Status: corev1beta1.TargetTypePresent},
		{ClusterName: "member1", Status: corev1beta1.TargetTypePresent},
	})
	if got, want := seriesOf(t, ftc), map[string]float64{"host": 0, "member1": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}

	forgetPresence(ftc)
	if got := seriesOf(t, ftc); len(got) != 0 {
		t.Errorf("series left after the type was deleted: %v", got)
	}
}
