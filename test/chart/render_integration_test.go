//go:build integration

package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
	"github.com/kubefed-io/kubefed/test/framework"
)

const renderNamespace = "fed-system"

var scopes = []corev1beta1.Scope{corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped}

func TestChartLints(t *testing.T) {
	h := newHelm(t)
	for _, scope := range scopes {
		if out, err := h.run("lint", "--strict", chartDir, "--set", "global.scope="+string(scope)); err != nil {
			t.Errorf("scope %s: %v", scope, err)
		} else if !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("scope %s: %s", scope, out)
		}
	}
}

// TestChartRejectsInvalidValues proves values.schema.json stops mistakes
// before anything reaches a cluster.
func TestChartRejectsInvalidValues(t *testing.T) {
	h := newHelm(t)
	for set, want := range map[string]string{
		"global.scope=Everything":                                  "/global/scope",
		"kubefedConfig.clusterHealthCheck.period=soon":             "/kubefedConfig/clusterHealthCheck/period",
		"kubefedConfig.syncController.adoptResources=Sometimes":    "/kubefedConfig/syncController/adoptResources",
		"kubefedConfig.featureGates.Teleport=Enabled":              "Teleport",
		"kubefedConfig.statusController.maxConcurrentReconciles=0": "/kubefedConfig/statusController/maxConcurrentReconciles",
		"controllerManager.leaseFlowSchema.matchingPrecedence=0":   "/controllerManager/leaseFlowSchema/matchingPrecedence",
		// A typo would install every type, or crash-loop the controllers
		// with installOnFirstStart.
		"defaultTypes.exclude[0]=jobs": "/defaultTypes/exclude/0",
		// With the chart's KubeFedConfig, the first start is never seen.
		"defaultTypes.installOnFirstStart=true": "defaultTypes.installOnFirstStart needs kubefedConfig.create=false",
		// Both would create the default types; the second would fail.
		"defaultTypes.installOnFirstStart=true,kubefedConfig.create=false": "defaultTypes.installOnFirstStart needs defaultTypes.install=false",
		// KubeFed's chart values would install with none of them in effect.
		"controllermanager.clusterHealthCheckPeriod=30s": "controllermanager: these are KubeFed's chart values",
	} {
		_, err := h.run("template", "kubefed", chartDir, "--set", set)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: got %v, want an error naming %s", set, err, want)
		}
	}
}

// TestControllerManagerDeployment checks what a highly available, hardened
// controller-manager needs from the Deployment.
func TestControllerManagerDeployment(t *testing.T) {
	h := newHelm(t)
	for _, scope := range scopes {
		t.Run(string(scope), func(t *testing.T) {
			objs := h.template(t, renderNamespace, nil, "global.scope="+string(scope))
			var d appsv1.Deployment
			into(t, only(t, objs, "Deployment"), &d)
			if r := d.Spec.Replicas; r == nil || *r != 2 {
				t.Errorf("replicas %v, want 2", r)
			}
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers", len(pod.Containers))
			}
			c := pod.Containers[0]
			for _, arg := range []string{
				"--kubefed-namespace=" + renderNamespace, "--scope=" + string(scope),
				"--leader-elect=true", "--health-addr=:8081", "--metrics-addr=:8080",
			} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("args %v lack %s", c.Args, arg)
				}
			}
			probe := func(name string, p *corev1.Probe, path string) {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "health" {
					t.Errorf("%s probe %+v, want GET %s on port health", name, p, path)
				}
			}
			probe("liveness", c.LivenessProbe, "/healthz")
			probe("readiness", c.ReadinessProbe, "/readyz")
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if ports["health"] != 8081 || ports["metrics"] != 8080 {
				t.Errorf("ports %v", ports)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources %+v", c.Resources)
			}
			psc, sc := pod.SecurityContext, c.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Errorf("pod securityContext %+v does not run as non-root", psc)
			}
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("container securityContext %+v", sc)
			}
			var sa corev1.ServiceAccount
			into(t, only(t, objs, "ServiceAccount"), &sa)
			if pod.ServiceAccountName != sa.Name || sa.Namespace != renderNamespace {
				t.Errorf("pod runs as %q, the chart's ServiceAccount is %s/%s", pod.ServiceAccountName, sa.Namespace, sa.Name)
			}
			var svc corev1.Service
			into(t, only(t, objs, "Service"), &svc)
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "metrics" ||
				!reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
				t.Errorf("metrics Service %+v does not select the controller-manager's metrics port", svc.Spec)
			}
			pdb := only(t, objs, "PodDisruptionBudget")
			if v, _, _ := unstructured.NestedInt64(pdb.Object, "spec", "minAvailable"); v != 1 {
				t.Errorf("PodDisruptionBudget minAvailable %d", v)
			}
		})
	}
}

