//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// Objects of the type federation specs, all in e2e.example.com groups or
// e2e-tf namespaces so that they collide with nothing else.
const (
	tfGroup            = "e2e.example.com"
	tfFederateNS       = "e2e-tf-federate"
	tfClusterRole      = "e2e-tf-reader"
	tfBaselineNS       = "e2e-tf-baseline"
	tfStatusTimeout    = 90 * time.Second
	tfFederatedVersion = "types.kubefed.io/v1beta1"
)

// tfCRD is a minimal CustomResourceDefinition for a type the specs enable.
func tfCRD(group, kind, plural string, namespaced bool) *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.ClusterScoped
	if namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind),
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}},
				}},
			}},
		},
	}
}

// tfTemplate is what federate must make of a source object: the object
// without apiVersion, kind, status and all metadata but labels.
func tfTemplate(src *unstructured.Unstructured) map[string]any {
	tmpl := src.DeepCopy().Object
	for _, k := range []string{"apiVersion", "kind", "status", "metadata"} {
		delete(tmpl, k)
	}
	ls := map[string]any{}
	for k, v := range src.GetLabels() {
		// Propagation labels the host's own copy once the host is a member.
		if k != corev1beta1.ManagedByKubeFedLabelKey {
			ls[k] = v
		}
	}
	if len(ls) > 0 {
		tmpl["metadata"] = map[string]any{"labels": ls}
	}
	// As in KubeFed: a Namespace's spec.finalizers, the namespace
	// controller's, and a ServiceAccount's token secrets stay out.
	switch src.GetKind() {
	case "Namespace":
		unstructured.RemoveNestedField(tmpl, "spec", "finalizers")
		if spec, ok := tmpl["spec"].(map[string]any); ok && len(spec) == 0 {
			delete(tmpl, "spec")
		}
	case "ServiceAccount":
		delete(tmpl, "secrets")
	}
	return tmpl
}

