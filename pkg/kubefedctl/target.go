package kubefedctl

import (
	"fmt"

	"github.com/spf13/cobra"
)

// memberOptions are the flags join and unjoin share to find a member.
type memberOptions struct {
	clusterName     string
	clusterContext  string
	hostClusterName string
}

func (m *memberOptions) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.clusterContext, "cluster-context", "",
		"Kubeconfig context of the member cluster. Defaults to CLUSTER_NAME.")
	cmd.Flags().StringVar(&m.hostClusterName, "host-cluster-name", "",
		"Name of the host cluster in the names of member objects. Defaults to the host cluster context, sanitized.")
}

// target is a member and a host resolved from the kubeconfig.
type target struct {
	reg  registration
	host *cluster
	// memberContext is the member's kubeconfig context; member is nil
	// when it could not be resolved, memberErr says why.
	memberContext string
	member        *cluster
	memberErr     error
}

// resolve finds the host and the member in the kubeconfig. It sends no request.
func (m *memberOptions) resolve(g *globalOptions, streams IOStreams) (*target, error) {
	conn := g.newConnector(g, streams)
	hostContext := g.hostClusterContext
	if hostContext == "" {
		var err error
		if hostContext, err = conn.currentContext(); err != nil {
			return nil, err
		}
	}
	hostName := m.hostClusterName
	if hostName == "" {
		hostName = hostContext
	}
	reg, err := newRegistration(m.clusterName, hostName, g.kubefedNamespace)
	if err != nil {
		return nil, err
	}
	host, err := conn.connect(hostContext)
	if err != nil {
		return nil, fmt.Errorf("host cluster: %w", err)
	}
	t := &target{reg: reg, host: host, memberContext: m.clusterContext}
	if t.memberContext == "" {
		t.memberContext = m.clusterName
	}
	if t.member, err = conn.connect(t.memberContext); err != nil {
		t.memberErr = fmt.Errorf("member cluster: %w", err)
	}
	return t, nil
}