// TestScaleOutValues: scaleOut makes every replica active, named by its Pod,
// with the rights to the shard Leases; off, neither appears.
func TestScaleOutValues(t *testing.T) {
	h := newHelm(t)
	for _, on := range []bool{false, true} {
		objs := h.template(t, renderNamespace, nil, fmt.Sprintf("controllerManager.scaleOut=%t", on))
		var d appsv1.Deployment
		into(t, only(t, objs, "Deployment"), &d)
		c := d.Spec.Template.Spec.Containers[0]
		hasArgs := slices.Contains(c.Args, "--scale-out") && slices.Contains(c.Args, "--replica-id=$(POD_NAME)")
		hasEnv := len(c.Env) == 2 && c.Env[0].Name == "POD_NAME" && c.Env[0].ValueFrom != nil &&
			c.Env[0].ValueFrom.FieldRef != nil && c.Env[0].ValueFrom.FieldRef.FieldPath == "metadata.name"
		// The replicas reach each other at their Pods' IPs, on the peer port.
		hasPeers := slices.Contains(c.Args, "--peer-bind-address=:8444") && slices.Contains(c.Args, "--peer-advertise-host=$(POD_IP)") &&
			len(c.Env) == 2 && c.Env[1].Name == "POD_IP" && c.Env[1].ValueFrom != nil && c.Env[1].ValueFrom.FieldRef != nil &&
			c.Env[1].ValueFrom.FieldRef.FieldPath == "status.podIP" &&
			slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "peers" && p.ContainerPort == 8444 })
		if hasArgs != on || hasEnv != on || hasPeers != on {
			t.Errorf("scaleOut=%t: args %v, env %+v, ports %+v", on, c.Args, c.Env, c.Ports)
		}
		listsLeases := false
		for _, o := range objs {
			if o.GetKind() != "Role" {
				continue
			}
			var r rbacv1.Role
			into(t, o, &r)
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "leases") && slices.Contains(rule.Verbs, "list") && len(rule.ResourceNames) == 0 {
					listsLeases = true
				}
			}
		}
		if listsLeases != on {
			t.Errorf("scaleOut=%t: a Role lists Leases: %t", on, listsLeases)
		}
	}
	// peerPort 0: each replica writes its own status entries.
	var d appsv1.Deployment
	into(t, only(t, h.template(t, renderNamespace, nil, "controllerManager.scaleOut=true", "controllerManager.peerPort=0"), "Deployment"), &d)
	c := d.Spec.Template.Spec.Containers[0]
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--peer-") }) || len(c.Env) != 1 ||
		slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "peers" }) {
		t.Errorf("peerPort=0: args %v, env %+v, ports %+v", c.Args, c.Env, c.Ports)
	}
}

