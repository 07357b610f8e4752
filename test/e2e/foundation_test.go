//go:build e2e

package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// manifest decodes a YAML manifest the way kubectl apply would send it.
func manifest(y string) *unstructured.Unstructured {
	GinkgoHelper()
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(y), &obj.Object)).To(Succeed())
	return obj
}

const validationNamespace = "e2e-validation"

var _ = Describe("The test bed", Ordered, func() {
	BeforeAll(func(ctx context.Context) {
		Expect(framework.EnsureNamespace(ctx, fw.Host.Client, validationNamespace)).To(Succeed())
	})

	It("runs real kube-apiservers reporting v1.37.2", func() {
		for _, c := range fw.Clusters() {
			v, err := c.Kube.Discovery().ServerVersion()
			Expect(err).NotTo(HaveOccurred())
			Expect(v.GitVersion).To(Equal("v1.37.2"), "cluster %s", c.Name)
		}
	})

	It("serves every kubefed CRD on the host, and kubectl explains them", func(ctx context.Context) {
		crds, err := framework.ReadCRDs(fw.CRDDirs()...)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(crds)).To(BeNumerically(">=", 18))
		out, err := fw.Kubectl(ctx, "host", "get", "crd", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		for _, crd := range crds {
			Expect(out).To(ContainSubstring("customresourcedefinition.apiextensions.k8s.io/"+crd.Name+"\n"), crd.Name)
		}
		for _, name := range []string{
			"kubefedclusters.core.kubefed.io", "kubefedconfigs.core.kubefed.io", "federatedtypeconfigs.core.kubefed.io",
			"replicaschedulingpreferences.scheduling.kubefed.io", "domains.multiclusterdns.kubefed.io",
			"servicednsrecords.multiclusterdns.kubefed.io", "ingressdnsrecords.multiclusterdns.kubefed.io",
			"dnsendpoints.multiclusterdns.kubefed.io", "federateddeployments.types.kubefed.io",
		} {
			Expect(out).To(ContainSubstring(name))
		}

		// The apiserver publishes a CRD's OpenAPI asynchronously after it is
		// Established, so explain may briefly not know a fresh type.
		explain := func(field string, want ...string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				out, err := fw.Kubectl(ctx, "host", "explain", field)
				g.Expect(err).NotTo(HaveOccurred())
				for _, w := range want {
					g.Expect(out).To(ContainSubstring(w))
				}
			}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), field)
		}
		explain("kubefedclusters.spec.apiEndpoint", "host:port")
		explain("federateddeployments.spec.overrides.clusterOverrides", "op", "path")
		explain("ftc.spec.targetType", "pluralName")
	})

	It("prints KubeFed's columns and short names", func(ctx context.Context) {
		_, err := fw.Kubectl(ctx, "host", "get", "ftc,rsp,fdeploy,fns,fcm,fsvc,fsa,frs,fing", "-A")
		Expect(err).NotTo(HaveOccurred())
		out, err := fw.Kubectl(ctx, "host", "get", "kubefedclusters", "-A")
		Expect(err).NotTo(HaveOccurred())
		_ = out // no clusters yet: the header alone is printed to stderr as "No resources found"
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		Expect(fw.Host.Client.Get(ctx, client.ObjectKey{Name: "kubefedclusters.core.kubefed.io"}, crd)).To(Succeed())
		cols, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		Expect(cols).NotTo(BeEmpty())
		printer, _, _ := unstructured.NestedSlice(cols[0].(map[string]any), "additionalPrinterColumns")
		var names []string
		for _, c := range printer {
			names = append(names, strings.ToUpper(c.(map[string]any)["name"].(string)))
		}
		Expect(names).To(ContainElements("AGE", "READY"))
	})

	DescribeTable("rejects invalid objects with a message naming the problem",
		func(ctx context.Context, y string, wants ...string) {
			obj := manifest(y)
			obj.SetNamespace(validationNamespace)
			err := fw.Host.Client.Create(ctx, obj)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			for _, want := range wants {
				Expect(err.Error()).To(ContainSubstring(want))
			}
		},
		Entry("KubeFedCluster without apiEndpoint", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: no-endpoint}
spec:
  secretRef: {name: member1-token}
`, "spec.apiEndpoint: Required value"),
		Entry("KubeFedCluster with an http endpoint", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: http-endpoint}
spec:
  apiEndpoint: http://10.0.0.1:6443
  secretRef: {name: member1-token}
`, "spec.apiEndpoint", "must be a host, host:port or an https:// URL"),
		Entry("KubeFedCluster with a Secret name that is not DNS-1123", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: bad-secret}
spec:
  apiEndpoint: https://10.0.0.1:6443
  secretRef: {name: Bad_Name}
`, "spec.secretRef.name"),
		Entry("KubeFedCluster with '*' beside another TLS validation", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: bad-tls}
spec:
  apiEndpoint: https://10.0.0.1:6443
  secretRef: {name: member1-token}
  disabledTLSValidations: ["*", SubjectName]
`, "spec.disabledTLSValidations", "must be the only entry"),
		Entry("KubeFedCluster with an unknown TLS validation", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: bad-tls2}
