package kubefedctl

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestResolveTypeNames(t *testing.T) {
	h := newTypesHost(t)
	idx, err := discoverAPI(context.Background(), h.cluster)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, version string
		want          string // group/version/resource
		err           string
		notFound      bool
	}{
		{name: "deployments.apps", want: "apps/v1/deployments"},
		{name: "Deployment", want: "apps/v1/deployments"},
		{name: "deployment", want: "apps/v1/deployments"},
		{name: "deployments", want: "apps/v1/deployments"},
		{name: "deploy", want: "apps/v1/deployments"},
		{name: "DEPLOY", want: "apps/v1/deployments"},
		{name: "deployment.apps", want: "apps/v1/deployments"},
		{name: "deployments.v1.apps", want: "apps/v1/deployments"},
		{name: "cm", want: "/v1/configmaps"},
		{name: "ConfigMap", want: "/v1/configmaps"},
		{name: "configmaps", want: "/v1/configmaps"},
		{name: "ns", want: "/v1/namespaces"},
		// Subresources are not types.
		{name: "pods/status", err: "serves no API type", notFound: true},
		// The core group wins a tie...
		{name: "events", want: "/v1/events"},
		{name: "Event", want: "/v1/events"},
		{name: "events.events.k8s.io", want: "events.k8s.io/v1/events"},
		// ...but between other groups the name is ambiguous.
		{name: "widgets", err: `"widgets" is ambiguous: it names widgets.example.com, widgets.other.example.org; use the plural.group form`},
		{name: "Widget", err: "is ambiguous"},
		{name: "wd", want: "example.com/v1/widgets"},
		{name: "widgets.example.com", want: "example.com/v1/widgets"},
		{name: "widgets.example.com", version: "v1beta1", want: "example.com/v1beta1/widgets"},
		{name: "widgets.example.com", version: "v2", err: `serves widgets.example.com in version v1, v1beta1, not "v2"`},
		{name: "widgets.other.example.org", want: "other.example.org/v1/widgets"},
		// A resource missing from its group's preferred version.
		{name: "gadgets", want: "legacy.example.com/v1/gadgets"},
		{name: "sprockets", want: "legacy.example.com/v2/sprockets"},
		{name: "nosuchthings", err: `serves no API type named "nosuchthings"`, notFound: true},
		{name: "deployments.nosuch.io", err: "serves no API type", notFound: true},
		{name: "", err: "required"},
	}
	for _, tc := range cases {
		got, err := idx.resolve(tc.name, tc.version)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("resolve(%q, %q): got %v, want error containing %q", tc.name, tc.version, err, tc.err)
			}
			if errors.Is(err, errTypeNotFound) != tc.notFound {
				t.Errorf("resolve(%q): errTypeNotFound is %v, want %v", tc.name, errors.Is(err, errTypeNotFound), tc.notFound)
			}
			continue
		}
		if err != nil {
			t.Errorf("resolve(%q, %q): %v", tc.name, tc.version, err)
			continue
		}
		if s := got.gvr.Group + "/" + got.gvr.Version + "/" + got.gvr.Resource; s != tc.want {
			t.Errorf("resolve(%q, %q) = %s, want %s", tc.name, tc.version, s, tc.want)
		}
	}
}

func TestFederatable(t *testing.T) {
	h := newTypesHost(t)
	idx, err := discoverAPI(context.Background(), h.cluster)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"deployments.apps":          "",
		"configmaps":                "",
		"namespaces":                "",
		"endpoints":                 "",
		"widgets.example.com":       "",
		"events":                    "Events record what happened in one cluster",
		"events.events.k8s.io":      "Events record what happened in one cluster",
		"bindings":                  "a Binding assigns a pod to a node",
		"componentstatuses":         "ComponentStatuses report on one cluster",
		"nodes":                     "a Node is a machine of one cluster",
		"leases":                    "Leases coordinate",
		"tokenreviews":              "does not support get, list, watch, update, delete",
		"federatedtypeconfigs":      "is a KubeFed type (group core.kubefed.io)",
		"kubefedclusters":           "is a KubeFed type",
		"controllerrevisions":       "kept by each cluster's controllers",
		"customresourcedefinitions": "",
	}
	for name, want := range cases {
		typ, err := idx.resolve(name, "")
		if err != nil {
			t.Fatalf("resolve %s: %v", name, err)
		}
		err = federatable(typ)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want error containing %q", name, err, want)
		}
	}
}