// TestLeaseFlowSchemaValues: by default the ServiceAccount's Lease
// requests in its namespace get a FlowSchema of their own; it can be left
// out. TestChartInstall proves the API server classifies them by it.
func TestLeaseFlowSchemaValues(t *testing.T) {
	h := newHelm(t)
	objs := h.template(t, renderNamespace, nil)
	var fs flowcontrolv1.FlowSchema
	into(t, only(t, objs, "FlowSchema"), &fs)
	if fs.Spec.PriorityLevelConfiguration.Name != "leader-election" || len(fs.Spec.Rules) != 1 {
		t.Fatalf("FlowSchema spec %+v", fs.Spec)
	}
	rule := fs.Spec.Rules[0]
	// Every ServiceAccount of the namespace: the controller-manager's and
	// the Pull-mode agents' (kubefed-agent-<cluster>, made by join).
	if len(rule.Subjects) != 1 || rule.Subjects[0].ServiceAccount == nil ||
		*rule.Subjects[0].ServiceAccount != (flowcontrolv1.ServiceAccountSubject{Name: "*", Namespace: renderNamespace}) {
		t.Errorf("subjects %+v, want every ServiceAccount of %s", rule.Subjects, renderNamespace)
	}
	if len(rule.ResourceRules) != 1 || !slices.Equal(rule.ResourceRules[0].Resources, []string{"leases"}) ||
		!slices.Equal(rule.ResourceRules[0].Namespaces, []string{renderNamespace}) {
		t.Errorf("resource rules %+v, want the Leases of %s", rule.ResourceRules, renderNamespace)
	}
	if got := find(h.template(t, renderNamespace, nil, "controllerManager.leaseFlowSchema.enabled=false"), "FlowSchema"); len(got) != 0 {
		t.Errorf("leaseFlowSchema.enabled=false rendered %d FlowSchemas", len(got))
	}
}

// TestRBACScope checks the shape of the RBAC per scope: Secrets and the
// control plane's own objects only in its namespace, the federation's
// objects cluster-wide only with Cluster scope. The rights themselves are
// proven against a real apiserver by TestChartInstall.
func TestRBACScope(t *testing.T) {
	h := newHelm(t)
	for _, scope := range scopes {
		t.Run(string(scope), func(t *testing.T) {
			objs := h.template(t, renderNamespace, nil, "global.scope="+string(scope))
			var role rbacv1.Role
			var clusterRole rbacv1.ClusterRole
			into(t, only(t, objs, "Role"), &role)
			into(t, only(t, objs, "ClusterRole"), &clusterRole)
			var rb rbacv1.RoleBinding
			var crb rbacv1.ClusterRoleBinding
			into(t, only(t, objs, "RoleBinding"), &rb)
			into(t, only(t, objs, "ClusterRoleBinding"), &crb)
			sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "kubefed-controller-manager", Namespace: renderNamespace}
			if rb.RoleRef.Name != role.Name || crb.RoleRef.Name != clusterRole.Name ||
				!slices.Equal(rb.Subjects, []rbacv1.Subject{sa}) || !slices.Equal(crb.Subjects, []rbacv1.Subject{sa}) {
				t.Errorf("bindings %+v / %+v do not bind the roles to %+v", rb, crb, sa)
			}
			if !strings.Contains(clusterRole.Name, renderNamespace) {
				t.Errorf("ClusterRole %q does not carry the namespace; two releases would collide", clusterRole.Name)
			}

			grants := func(rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
				for _, r := range rules {
					if slices.Contains(r.APIGroups, group) && (slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
						(len(verbs) == 0 || slices.ContainsFunc(verbs, func(v string) bool { return slices.Contains(r.Verbs, v) })) {
						return true
					}
				}
				return false
			}
			for _, r := range append(slices.Clone(role.Rules), clusterRole.Rules...) {
				if slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") ||
					(slices.Contains(r.Resources, "*") && !slices.Equal(r.APIGroups, []string{"types.kubefed.io"})) {
					t.Errorf("wildcard rule %+v", r)
				}
				for _, v := range []string{"escalate", "bind", "impersonate", "deletecollection"} {
					if slices.Contains(r.Verbs, v) {
						t.Errorf("rule %+v grants %s", r, v)
					}
				}
			}
			for _, res := range []string{"secrets", "leases"} {
				if grants(clusterRole.Rules, "", res) || grants(clusterRole.Rules, "coordination.k8s.io", res) {
					t.Errorf("the ClusterRole grants %s beyond the namespace", res)
				}
			}
			federation := []struct{ group, resource string }{
				{"types.kubefed.io", "federateddeployments"},
				{"scheduling.kubefed.io", "replicaschedulingpreferences"},
				{"multiclusterdns.kubefed.io", "servicednsrecords"},
				{"multiclusterdns.kubefed.io", "dnsendpoints"},
			}
			// Watched and updated where the federation's objects are (the
			// Role's dry-run creates of federated objects aside).
			for _, f := range federation {
				inRole, inClusterRole := grants(role.Rules, f.group, f.resource, "watch", "update"), grants(clusterRole.Rules, f.group, f.resource, "watch", "update")
				if scope == corev1beta1.ClusterScoped && (inRole || !inClusterRole) {
					t.Errorf("Cluster scope: %s.%s should be in the ClusterRole only (Role %v, ClusterRole %v)", f.resource, f.group, inRole, inClusterRole)
				}
				if scope == corev1beta1.NamespaceScoped && (!inRole || inClusterRole) {
					t.Errorf("Namespaced scope: %s.%s should be in the Role only (Role %v, ClusterRole %v)", f.resource, f.group, inRole, inClusterRole)
				}
			}
			if scope == corev1beta1.NamespaceScoped {
				want := []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"kube-system"}, Verbs: []string{"get"}},
					{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get"}},
				}
				if !reflect.DeepEqual(clusterRole.Rules, want) {
					t.Errorf("Namespaced scope: ClusterRole rules %+v, want only the reads %+v", clusterRole.Rules, want)
				}
			}
		})
	}

	// Federated types enabled in another group are granted when listed.
	objs := h.template(t, renderNamespace, nil, "rbac.extraFederatedGroups[0]=fed.example.com")
	var clusterRole rbacv1.ClusterRole
	into(t, only(t, objs, "ClusterRole"), &clusterRole)
	found := false
	for _, r := range clusterRole.Rules {
		found = found || slices.Equal(r.APIGroups, []string{"types.kubefed.io", "fed.example.com"})
	}
	if !found {
		t.Errorf("rbac.extraFederatedGroups not granted: %+v", clusterRole.Rules)
	}
}