spec:
  apiEndpoint: https://10.0.0.1:6443
  secretRef: {name: member1-token}
  disabledTLSValidations: [Everything]
`, "spec.disabledTLSValidations[0]", "Unsupported value"),
		Entry("KubeFedCluster with an ftp proxy", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: bad-proxy}
spec:
  apiEndpoint: https://10.0.0.1:6443
  secretRef: {name: member1-token}
  proxyURL: ftp://proxy.example.com
`, "spec.proxyURL", "http, https or socks5"),
		Entry("KubeFedConfig without scope", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: no-scope}
spec: {}
`, "spec.scope: Required value"),
		Entry("KubeFedConfig with leaseDuration < renewDeadline", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: short-lease}
spec:
  scope: Cluster
  leaderElect: {leaseDuration: 5s, renewDeadline: 10s, retryPeriod: 2s}
`, "spec.leaderElect", "leaseDuration must be greater than renewDeadline"),
		Entry("KubeFedConfig with renewDeadline <= 1.2 × retryPeriod", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: short-renew}
spec:
  scope: Cluster
  leaderElect: {leaseDuration: 15s, renewDeadline: 5500ms, retryPeriod: 5s}
`, "spec.leaderElect", "renewDeadline must be greater than 1.2 × retryPeriod"),
		Entry("KubeFedConfig with a zero health-check period", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: zero-period}
spec:
  scope: Cluster
  clusterHealthCheck: {period: 0s}
`, "spec.clusterHealthCheck.period", "must be a positive duration"),
		Entry("KubeFedConfig with a duration that is not one", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: bad-duration}
spec:
  scope: Cluster
  controllerDuration: {availableDelay: soon}