var _ = Describe("Type federation", Ordered, func() {
	var cm *framework.ControllerManager

	// The types the specs enable, and the CRDs they create, all removed
	// at the end; the federated CRDs of built-in types the suite installed stay.
	gadgets := tfCRD(tfGroup, "Gadget", "gadgets", true)
	doohickeys := tfCRD(tfGroup, "Doohickey", "doohickeys", false)
	sprocketsA := tfCRD("alpha."+tfGroup, "Sprocket", "sprockets", true)
	sprocketsB := tfCRD("beta."+tfGroup, "Sprocket", "sprockets", true)
	thingamajigs := tfCRD(tfGroup, "Thingamajig", "thingamajigs", true)
	// The baseline every member gets: docs/user-guide.md's recipe.
	baselineTypes := []string{
		"networkpolicies.networking.k8s.io", "resourcequotas", "limitranges",
		"roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
		"clusterrolebindings.rbac.authorization.k8s.io",
	}
	enabledHere := append([]string{
		"namespaces", "configmaps", "services", "clusterroles.rbac.authorization.k8s.io",
		gadgets.Name, doohickeys.Name,
	}, baselineTypes...)

	kfctl := func(ctx context.Context, args ...string) (string, string, error) {
		return fw.Kubefedctl(ctx, append(args, "--host-cluster-context", fw.Host.Name)...)
	}
	mustKfctl := func(ctx context.Context, args ...string) string {
		GinkgoHelper()
		out, errOut, err := kfctl(ctx, args...)
		Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out, errOut)
		return out
	}
	ftc := func(ctx context.Context, name string) (*corev1beta1.FederatedTypeConfig, error) {
		obj := &corev1beta1.FederatedTypeConfig{}
		return obj, fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: name}, obj)
	}
	installCRD := func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, clusters ...*framework.Cluster) {
		GinkgoHelper()
		for _, c := range clusters {
			Expect(framework.InstallCRDs(ctx, c.Client, []*apiextensionsv1.CustomResourceDefinition{crd.DeepCopy()})).To(Succeed(), c.Name)
		}
	}
	federated := func(ctx context.Context, kind, namespace, name string) *unstructured.Unstructured {
		GinkgoHelper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(tfFederatedVersion)
		u.SetKind(kind)
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)).To(Succeed(), "%s %s/%s", kind, namespace, name)
		return u
	}
	source := func(ctx context.Context, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
		GinkgoHelper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)).To(Succeed())
		return u
	}
	nestedStrings := func(obj map[string]any, fields ...string) map[string]string {
		GinkgoHelper()
		m, found, err := unstructured.NestedStringMap(obj, fields...)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue(), "%s", strings.Join(fields, "."))
		return m
	}
	// expectFederatedFrom checks a federated object field by field: its
	// name and namespace, a template equal to the source without the
	// stripped fields, and a placement selecting every cluster.
	expectFederatedFrom := func(fedObj *unstructured.Unstructured, want map[string]any) {
		GinkgoHelper()
		spec, _, _ := unstructured.NestedMap(fedObj.Object, "spec")
		Expect(spec).To(HaveKey("template"))
		Expect(spec["template"]).To(Equal(want))
		Expect(spec["placement"]).To(Equal(map[string]any{"clusterSelector": map[string]any{}}))
		Expect(spec).NotTo(HaveKey("overrides"))
		tmpl := spec["template"].(map[string]any)
		for _, k := range []string{"apiVersion", "kind", "status"} {
			Expect(tmpl).NotTo(HaveKey(k))
		}
		if md, ok := tmpl["metadata"].(map[string]any); ok {
			Expect(md).To(HaveLen(1), "template metadata keeps only labels: %v", md)
			Expect(md).To(HaveKey("labels"))
		}
	}

	// dropNamespace deletes a namespace of a spec and waits until it is
	// gone from every cluster (its FederatedNamespace took it to the
	// members), while the types' controllers still release their objects:
	// the namespace controllers' deletions must not run into later specs'
	// request counters.
	dropNamespace := func(ctx context.Context, name string) {
		GinkgoHelper()
		Expect(client.IgnoreNotFound(fw.Host.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
		for _, c := range fw.Clusters() {
			Eventually(gone(ctx, c.Client, &corev1.Namespace{}, client.ObjectKey{Name: name})).
				WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "namespace %s in %s", name, c.Name)
		}
	}

	BeforeAll(func(ctx context.Context) {
		Expect(framework.EnsureNamespace(ctx, fw.Host.Client, kubefedNS)).To(Succeed())
		// The KubeFedConfig of the Member clusters specs, created only if no
		// spec did before and removed again, so that theirs applies after.
		cfg := fastProbeConfig()
		if err := fw.Host.Client.Create(ctx, cfg); err == nil {
			DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, cfg)) })
		} else {
			Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "create KubeFedConfig: %v", err)
		}

		// Clusters joined here, and only those, are unjoined at the end: the
		// Member clusters specs join with --error-on-existing and must find
		// the host as they would without these specs.
		var joinedHere []*framework.Cluster
		DeferCleanup(func(ctx context.Context) {
			for _, c := range joinedHere {
				_, _, err := kfctl(ctx, "unjoin", c.Name, "--cluster-context", c.Name)
				Expect(err).NotTo(HaveOccurred())
				Eventually(gone(ctx, fw.Host.Client, &corev1beta1.KubeFedCluster{}, client.ObjectKey{Namespace: kubefedNS, Name: c.Name})).Should(BeTrue())
				if c != fw.Host {
					Eventually(gone(ctx, c.Client, &corev1.Namespace{}, client.ObjectKey{Name: kubefedNS})).
						WithTimeout(90*time.Second).Should(BeTrue(), "namespace %s in %s", kubefedNS, c.Name)
				}
			}
		})

		// The target types exist before the controller-manager first asks
		// the members, as a cluster admin would install them; doohickeys
		// is left out of member2.
		installCRD(ctx, gadgets, fw.Clusters()...)
		installCRD(ctx, doohickeys, fw.Host, fw.Members[0])
		installCRD(ctx, sprocketsA, fw.Host)
		installCRD(ctx, sprocketsB, fw.Host)
		installCRD(ctx, thingamajigs, fw.Members[0])
		DeferCleanup(func(ctx context.Context) {
			for _, c := range fw.Clusters() {
				for _, crd := range []*apiextensionsv1.CustomResourceDefinition{gadgets, doohickeys, sprocketsA, sprocketsB, thingamajigs} {
					Expect(client.IgnoreNotFound(c.Client.Delete(ctx, crd.DeepCopy()))).To(Succeed())
				}
			}
		})

		var err error
		cm, err = fw.StartControllerManager(ctx, filepath.Join(GinkgoT().TempDir(), "cm"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() error { return cm.Stop() })

		for _, c := range fw.Clusters() {
			existed := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: c.Name}, &corev1beta1.KubeFedCluster{}) == nil
			mustKfctl(ctx, "join", c.Name, "--cluster-context", c.Name, "--error-on-existing=false")
			if !existed {
				joinedHere = append(joinedHere, c)
			}
		}
		for _, c := range fw.Clusters() {
			Eventually(func() string { return conditionState(ctx, c.Name, corev1beta1.ClusterReady) }).
				WithTimeout(60*time.Second).WithPolling(time.Second).Should(Equal("True/ClusterReady"), c.Name)
		}

		// Registered last, so it runs first, while the controller-manager
		// still releases the FTCs' finalizers: types enabled here go.
		var preexisting []string
		for _, name := range enabledHere {
			if _, err := ftc(ctx, name); err == nil {
				preexisting = append(preexisting, name)
			}
		}
		DeferCleanup(func(ctx context.Context) {
			for _, name := range enabledHere {
				if slices.Contains(preexisting, name) {
					continue
				}
				if obj, err := ftc(ctx, name); err == nil {
					Expect(client.IgnoreNotFound(fw.Host.Client.Delete(ctx, obj))).To(Succeed())
					Eventually(func() bool { _, err := ftc(ctx, name); return apierrors.IsNotFound(err) }).
						WithTimeout(30*time.Second).Should(BeTrue(), name)
				}
			}
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "federateddoohickeys.types.kubefed.io"}}
			Expect(client.IgnoreNotFound(fw.Host.Client.Delete(ctx, crd))).To(Succeed())
			crd = &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "federatedgadgets.types.kubefed.io"}}
			Expect(client.IgnoreNotFound(fw.Host.Client.Delete(ctx, crd))).To(Succeed())
		})
	})

	It("enables a custom and built-in types, whose federated CRDs are served", func(ctx context.Context) {
		mustKfctl(ctx, "enable", "namespaces")
		mustKfctl(ctx, "enable", "configmaps")
		out := mustKfctl(ctx, "enable", gadgets.Name)
		Expect(out).To(ContainSubstring("CustomResourceDefinition federatedgadgets.types.kubefed.io created in host"))
		Expect(out).To(ContainSubstring(`Type "gadgets.e2e.example.com" enabled`))

		for _, name := range []string{"federatedgadgets.types.kubefed.io", "federatedconfigmaps.types.kubefed.io", "federatednamespaces.types.kubefed.io"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))), name)
		}
		g := &apiextensionsv1.CustomResourceDefinition{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: "federatedgadgets.types.kubefed.io"}, g)).To(Succeed())
		Expect(g.Spec.Names.Kind).To(Equal("FederatedGadget"))
		Expect(g.Spec.Scope).To(Equal(apiextensionsv1.NamespaceScoped))
		Eventually(func() (string, error) { return fw.Kubectl(ctx, "host", "explain", "federatedgadgets.spec.placement") }).
			WithTimeout(30 * time.Second).Should(ContainSubstring("clusterSelector"))
		out, err := fw.Kubectl(ctx, "host", "explain", "fcm.spec.overrides")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("clusterOverrides"))

		obj, err := ftc(ctx, gadgets.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(obj.Spec.TargetType).To(Equal(corev1beta1.APIResource{
			Group: tfGroup, Version: "v1", Kind: "Gadget", PluralName: "gadgets", Scope: corev1beta1.NamespaceScope}))
		Expect(obj.Spec.FederatedType).To(Equal(corev1beta1.APIResource{
			Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedGadget", PluralName: "federatedgadgets", Scope: corev1beta1.NamespaceScope}))
		Expect(obj.Spec.Propagation).To(Equal(corev1beta1.Enabled))
	})

	It("reports the types Running and present in every cluster", func(ctx context.Context) {
		everywhere := []corev1beta1.TargetTypeClusterStatus{
			{ClusterName: "host", Status: corev1beta1.TargetTypePresent},
			{ClusterName: "member1", Status: corev1beta1.TargetTypePresent},
			{ClusterName: "member2", Status: corev1beta1.TargetTypePresent},
		}
		for _, name := range []string{"namespaces", "configmaps", gadgets.Name} {
			Eventually(func(g Gomega) {
				obj, err := ftc(ctx, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
				g.Expect(obj.Status.PropagationController).To(Equal(corev1beta1.ControllerStatusRunning))
				g.Expect(string(obj.Status.TargetTypeOverallStatus)).To(Equal("PresentInAllClusters"))
				g.Expect(obj.Status.TargetTypeClusterStatus).To(Equal(everywhere))
			}).WithTimeout(tfStatusTimeout).WithPolling(time.Second).Should(Succeed(), name)
		}
		out, err := fw.Kubectl(ctx, "host", "-n", kubefedNS, "get", "ftc", gadgets.Name, "-o", "jsonpath={.status.propagationController}")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal("Running"))
		Eventually(func() string { s, _ := cm.Metrics(); return s }).WithTimeout(30 * time.Second).Should(
			ContainSubstring(`kubefed_federatedtypeconfig_target_missing{cluster="member2",federatedtypeconfig="gadgets.e2e.example.com"} 0`))
	})

	It("reports a type the host serves but a member does not, and still runs it", func(ctx context.Context) {
		mustKfctl(ctx, "enable", doohickeys.Name)
		Eventually(func(g Gomega) {
			obj, err := ftc(ctx, doohickeys.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(obj.Status.PropagationController).To(Equal(corev1beta1.ControllerStatusRunning))
			g.Expect(string(obj.Status.TargetTypeOverallStatus)).To(Equal("NotPresentInAllClusters"))
			g.Expect(obj.Status.TargetTypeClusterStatus).To(Equal([]corev1beta1.TargetTypeClusterStatus{
				{ClusterName: "host", Status: corev1beta1.TargetTypePresent},
				{ClusterName: "member1", Status: corev1beta1.TargetTypePresent},
				{ClusterName: "member2", Status: corev1beta1.TargetTypeNotPresent},
			}))
		}).WithTimeout(tfStatusTimeout).WithPolling(time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(fw.Host.Client.List(ctx, list, client.InNamespace(kubefedNS))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Name == doohickeys.Name && e.Reason == "TargetTypeNotPresent" && e.Type == corev1.EventTypeWarning {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(ContainSubstring("e2e.example.com/v1 Doohickey (doohickeys) is not served by member cluster member2;")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { s, _ := cm.Metrics(); return s }).WithTimeout(30 * time.Second).Should(And(
			ContainSubstring(`kubefed_federatedtypeconfig_target_missing{cluster="member2",federatedtypeconfig="doohickeys.e2e.example.com"} 1`),
			ContainSubstring(`kubefed_federatedtypeconfig_target_missing{cluster="member1",federatedtypeconfig="doohickeys.e2e.example.com"} 0`),
		))
		// The other types are not disturbed.
		obj, err := ftc(ctx, gadgets.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(obj.Status.TargetTypeOverallStatus)).To(Equal("PresentInAllClusters"))
	})

	It("disables types: NotRunning, the FTC removed, and with --delete-crd the federated CRD", func(ctx context.Context) {
		out, errOut, err := kfctl(ctx, "disable", gadgets.Name, "--delete-crd")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(BeEmpty())
		Expect(out).To(ContainSubstring("Propagation controller of gadgets.e2e.example.com stopped"))
		Expect(out).To(ContainSubstring("CustomResourceDefinition federatedgadgets.types.kubefed.io deleted in host"))
		Expect(out).To(ContainSubstring(`Type "gadgets.e2e.example.com" disabled`))
		Eventually(func() bool { _, err := ftc(ctx, gadgets.Name); return apierrors.IsNotFound(err) }).Should(BeTrue())
		Eventually(gone(ctx, fw.Host.Client, &apiextensionsv1.CustomResourceDefinition{}, client.ObjectKey{Name: "federatedgadgets.types.kubefed.io"})).
			WithTimeout(30 * time.Second).Should(BeTrue())
		// The target type is the user's and stays.
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: gadgets.Name}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		// A deleted type leaves no metric series behind.
		Eventually(func() string { s, _ := cm.Metrics(); return s }).WithTimeout(30 * time.Second).Should(And(
			ContainSubstring("kubefed_federatedtypeconfig_target_missing{"),
			Not(ContainSubstring(`federatedtypeconfig="gadgets.e2e.example.com"`))))
		// The other types run on.
		for _, name := range []string{"namespaces", "configmaps"} {
			obj, err := ftc(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(obj.Status.PropagationController).To(Equal(corev1beta1.ControllerStatusRunning), name)
		}

		// Without --delete-crd the federated CRD stays.
		out, errOut, err = kfctl(ctx, "disable", doohickeys.Name)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring("Propagation controller of doohickeys.e2e.example.com stopped"))
		Eventually(func() bool { _, err := ftc(ctx, doohickeys.Name); return apierrors.IsNotFound(err) }).Should(BeTrue())
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: "federateddoohickeys.types.kubefed.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
	})

	It("federates a ConfigMap, a Service, a ClusterRole and a namespace with its contents", func(ctx context.Context) {
		mustKfctl(ctx, "enable", "services")
		mustKfctl(ctx, "enable", "clusterroles.rbac.authorization.k8s.io")

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tfFederateNS, Labels: map[string]string{"team": "e2e"}}}
		Expect(fw.Host.Client.Create(ctx, ns)).To(Succeed())
		DeferCleanup(dropNamespace, ns.Name)
		configMap := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: tfFederateNS,
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "not propagated"}},
			Data: map[string]string{"greeting": "hello", "color": "blue"},
		}
		service := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tfFederateNS, Labels: map[string]string{"app": "web"}},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeNodePort,
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			},
		}
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: tfClusterRole, Labels: map[string]string{"app": "web"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
		}
		for _, o := range []client.Object{configMap, service, role} {
			Expect(fw.Host.Client.Create(ctx, o)).To(Succeed())
		}
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, role)) })
		fedRole := &unstructured.Unstructured{}
		fedRole.SetAPIVersion(tfFederatedVersion)
		fedRole.SetKind("FederatedClusterRole")
		fedRole.SetName(tfClusterRole)
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, fedRole)) })

		out := mustKfctl(ctx, "federate", "configmap", "app-config", "-n", tfFederateNS)
		Expect(out).To(ContainSubstring("FederatedConfigMap " + tfFederateNS + "/app-config created in host"))
		out = mustKfctl(ctx, "federate", "clusterrole", tfClusterRole)
		Expect(out).To(ContainSubstring("FederatedClusterRole " + tfClusterRole + " created in host"))
		// The kube-root-ca.crt ConfigMap each cluster publishes is skipped
		// by --contents; wait for it so that the skip is exercised.
		Eventually(func() error {
			return fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: tfFederateNS, Name: "kube-root-ca.crt"}, &corev1.ConfigMap{})
		}).WithTimeout(30 * time.Second).Should(Succeed())
		out = mustKfctl(ctx, "federate", "namespace", tfFederateNS, "--contents")
		Expect(out).To(ContainSubstring("FederatedNamespace " + tfFederateNS + "/" + tfFederateNS + " created in host"))
		Expect(out).To(ContainSubstring("FederatedConfigMap " + tfFederateNS + "/app-config unchanged in host"))
		Expect(out).To(ContainSubstring("FederatedService " + tfFederateNS + "/web created in host"))

		// ConfigMap: data and labels, no annotations.
		cmSrc := source(ctx, "v1", "ConfigMap", tfFederateNS, "app-config")
		fcm := federated(ctx, "FederatedConfigMap", tfFederateNS, "app-config")
		expectFederatedFrom(fcm, tfTemplate(cmSrc))
		Expect(nestedStrings(fcm.Object, "spec", "template", "data")).To(Equal(configMap.Data))
		Expect(nestedStrings(fcm.Object, "spec", "template", "metadata", "labels")).To(Equal(map[string]string{"app": "web"}))

		// Service: what the host allocated is left out.
		svcSrc := source(ctx, "v1", "Service", tfFederateNS, "web")
		clusterIP, _, _ := unstructured.NestedString(svcSrc.Object, "spec", "clusterIP")
		Expect(clusterIP).NotTo(BeEmpty(), "the host allocated no clusterIP")
		srcPorts, _, _ := unstructured.NestedSlice(svcSrc.Object, "spec", "ports")
		Expect(srcPorts).To(HaveLen(1))
		Expect(srcPorts[0]).To(HaveKeyWithValue("nodePort", Not(BeZero())))
		wantSvc := tfTemplate(svcSrc)
		unstructured.RemoveNestedField(wantSvc, "spec", "clusterIP")
		unstructured.RemoveNestedField(wantSvc, "spec", "clusterIPs")
		ports, _, _ := unstructured.NestedSlice(wantSvc, "spec", "ports")
		delete(ports[0].(map[string]any), "nodePort")
		Expect(unstructured.SetNestedSlice(wantSvc, ports, "spec", "ports")).To(Succeed())
		fsvc := federated(ctx, "FederatedService", tfFederateNS, "web")
		expectFederatedFrom(fsvc, wantSvc)
		svcSpec, _, _ := unstructured.NestedMap(fsvc.Object, "spec", "template", "spec")
		Expect(svcSpec).NotTo(HaveKey("clusterIP"))
		Expect(svcSpec).NotTo(HaveKey("clusterIPs"))
		Expect(svcSpec).To(HaveKeyWithValue("type", "NodePort"))
		Expect(svcSpec["ports"]).To(Equal([]any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP"}}))

		// ClusterRole: cluster-scoped like its target.
		roleSrc := source(ctx, "rbac.authorization.k8s.io/v1", "ClusterRole", "", tfClusterRole)
		fcr := federated(ctx, "FederatedClusterRole", "", tfClusterRole)
		Expect(fcr.GetNamespace()).To(BeEmpty())
		expectFederatedFrom(fcr, tfTemplate(roleSrc))
		rules, _, _ := unstructured.NestedSlice(fcr.Object, "spec", "template", "rules")
		Expect(rules).To(Equal([]any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list"}}}))

		// Namespace: the FederatedNamespace lives in the namespace it federates.
		nsSrc := source(ctx, "v1", "Namespace", "", tfFederateNS)
		fns := federated(ctx, "FederatedNamespace", tfFederateNS, tfFederateNS)
		expectFederatedFrom(fns, tfTemplate(nsSrc))
		Expect(nestedStrings(fns.Object, "spec", "template", "metadata", "labels")).To(HaveKeyWithValue("team", "e2e"))

		// Nothing else of the namespace was federated.
		fcms := &unstructured.UnstructuredList{}
		fcms.SetAPIVersion(tfFederatedVersion)
		fcms.SetKind("FederatedConfigMapList")
		Expect(fw.Host.Client.List(ctx, fcms, client.InNamespace(tfFederateNS))).To(Succeed())
		var names []string
		for _, item := range fcms.Items {
			names = append(names, item.GetName())
		}
		Expect(names).To(Equal([]string{"app-config"}), "kube-root-ca.crt must be skipped")
	})

	It("propagates a baseline of NetworkPolicy, ResourceQuota, LimitRange and RBAC to every member and reverts a member's edit", func(ctx context.Context) {
		for _, t := range []string{"networkpolicies", "resourcequotas", "limitranges", "roles", "rolebindings", "clusterrolebindings"} {
			mustKfctl(ctx, "enable", t)
		}
		for _, name := range baselineTypes {
			Eventually(func(g Gomega) {
				obj, err := ftc(ctx, name)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(obj.Status.PropagationController).To(Equal(corev1beta1.ControllerStatusRunning))
			}).WithTimeout(tfStatusTimeout).WithPolling(time.Second).Should(Succeed(), name)
		}

		// The baseline as a team writes it in the host, then federates.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tfBaselineNS}}
		Expect(fw.Host.Client.Create(ctx, ns)).To(Succeed())
		DeferCleanup(dropNamespace, ns.Name)
		baseline := []client.Object{
			&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-ingress", Namespace: tfBaselineNS},
				Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}},
			&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: tfBaselineNS},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("20")}}},
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: tfBaselineNS},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
					Default: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: tfBaselineNS},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: tfBaselineNS},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "team-viewers"}}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-tf-baseline-auditors"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "auditors"}}},
		}
		for _, o := range baseline {
			Expect(fw.Host.Client.Create(ctx, o)).To(Succeed())
		}
		crb := baseline[len(baseline)-1]
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, crb)) })
		fedCRB := &unstructured.Unstructured{}
		fedCRB.SetAPIVersion(tfFederatedVersion)
		fedCRB.SetKind("FederatedClusterRoleBinding")
		fedCRB.SetName(crb.GetName())
		DeferCleanup(func(ctx context.Context) error { return client.IgnoreNotFound(fw.Host.Client.Delete(ctx, fedCRB)) })
		out := mustKfctl(ctx, "federate", "namespace", tfBaselineNS, "--contents")
		for _, kind := range []string{"FederatedNetworkPolicy", "FederatedResourceQuota", "FederatedLimitRange", "FederatedRole", "FederatedRoleBinding"} {
			Expect(out).To(ContainSubstring(kind+" "+tfBaselineNS+"/"), "kubefedctl federate --contents:\n%s", out)
		}
		mustKfctl(ctx, "federate", "clusterrolebinding", crb.GetName())

		// Every member gets each one as written.
		copyOf := func(_ *framework.Cluster, o client.Object) client.Object {
			cp := o.DeepCopyObject().(client.Object)
			cp.SetResourceVersion("")
			return cp
		}
		for _, m := range fw.Members {
			for _, o := range baseline {
				got := copyOf(m, o)
				Eventually(func() error { return m.Client.Get(ctx, client.ObjectKeyFromObject(o), got) }).
					WithTimeout(tfStatusTimeout).WithPolling(time.Second).Should(Succeed(), "%T %s in %s", o, o.GetName(), m.Name)
				Expect(got.GetLabels()).To(HaveKeyWithValue(corev1beta1.ManagedByKubeFedLabelKey, corev1beta1.ManagedByKubeFedLabelValue))
			}
			quota := &corev1.ResourceQuota{}
			Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: tfBaselineNS, Name: "quota"}, quota)).To(Succeed())
			Expect(quota.Spec.Hard.Pods().String()).To(Equal("20"))
			binding := &rbacv1.ClusterRoleBinding{}
			Expect(m.Client.Get(ctx, client.ObjectKey{Name: crb.GetName()}, binding)).To(Succeed())
			Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "auditors"}}))
		}

		// Edited in a member, each is put back.
		m := fw.Members[0]
		edit := func(o client.Object, change func(client.Object)) {
			GinkgoHelper()
			Eventually(func() error {
				got := copyOf(m, o)
				if err := m.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
					return err
				}
				change(got)
				return m.Client.Update(ctx, got)
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
		edit(baseline[1], func(o client.Object) {
			o.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourcePods] = resource.MustParse("999")
		})
		edit(baseline[4], func(o client.Object) {
			o.(*rbacv1.RoleBinding).Subjects = []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "everyone"}}
		})
		edit(baseline[5], func(o client.Object) {
			o.(*rbacv1.ClusterRoleBinding).Subjects = append(o.(*rbacv1.ClusterRoleBinding).Subjects,
				rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "intruders"})
		})
		edit(baseline[0], func(o client.Object) {
			o.(*networkingv1.NetworkPolicy).Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		})
		Eventually(func(g Gomega) {
			quota := &corev1.ResourceQuota{}
			g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: tfBaselineNS, Name: "quota"}, quota)).To(Succeed())
			g.Expect(quota.Spec.Hard.Pods().String()).To(Equal("20"))
			rb := &rbacv1.RoleBinding{}
			g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: tfBaselineNS, Name: "viewers"}, rb)).To(Succeed())
			g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "team-viewers"}}))
			crbGot := &rbacv1.ClusterRoleBinding{}
			g.Expect(m.Client.Get(ctx, client.ObjectKey{Name: crb.GetName()}, crbGot)).To(Succeed())
			g.Expect(crbGot.Subjects).To(Equal([]rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "auditors"}}))
			np := &networkingv1.NetworkPolicy{}
			g.Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: tfBaselineNS, Name: "deny-ingress"}, np)).To(Succeed())
			g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		}).WithTimeout(tfStatusTimeout).WithPolling(time.Second).Should(Succeed())
	})

	DescribeTable("rejects bad input with a one-line error naming it",
		func(ctx context.Context, name string, args ...string) {
			out, errOut, err := kfctl(ctx, args...)
			Expect(err).To(HaveOccurred(), "stdout:\n%s", out)
			line := strings.TrimSuffix(errOut, "\n")
			Expect(line).NotTo(ContainSubstring("\n"), "error output is more than one line:\n%s", errOut)
			Expect(line).To(HavePrefix("error: "))
			Expect(line).To(ContainSubstring(name))
			GinkgoWriter.Println(line)
		},
		Entry("an unknown type to enable", "nosuchthings."+tfGroup, "enable", "nosuchthings."+tfGroup),
		Entry("an ambiguous kind", "sprockets.beta."+tfGroup, "enable", "sprocket"),
		Entry("a type a member serves but the host does not", "thingamajigs."+tfGroup, "enable", "thingamajigs."+tfGroup),
		Entry("federating an object of a type the host does not serve", "thingamajig", "federate", "thingamajig", "t1", "-n", "default"),
		// A plural.group name of a type gone is no error, as in KubeFed
		// (its FTC "does not exist"); a name that resolves to nothing is.
		Entry("disabling a type that is neither enabled nor served", "nosuchthing", "disable", "nosuchthing"),
	)

	It("says a plural.group type neither enabled nor served has no FederatedTypeConfig, and succeeds, as KubeFed did", func(ctx context.Context) {
		out, errOut, err := kfctl(ctx, "disable", "nosuchthings."+tfGroup)
		Expect(err).NotTo(HaveOccurred(), "stderr:\n%s", errOut)
		Expect(out).To(Equal("FederatedTypeConfig \"kube-federation-system/nosuchthings." + tfGroup + "\" does not exist\n"))
	})
})