// schemaLeaves maps the path of every leaf field under a KubeFedConfig's
// spec, as the CRD the chart installs defines it, to its schema.
func schemaLeaves(t *testing.T) map[string]apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "crds", "core.kubefed.io_kubefedconfigs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	leaves := map[string]apiextensionsv1.JSONSchemaProps{}
	var walk func(path string, s apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
		if len(s.Properties) == 0 {
			leaves[path] = s
			return
		}
		for name, p := range s.Properties {
			walk(strings.TrimPrefix(path+"."+name, "."), p)
		}
	}
	walk("", crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"])
	return leaves
}

// knobOverrides sets every KubeFedConfig knob to a valid value other than
// its default, by its path under spec.
var knobOverrides = map[string]string{
	"controllerDuration.availableDelay":             "21s",
	"controllerDuration.unavailableDelay":           "61s",
	"leaderElect.leaseDuration":                     "30s",
	"leaderElect.renewDeadline":                     "20s",
	"leaderElect.retryPeriod":                       "4s",
	"leaderElect.resourceLock":                      "configmaps",
	"clusterHealthCheck.period":                     "11s",
	"clusterHealthCheck.failureThreshold":           "4",
	"clusterHealthCheck.successThreshold":           "2",
	"clusterHealthCheck.timeout":                    "4s",
	"syncController.maxConcurrentReconciles":        "17",
	"syncController.adoptResources":                 "Disabled",
	"syncController.notReadyClusterDeletionTimeout": "6m",
	"statusController.maxConcurrentReconciles":      "9",
}

