package kubefedctl

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fullAccessRules grant the control plane everything on every resource,
// which propagating arbitrary federated types requires.
func fullAccessRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups: []string{rbacv1.APIGroupAll},
		Resources: []string{rbacv1.ResourceAll},
		Verbs:     []string{rbacv1.VerbAll},
	}}
}

// healthCheckRules are what the cluster controller needs outside the
// KubeFed namespace of a Namespaced-scope member, and nothing more:
//   - the health and version endpoints it probes (Ready condition,
//     status.kubernetesVersion);
//   - the discovery endpoints behind status.apiEnablements;
//   - reading Nodes (get, list, watch) for zones, region, the node summary
//     and allocatable resources;
//   - listing Pods for the allocated resources summary (controllers/cluster
//     lists them; it never reads them one by one or watches them).
//
// Discovery and health endpoints are usually open to every authenticated
// user through system:discovery, but clusters that tighten that binding
// must not break health checks.
func healthCheckRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{
			NonResourceURLs: []string{"/healthz", "/readyz", "/livez", "/version", "/api", "/api/*", "/apis", "/apis/*"},
			Verbs:           []string{"get"},
		},
		{
			APIGroups: []string{""},
			Resources: []string{"nodes"},
			Verbs:     []string{"get", "list", "watch"},
		},
		{
			APIGroups: []string{""},
			Resources: []string{"pods"},
			Verbs:     []string{"list"},
		},
	}
}

// clusterScopeRole is the Cluster-scope grant: every resource in every
// namespace plus read access to every non-resource URL.
func clusterScopeRole(r registration) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: r.roleName(), Labels: r.labels()},
		Rules: append(fullAccessRules(), rbacv1.PolicyRule{
			NonResourceURLs: []string{rbacv1.NonResourceAll},
			Verbs:           []string{"get"},
		}),
	}
}

// namespaceScopeRole is the Namespaced-scope grant: every resource in the
// KubeFed namespace only.
func namespaceScopeRole(r registration) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: r.roleName(), Namespace: r.namespace, Labels: r.labels()},
		Rules:      fullAccessRules(),
	}
}

// healthCheckRole complements namespaceScopeRole with healthCheckRules.
func healthCheckRole(r registration) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: r.healthCheckRoleName(), Labels: r.labels()},
		Rules:      healthCheckRules(),
	}
}

func serviceAccountSubjects(r registration) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: r.serviceAccountName(), Namespace: r.namespace}}
}

// clusterRoleBinding binds the ClusterRole of the same name to the
// registration's ServiceAccount.
func clusterRoleBinding(r registration, name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.labels()},
		Subjects:   serviceAccountSubjects(r),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
}

// roleBinding binds namespaceScopeRole to the registration's ServiceAccount.
func roleBinding(r registration) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.roleName(), Namespace: r.namespace, Labels: r.labels()},
		Subjects:   serviceAccountSubjects(r),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.roleName()},
	}
}
