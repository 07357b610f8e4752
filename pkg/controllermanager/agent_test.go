package controllermanager

import (
	"strings"
	"testing"
)

func TestAgentOptionsValidation(t *testing.T) {
	o := DefaultAgentOptions()
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--cluster-name") || !strings.Contains(err.Error(), "--host-kubeconfig is required") {
		t.Errorf("defaults: %v, want both required flags named", err)
	}
	o.ClusterName, o.HostKubeconfig = "Edge_1", "/etc/kubefed/host/kubeconfig"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `got "Edge_1"`) {
		t.Errorf("bad name: %v", err)
	}
	o.ClusterName = "edge1"
	if err := o.Validate(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

// An agent writes to its own cluster while that is in Pull mode, never to
// another, and owns no finalizer and no cluster name that is not joined.
func TestAgentShard(t *testing.T) {
	pulled := &pullMembers{namespace: "kube-federation-system", pulled: map[string]bool{"edge1": true}}
	s := agentShard{cluster: "edge1", pulled: pulled}
	if !s.Holds("edge1") || s.Holds("edge2") || s.Assigned("federatedconfigmaps/ns/x") || s.Assigned("nowhere") {
		t.Errorf("holds edge1 %v, edge2 %v", s.Holds("edge1"), s.Holds("edge2"))
	}
	if _, ok := s.WriteDeadline("edge2"); ok {
		t.Error("a write deadline for another cluster")
	}
	pulled.pulled = map[string]bool{}
	if s.Holds("edge1") {
		t.Error("the agent still writes to its cluster after it was joined back in push mode")
	}
}