// TestKubeFedConfigKnobs proves that every field of the KubeFedConfig
// schema is set from values.yaml: by default to the schema's default, and
// to any other value through --set. A field added to the API and not to
// the chart fails it.
func TestKubeFedConfigKnobs(t *testing.T) {
	h := newHelm(t)
	leaves := schemaLeaves(t)

	for _, scope := range scopes {
		objs := h.template(t, renderNamespace, nil, "global.scope="+string(scope))
		cfg := only(t, objs, "KubeFedConfig")
		if cfg.GetName() != corev1beta1.KubeFedConfigName || cfg.GetNamespace() != renderNamespace {
			t.Errorf("KubeFedConfig %s/%s, want %s/%s", cfg.GetNamespace(), cfg.GetName(), renderNamespace, corev1beta1.KubeFedConfigName)
		}
		for path, s := range leaves {
			got, found, err := unstructured.NestedFieldNoCopy(cfg.Object, append([]string{"spec"}, strings.Split(path, ".")...)...)
			switch {
			case err != nil || !found:
				t.Errorf("spec.%s is not rendered (%v); add it to values.yaml and templates/kubefedconfig.yaml", path, err)
			case path == "scope":
				if got != string(scope) {
					t.Errorf("spec.scope %v, want %s", got, scope)
				}
			case path == "featureGates":
				var gates []string
				for _, g := range got.([]any) {
					gate := g.(map[string]any)
					gates = append(gates, fmt.Sprint(gate["name"]))
					if gate["configuration"] != "Enabled" {
						t.Errorf("feature gate %v is not Enabled by default", gate)
					}
				}
				var known []string
				for _, e := range s.Items.Schema.Properties["name"].Enum {
					known = append(known, strings.Trim(string(e.Raw), `"`))
				}
				sort.Strings(known)
				if !slices.Equal(gates, known) {
					t.Errorf("feature gates %v, want every known gate %v", gates, known)
				}
			case s.Default == nil:
				t.Errorf("spec.%s has no schema default to compare with", path)
			default:
				want := strings.Trim(string(s.Default.Raw), `"`)
				if fmt.Sprint(got) != want {
					t.Errorf("spec.%s defaults to %v, the CRD to %s", path, got, want)
				}
			}
		}

		// The defaults are the control plane's own.
		var rendered corev1beta1.KubeFedConfig
		into(t, cfg, &rendered)
		got, err := kubefedconfig.Resolve(rendered.Spec)
		if err != nil {
			t.Fatalf("the rendered KubeFedConfig is invalid: %v", err)
		}
		want, err := kubefedconfig.Resolve(kubefedconfig.New(renderNamespace, scope).Spec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scope %s: chart settings\n%+v\ndiffer from the control plane's defaults\n%+v", scope, got, want)
		}
	}

	// Every knob is reachable from values.
	var pairs []string
	for path, v := range knobOverrides {
		if _, ok := leaves[path]; !ok {
			t.Errorf("knobOverrides has %s, which the schema lacks", path)
		}
		pairs = append(pairs, "kubefedConfig."+path+"="+v)
	}
	for path := range leaves {
		if _, ok := knobOverrides[path]; !ok && path != "scope" && path != "featureGates" {
			t.Errorf("spec.%s has no entry in knobOverrides", path)
		}
	}
	pairs = append(pairs, "kubefedConfig.featureGates.SchedulerPreferences=Disabled")
	cfg := only(t, h.template(t, renderNamespace, nil, pairs...), "KubeFedConfig")
	for path, v := range knobOverrides {
		got, _, _ := unstructured.NestedFieldNoCopy(cfg.Object, append([]string{"spec"}, strings.Split(path, ".")...)...)
		if fmt.Sprint(got) != v {
			t.Errorf("--set kubefedConfig.%s=%s rendered %v", path, v, got)
		}
	}
	var rendered corev1beta1.KubeFedConfig
	into(t, cfg, &rendered)
	settings, err := kubefedconfig.Resolve(rendered.Spec)
	if err != nil {
		t.Fatalf("the overridden KubeFedConfig is invalid: %v", err)
	}
	if settings.FeatureGates[corev1beta1.SchedulerPreferences] || !settings.FeatureGates[corev1beta1.PushReconciler] {
		t.Errorf("feature gates %v, want only SchedulerPreferences disabled", settings.FeatureGates)
	}
}

