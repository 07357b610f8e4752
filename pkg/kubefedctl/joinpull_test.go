package kubefedctl

import (
	"slices"
	"testing"
)

// The agent's host role reads federated objects and its own cluster only:
// no rule reaches Secrets or another KubeFedCluster, and none writes a
// federated object itself (only its status).
func TestAgentRoleGrantsNoSecretAndNoOtherCluster(t *testing.T) {
	r := registration{clusterName: "edge", hostClusterName: "host", namespace: "kube-federation-system"}.agentRegistration()
	role := agentClusterRole(r, []string{"types.kubefed.io", "fed.example.com"})
	if r.serviceAccountName() != "kubefed-agent-edge" || role.Name != "kubefed-agent:edge" {
		t.Errorf("names %s, %s", r.serviceAccountName(), role.Name)
	}
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			if g == "" && slices.ContainsFunc(rule.Resources, func(res string) bool { return res == "secrets" || res == "*" }) {
				t.Errorf("rule %+v reaches Secrets", rule)
			}
			if g == "core.kubefed.io" && slices.Contains(rule.Resources, "kubefedclusters") && !slices.Equal(rule.ResourceNames, []string{"edge"}) {
				t.Errorf("rule %+v reaches other clusters", rule)
			}
			if slices.Contains(rule.Resources, "*") && slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				t.Errorf("rule %+v writes federated objects", rule)
			}
		}
	}
}

// The agent renews its own heartbeat Lease and no other: join creates the
// Lease, and the Role names it.
func TestAgentMayRenewItsOwnLeaseOnly(t *testing.T) {
	r := registration{clusterName: "edge", hostClusterName: "host", namespace: "kube-federation-system"}.agentRegistration()
	for _, rule := range agentClusterRole(r, []string{"types.kubefed.io"}).Rules {
		if slices.Contains(rule.Resources, "leases") {
			t.Errorf("the cluster-wide role reaches Leases: %+v", rule)
		}
	}
	role := agentLeaseRole(r)
	if role.Namespace != r.namespace || len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, []string{"kubefed-agent-edge"}) ||
		slices.Contains(role.Rules[0].Verbs, "create") {
		t.Errorf("lease role %+v", role)
	}
}