`, "spec.controllerDuration.availableDelay"),
		Entry("KubeFedConfig with an unknown feature gate", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: bad-gate}
spec:
  scope: Cluster
  featureGates: [{name: Teleportation, configuration: Enabled}]
`, "spec.featureGates[0].name", "Unsupported value"),
		Entry("KubeFedConfig with a zero failure threshold", `
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata: {name: zero-threshold}
spec:
  scope: Cluster
  clusterHealthCheck: {failureThreshold: 0}
`, "spec.clusterHealthCheck.failureThreshold"),
		Entry("FederatedTypeConfig with an unknown propagation mode", `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: widgets.example.com}
spec:
  propagation: Sometimes
  targetType: {group: example.com, version: v1, kind: Widget, pluralName: widgets, scope: Namespaced}
  federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedWidget, pluralName: federatedwidgets, scope: Namespaced}
`, "spec.propagation", "Unsupported value"),
		Entry("FederatedTypeConfig without a target kind", `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: things.example.com}
spec:
  propagation: Enabled
  targetType: {group: example.com, version: v1, pluralName: things, scope: Namespaced}
  federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedThing, pluralName: federatedthings, scope: Namespaced}
`, "spec.targetType.kind: Required value"),
		Entry("FederatedTypeConfig named other than <plural>.<group> of its target", `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: widgets}
spec:
  propagation: Enabled
  targetType: {group: example.com, version: v1, kind: Widget, pluralName: widgets, scope: Namespaced}
  federatedType: {group: types.kubefed.io, version: v1beta1, kind: FederatedWidget, pluralName: federatedwidgets, scope: Namespaced}
`, "metadata.name must be <spec.targetType.pluralName>[.<spec.targetType.group>]"),
		Entry("FederatedDeployment with override op move", `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: op-move}
spec:
  template: {spec: {replicas: 1}}
  overrides:
  - clusterName: member1
    clusterOverrides:
    - {op: move, path: /spec/replicas, value: 2}
`, "spec.overrides[0].clusterOverrides[0].op", `Unsupported value: "move"`),
		Entry("FederatedDeployment overriding /metadata/name", `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: override-name}
spec:
  template: {spec: {replicas: 1}}
  overrides:
  - clusterName: member1
    clusterOverrides:
    - {path: /metadata/name, value: other}
`, "spec.overrides[0].clusterOverrides[0].path", "must not override the object's identity"),
		Entry("FederatedConfigMap with a relative override path", `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: relative-path}
spec:
  template: {data: {a: b}}
  overrides:
  - clusterName: member1
    clusterOverrides:
    - {path: data/a, value: c}
`, "spec.overrides[0].clusterOverrides[0].path", "must be a JSON pointer"),
		Entry("ReplicaSchedulingPreference with maxReplicas below minReplicas", `
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: bad-rsp}
spec:
  targetKind: FederatedDeployment
  totalReplicas: 10
  clusters:
    member1: {minReplicas: 5, maxReplicas: 2, weight: 1}
`, "maxReplicas must not be less than minReplicas"),
		Entry("ReplicaSchedulingPreference for a kind that is not federated", `
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: bad-kind}
spec:
  targetKind: Deployment
  totalReplicas: 3
`, "spec.targetKind"),
		Entry("ServiceDNSRecord without domainRef", `
apiVersion: multiclusterdns.kubefed.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: no-domain}
spec: {recordTTL: 300}
`, "spec.domainRef: Required value"),
	)

	It("accepts KubeFed manifests unchanged", func(ctx context.Context) {
		for _, y := range []string{`
apiVersion: core.kubefed.io/v1beta1
kind: KubeFedCluster
metadata: {name: cluster1}
spec:
  apiEndpoint: https://172.17.0.2:6443
  caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
  secretRef: {name: cluster1-shb2x}
`, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: test-deployment}
spec:
  template:
    metadata:
      labels: {app: nginx}
    spec:
      replicas: 3
      selector:
        matchLabels: {app: nginx}
      template:
        metadata:
          labels: {app: nginx}
        spec:
          containers:
          - image: nginx
            name: nginx
  placement:
    clusters:
    - name: cluster2
    - name: cluster1
  overrides:
  - clusterName: cluster2
    clusterOverrides:
    - path: "/spec/replicas"
      value: 5
    - path: "/spec/template/spec/containers/0/image"
      value: "nginx:1.17.0-alpine"
    - path: "/metadata/annotations"
      op: "add"
      value:
        foo: bar
    - path: "/metadata/annotations/foo"
      op: "remove"
`, `
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: test-deployment}
spec:
  targetKind: FederatedDeployment
  totalReplicas: 15
  clusters:
    "*": {weight: 2, maxReplicas: 12}
    ap-northeast: {minReplicas: 1, maxReplicas: 3, weight: 1}
`, `
apiVersion: multiclusterdns.kubefed.io/v1alpha1
kind: Domain
metadata: {name: test-domain}
domain: example.com
nameServer: ns1.example.com
`} {
			obj := manifest(y)
			obj.SetNamespace(validationNamespace)
			Expect(fw.Host.Client.Create(ctx, obj)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
		}
	})

	It("defaults a minimal KubeFedConfig as KubeFed did and keeps its scope immutable", func(ctx context.Context) {
		cfg := &corev1beta1.KubeFedConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "kubefed", Namespace: validationNamespace},
			Spec:       corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped},
		}
		Expect(fw.Host.Client.Create(ctx, cfg)).To(Succeed())
		got := &corev1beta1.KubeFedConfig{}
		Expect(fw.Host.Client.Get(ctx, client.ObjectKeyFromObject(cfg), got)).To(Succeed())
		s := got.Spec
		Expect(s.ClusterHealthCheck.Period.Duration).To(Equal(10 * time.Second))
		Expect(s.ClusterHealthCheck.Timeout.Duration).To(Equal(3 * time.Second))
		Expect(*s.ClusterHealthCheck.FailureThreshold).To(BeEquivalentTo(3))
		Expect(*s.ClusterHealthCheck.SuccessThreshold).To(BeEquivalentTo(1))
		Expect(s.ControllerDuration.AvailableDelay.Duration).To(Equal(20 * time.Second))
		Expect(s.ControllerDuration.UnavailableDelay.Duration).To(Equal(60 * time.Second))
		Expect(s.LeaderElect.LeaseDuration.Duration).To(Equal(15 * time.Second))
		Expect(s.LeaderElect.RenewDeadline.Duration).To(Equal(10 * time.Second))
		Expect(s.LeaderElect.RetryPeriod.Duration).To(Equal(5 * time.Second))
		Expect(s.SyncController.AdoptResources).To(Equal(corev1beta1.Enabled))

		got.Spec.Scope = corev1beta1.NamespaceScoped
		err := fw.Host.Client.Update(ctx, got)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("scope is immutable"))
	})

	It("finishes deleting a namespace in every member (kube-controller-manager runs)", func(ctx context.Context) {
		for _, m := range fw.Members {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-doomed"}}
			Expect(m.Client.Create(ctx, ns)).To(Succeed())
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content", Namespace: ns.Name}, Data: map[string]string{"k": "v"}}
			Expect(m.Client.Create(ctx, cm)).To(Succeed())
			Expect(m.Client.Delete(ctx, ns)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(m.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
			}).WithTimeout(90*time.Second).WithPolling(250*time.Millisecond).Should(BeTrue(), "namespace in %s", m.Name)
		}
	})

	It("populates ServiceAccount token Secrets in every member", func(ctx context.Context) {
		for _, m := range fw.Members {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-token", Namespace: "default"}}
			Expect(client.IgnoreAlreadyExists(m.Client.Create(ctx, sa))).To(Succeed())
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: "e2e-token", Namespace: "default",
					Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name},
				},
				Type: corev1.SecretTypeServiceAccountToken,
			}
			Expect(client.IgnoreAlreadyExists(m.Client.Create(ctx, secret))).To(Succeed())
			Eventually(func() []byte {
				got := &corev1.Secret{}
				if err := m.Client.Get(ctx, client.ObjectKeyFromObject(secret), got); err != nil {
					return nil
				}
				return got.Data[corev1.ServiceAccountTokenKey]
			}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).ShouldNot(BeEmpty(), "token in %s", m.Name)
		}
	})
})