// defaultTypeConfigs reads config/default-types.
func defaultTypeConfigs(t *testing.T) map[string]corev1beta1.FederatedTypeConfig {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "config", "default-types", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no default types (%v)", err)
	}
	out := map[string]corev1beta1.FederatedTypeConfig{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ftc corev1beta1.FederatedTypeConfig
		if err := yaml.UnmarshalStrict(data, &ftc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[ftc.Name] = ftc
	}
	return out
}

// TestDefaultTypes proves the chart installs config/default-types in the
// release namespace, without cluster-scoped types when Namespaced, and
// honours defaultTypes.exclude and defaultTypes.install.
func TestDefaultTypes(t *testing.T) {
	h := newHelm(t)
	defaults := defaultTypeConfigs(t)
	for _, tc := range []struct {
		name    string
		set     []string
		without []string
	}{
		{name: "Cluster scope"},
		{name: "Namespaced scope", set: []string{"global.scope=Namespaced"}, without: []string{"clusterroles.rbac.authorization.k8s.io"}},
		{name: "excluded", set: []string{"defaultTypes.exclude={jobs.batch,secrets}"}, without: []string{"jobs.batch", "secrets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]corev1beta1.FederatedTypeConfig{}
			for _, u := range find(h.template(t, renderNamespace, nil, tc.set...), "FederatedTypeConfig") {
				var ftc corev1beta1.FederatedTypeConfig
				into(t, u, &ftc)
				if ftc.Namespace != renderNamespace {
					t.Errorf("FederatedTypeConfig %s in namespace %q", ftc.Name, ftc.Namespace)
				}
				got[ftc.Name] = ftc
			}
			for name, want := range defaults {
				ftc, ok := got[name]
				switch {
				case slices.Contains(tc.without, name):
					if ok {
						t.Errorf("%s is installed", name)
					}
				case !ok:
					t.Errorf("%s is missing", name)
				case !reflect.DeepEqual(ftc.Spec, want.Spec):
					t.Errorf("%s spec\n%+v\ndiffers from config/default-types\n%+v", name, ftc.Spec, want.Spec)
				}
			}
			if len(got) != len(defaults)-len(tc.without) {
				t.Errorf("%d FederatedTypeConfigs rendered, want %d", len(got), len(defaults)-len(tc.without))
			}
		})
	}
	if n := len(find(h.template(t, renderNamespace, nil, "defaultTypes.install=false"), "FederatedTypeConfig")); n != 0 {
		t.Errorf("defaultTypes.install=false rendered %d FederatedTypeConfigs", n)
	}
}

// TestChartCRDs proves `helm template --include-crds` carries every CRD of
// config/, unchanged.
func TestChartCRDs(t *testing.T) {
	h := newHelm(t)
	var dirs []string
	for _, dir := range copies[filepath.Join("charts", "kubefed", "crds")] {
		dirs = append(dirs, filepath.Join(repoRoot, dir))
	}
	crds, err := framework.ReadCRDs(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]apiextensionsv1.CustomResourceDefinitionSpec{}
	for _, crd := range crds {
		want[crd.Name] = crd.Spec
	}
	rendered := find(h.template(t, renderNamespace, []string{"--include-crds"}), "CustomResourceDefinition")
	if len(rendered) != len(want) {
		t.Errorf("rendered %d CRDs, config/ has %d", len(rendered), len(want))
	}
	for _, u := range rendered {
		var crd apiextensionsv1.CustomResourceDefinition
		into(t, u, &crd)
		if spec, ok := want[crd.Name]; !ok || !reflect.DeepEqual(crd.Spec, spec) {
			t.Errorf("CRD %s is not config/'s (known there: %v)", crd.Name, ok)
		}
	}
}

