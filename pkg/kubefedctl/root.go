package kubefedctl

import (
	"flag"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// IOStreams are where a command writes: results to Out, warnings and errors
// to ErrOut, as kubectl does.
type IOStreams struct {
	Out    io.Writer
	ErrOut io.Writer
}

// defaultRequestTimeout bounds each API request so that an unreachable
// member fails a command instead of hanging it on a TCP timeout.
const defaultRequestTimeout = 30 * time.Second

// globalOptions are the flags every verb shares.
type globalOptions struct {
	kubeconfig         string
	hostClusterContext string
	kubefedNamespace   string
	requestTimeout     time.Duration

	// newConnector opens the kubeconfig; tests replace it with fakes.
	newConnector func(*globalOptions, IOStreams) clusterConnector
}

// NewRootCommand returns the kubefedctl command with all its verbs.
func NewRootCommand(streams IOStreams) *cobra.Command {
	return newRootCommand(streams, newKubeconfigConnector)
}

func newRootCommand(streams IOStreams, newConnector func(*globalOptions, IOStreams) clusterConnector) *cobra.Command {
	g := &globalOptions{newConnector: newConnector}
	cmd := &cobra.Command{
		Use:   "kubefedctl",
		Short: "kubefedctl controls a KubeFed control plane",
		Long: `kubefedctl registers member clusters with a KubeFed-compatible control plane
(join, unjoin) and manages what it federates (enable, disable, federate,
orphaning-deletion), and shows where everything is (status, get clusters,
dashboard). It reads the same kubeconfig as kubectl.`,
		// Errors are printed once, by main, in kubectl's "error: ..." form;
		// a failed API call is no reason to print the usage.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)

	flags := cmd.PersistentFlags()
	flags.StringVar(&g.kubeconfig, "kubeconfig", "",
		"Path to the kubeconfig file. Defaults to $KUBECONFIG, then ~/.kube/config.")
	flags.StringVar(&g.hostClusterContext, "host-cluster-context", "",
		"Kubeconfig context of the cluster hosting the KubeFed control plane. Defaults to the current context.")
	flags.StringVar(&g.kubefedNamespace, "kubefed-namespace", corev1beta1.DefaultKubeFedNamespace,
		"Namespace of the KubeFed control plane in the host cluster; join uses the same namespace in members.")
	flags.DurationVar(&g.requestTimeout, "request-timeout", defaultRequestTimeout,
		"Time limit for each request to a cluster; 0 means no limit.")
	addKlogFlags(flags)

	cmd.AddCommand(
		newJoinCommand(g, streams),
		newUnjoinCommand(g, streams),
		newEnableCommand(g, streams),
		newDisableCommand(g, streams),
		newFederateCommand(g, streams),
		newOrphaningDeletionCommand(g, streams),
		newStatusCommand(g, streams),
		newDashboardCommand(g, streams),
		newGetCommand(g, streams),
		newVersionCommand(streams),
	)
	return cmd
}

// addDryRunFlag binds --dry-run on the verbs that change clusters.
func addDryRunFlag(cmd *cobra.Command, dryRun *bool) {
	cmd.Flags().BoolVar(dryRun, "dry-run", false,
		"Only print what would be created, changed or deleted; the clusters are read but not changed.")
}

// addKlogFlags takes klog's flags, as KubeFed's kubefedctl did: its
// scripts and docs pass --v=2 (or -v). --v and --vmodule are shown; the
// others are accepted, hidden.
func addKlogFlags(flags *pflag.FlagSet) {
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	flags.AddGoFlagSet(gofs)
	gofs.VisitAll(func(f *flag.Flag) {
		if f.Name != "v" && f.Name != "vmodule" {
			_ = flags.MarkHidden(f.Name)
		}
	})
}
