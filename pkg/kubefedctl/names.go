package kubefedctl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels on every object join creates. They let unjoin and a re-run of join
// tell join's own objects from objects someone else created under the same
// names. KubeFed's kubefed.io/managed label is deliberately not used: it
// marks propagated objects, and the sync controller would strip it.
const (
	// ManagedByLabel is the standard label naming the tool that manages an object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value on objects join created.
	ManagedByValue = "kubefedctl"
	// JoinedClusterLabel names the KubeFedCluster an object was created for.
	// The member's KubeFed namespace is shared by every registration, so it
	// carries only ManagedByLabel.
	JoinedClusterLabel = "kubefed.io/joined-cluster"
)

// Keys of the Secrets that hold a member's credentials, in the member's
// token Secret and in the host's copy alike.
const (
	tokenKey  = "token"
	caCertKey = "ca.crt"
)

// registration names everything join creates for one member of one host.
// Names are deterministic, so that a re-run finds what an earlier run made,
// and they are KubeFed's, so that unjoin also cleans clusters KubeFed joined.
type registration struct {
	// clusterName is the KubeFedCluster's name.
	clusterName string
	// hostClusterName identifies the host in member-side names.
	hostClusterName string
	// namespace is the KubeFed namespace, the same in host and member.
	namespace string
	// agent names the host-side account of a Pull-mode member's agent
	// instead of the member-side account of the control plane.
	agent bool
}

// newRegistration validates the names a registration derives from.
// hostClusterName is sanitized, as it usually comes from a kubeconfig
// context name such as "arn:aws:eks:eu-west-1:1234:cluster/prod".
func newRegistration(clusterName, hostClusterName, namespace string) (registration, error) {
	if errs := validation.IsDNS1123Subdomain(clusterName); len(errs) > 0 {
		return registration{}, fmt.Errorf("invalid cluster name %q (it names the KubeFedCluster): %s", clusterName, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return registration{}, fmt.Errorf("invalid --kubefed-namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	host := sanitizeName(hostClusterName)
	if host == "" {
		return registration{}, fmt.Errorf("host cluster name %q has no character valid in a Kubernetes name; pass --host-cluster-name", hostClusterName)
	}
	r := registration{clusterName: clusterName, hostClusterName: host, namespace: namespace}
	for _, name := range []string{r.serviceAccountName(), r.tokenSecretName(), r.roleName(), r.healthCheckRoleName()} {
		if len(name) > validation.DNS1123SubdomainMaxLength {
			return registration{}, fmt.Errorf("derived object name %q is longer than %d characters; pass a shorter --host-cluster-name",
				name, validation.DNS1123SubdomainMaxLength)
		}
	}
	return r, nil
}

// serviceAccountName is the member ServiceAccount whose token the host uses.
func (r registration) serviceAccountName() string {
	if r.agent {
		return "kubefed-agent-" + r.clusterName
	}
	return r.clusterName + "-" + r.hostClusterName
}

// tokenSecretName is the member Secret the token controller fills with the
// ServiceAccount's long-lived token.
func (r registration) tokenSecretName() string {
	return r.serviceAccountName() + "-token"
}

// roleName names the ClusterRole (Cluster scope) or Role (Namespaced scope)
// granting the control plane its access, and the binding of it.
func (r registration) roleName() string {
	if r.agent {
		return "kubefed-agent:" + r.clusterName
	}
	return "kubefed-controller-manager:" + r.serviceAccountName()
}

// healthCheckRoleName names the ClusterRole and binding a Namespaced-scope
// member needs for health checks outside the namespace; KubeFed's name.
func (r registration) healthCheckRoleName() string {
	return "kubefed-controller-manager:" + r.namespace + ":healthcheck-" + r.serviceAccountName()
}

// labels are put on every object created for the registration.
func (r registration) labels() map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, JoinedClusterLabel: labelValue(r.clusterName)}
}

// createdForRegistration reports whether join created the object for r.
func (r registration) createdForRegistration(labels map[string]string) bool {
	return labels[ManagedByLabel] == ManagedByValue && labels[JoinedClusterLabel] == labelValue(r.clusterName)
}

// sanitizeName makes s a DNS-1123 subdomain the way KubeFed users expect of
// host names in object names: lowercase, every other invalid character
// replaced by '-', and each dot-separated part trimmed to start and end
// alphanumerically. It returns "" when nothing valid is left.
func sanitizeName(s string) string {
	var parts []string
	for part := range strings.SplitSeq(strings.ToLower(s), ".") {
		mapped := strings.Map(func(r rune) rune {
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
				return r
			}
			return '-'
		}, part)
		if mapped = strings.Trim(mapped, "-"); mapped != "" {
			parts = append(parts, mapped)
		}
	}
	return strings.Join(parts, ".")
}

// labelValue fits a DNS-1123 subdomain into a label value's 63 characters.
// Longer names keep a readable prefix and get a hash suffix, so distinct
// names stay distinct.
func labelValue(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := strings.TrimRight(name[:validation.LabelValueMaxLength-len(suffix)-1], "-.")
	return prefix + "-" + suffix
}