// TestAdmissionPolicies checks that the chart installs config/admission's
// policies as they are (test/compat proves what they do): renamed and bound
// to the release namespace for a Namespaced control plane, the sync
// finalizer's reading its params from the release namespace and looking at
// the extra federated groups too; and nothing when one is disabled or the
// host does not serve the API.
func TestAdmissionPolicies(t *testing.T) {
	h := newHelm(t)
	read := func(file string) (policy, binding map[string]any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "admission", file))
		if err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(string(data), "\n---\n")
		if err := yaml.Unmarshal([]byte(docs[0]), &policy); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(docs[1]), &binding); err != nil {
			t.Fatal(err)
		}
		return policy, binding
	}
	named := func(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
		t.Helper()
		for _, o := range find(objs, kind) {
			if o.GetName() == name {
				return o
			}
		}
		t.Fatalf("no %s %s rendered", kind, name)
		return nil
	}
	defaultsPolicy, _ := read("kubefedconfig-defaults.yaml")
	finalizerPolicy, finalizerBinding := read("sync-finalizer.yaml")
	served := []string{"--api-versions", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"}
	for _, scope := range scopes {
		t.Run(string(scope), func(t *testing.T) {
			objs := h.template(t, renderNamespace, served, "global.scope="+string(scope), "rbac.extraFederatedGroups={example.io}")
			if n := len(find(objs, "MutatingAdmissionPolicy")); n != 2 {
				t.Errorf("%d policies rendered, want 2", n)
			}
			namespaced := scope == corev1beta1.NamespaceScoped
			bound := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": renderNamespace}}}
			nameOf := func(base string) string {
				if namespaced {
					return base + "." + renderNamespace
				}
				return base
			}

			name := nameOf("kubefedconfig-defaults.core.kubefed.io")
			policy, binding := named(objs, "MutatingAdmissionPolicy", name), named(objs, "MutatingAdmissionPolicyBinding", name)
			if !reflect.DeepEqual(policy.Object["spec"], defaultsPolicy["spec"]) {
				t.Errorf("the chart's policy spec\n%v\ndiffers from config/admission's\n%v", policy.Object["spec"], defaultsPolicy["spec"])
			}
			wantSpec := map[string]any{"policyName": name}
			if namespaced {
				wantSpec["matchResources"] = bound
			}
			if !reflect.DeepEqual(binding.Object["spec"], wantSpec) {
				t.Errorf("binding spec %v, want %v", binding.Object["spec"], wantSpec)
			}

			name = nameOf("sync-finalizer.core.kubefed.io")
			policy, binding = named(objs, "MutatingAdmissionPolicy", name), named(objs, "MutatingAdmissionPolicyBinding", name)
			want := runtime.DeepCopyJSON(finalizerPolicy)
			rule := want["spec"].(map[string]any)["matchConstraints"].(map[string]any)["resourceRules"].([]any)[0].(map[string]any)
			rule["apiGroups"] = []any{"types.kubefed.io", "example.io"}
			if namespaced {
				rule["scope"] = "Namespaced"
			}
			if !reflect.DeepEqual(policy.Object["spec"], want["spec"]) {
				t.Errorf("the chart's policy spec\n%v\nis not config/admission's with the extra group\n%v", policy.Object["spec"], want["spec"])
			}
			wantBinding := runtime.DeepCopyJSON(finalizerBinding)["spec"].(map[string]any)
			wantBinding["policyName"] = name
			wantBinding["paramRef"].(map[string]any)["namespace"] = renderNamespace
			if namespaced {
				wantBinding["matchResources"] = bound
			}
			if !reflect.DeepEqual(binding.Object["spec"], wantBinding) {
				t.Errorf("binding spec %v, want %v", binding.Object["spec"], wantBinding)
			}
		})
	}
	for what, c := range map[string]struct {
		objs []*unstructured.Unstructured
		want int
	}{
		"kubefedConfigDefaulting.enabled=false":                                  {h.template(t, renderNamespace, served, "kubefedConfigDefaulting.enabled=false"), 1},
		"syncFinalizerPolicy.enabled=false":                                      {h.template(t, renderNamespace, served, "syncFinalizerPolicy.enabled=false"), 1},
		"a host without admissionregistration.k8s.io/v1 MutatingAdmissionPolicy": {h.template(t, renderNamespace, nil), 0},
	} {
		if n := len(find(c.objs, "MutatingAdmissionPolicy")) + len(find(c.objs, "MutatingAdmissionPolicyBinding")); n != 2*c.want {
			t.Errorf("%s: %d policy objects rendered, want %d", what, n, 2*c.want)
		}
	}
}

// TestFirstStartValues checks the values dist/ is rendered with: no
// KubeFedConfig and no FederatedTypeConfig rendered, the controller-manager
// told to create them, with the exclusions passed on.
// controllerManager.env reaches the container, beside the scale-out
// replica's own variables.
func TestEnvValues(t *testing.T) {
	h := newHelm(t)
	for _, scaleOut := range []string{"false", "true"} {
		var d appsv1.Deployment
		into(t, only(t, h.template(t, renderNamespace, nil, "controllerManager.scaleOut="+scaleOut,
			"controllerManager.env[0].name=HTTPS_PROXY", "controllerManager.env[0].value=http://proxy:3128"), "Deployment"), &d)
		var names []string
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			names = append(names, e.Name)
			if e.Name == "HTTPS_PROXY" && e.Value != "http://proxy:3128" {
				t.Errorf("scaleOut=%s: HTTPS_PROXY=%q", scaleOut, e.Value)
			}
		}
		want := []string{"HTTPS_PROXY"}
		if scaleOut == "true" {
			want = []string{"POD_NAME", "POD_IP", "HTTPS_PROXY"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("scaleOut=%s: env %v, want %v", scaleOut, names, want)
		}
	}
	var d appsv1.Deployment
	into(t, only(t, h.template(t, renderNamespace, nil), "Deployment"), &d)
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
		t.Errorf("env by default: %v", env)
	}
}

// Probe values left empty, or naming httpGet, render the chart's probes.
func TestProbeValues(t *testing.T) {
	h := newHelm(t)
	for _, set := range [][]string{
		{"controllerManager.livenessProbe=null", "controllerManager.readinessProbe=null"},
		{"controllerManager.livenessProbe.httpGet.path=/elsewhere", "controllerManager.readinessProbe.periodSeconds=3"},
	} {
		var d appsv1.Deployment
		into(t, only(t, h.template(t, renderNamespace, nil, set...), "Deployment"), &d)
		c := d.Spec.Template.Spec.Containers[0]
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
			c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("--set %v: probes %+v / %+v, want /healthz and /readyz on the health port", set, c.LivenessProbe, c.ReadinessProbe)
		}
		if set[1] == "controllerManager.readinessProbe.periodSeconds=3" && c.ReadinessProbe.PeriodSeconds != 3 {
			t.Errorf("--set %v: readiness period %d, want 3", set, c.ReadinessProbe.PeriodSeconds)
		}
	}
}

func TestFirstStartValues(t *testing.T) {
	h := newHelm(t)
	objs := h.template(t, renderNamespace, nil, "kubefedConfig.create=false", "defaultTypes.install=false",
		"defaultTypes.installOnFirstStart=true", "defaultTypes.exclude={jobs.batch,secrets}")
	if n := len(find(objs, "KubeFedConfig")) + len(find(objs, "FederatedTypeConfig")); n != 0 {
		t.Errorf("%d KubeFedConfigs and FederatedTypeConfigs rendered, want none", n)
	}
	var d appsv1.Deployment
	into(t, only(t, objs, "Deployment"), &d)
	args := d.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--install-default-types") || !slices.Contains(args, "--exclude-default-types=jobs.batch,secrets") {
		t.Errorf("controller-manager args %v, want --install-default-types and --exclude-default-types=jobs.batch,secrets", args)
	}
	objs = h.template(t, renderNamespace, nil)
	into(t, only(t, objs, "Deployment"), &d)
	if len(find(objs, "KubeFedConfig")) != 1 || slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--install-default-types") {
		t.Error("by default the chart renders the KubeFedConfig and the controller-manager installs no types")
	}
}
