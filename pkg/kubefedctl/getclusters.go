package kubefedctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/sharding"
)

const getClustersLong = `List the member clusters joined to the control plane, from the status
their health checks write into each KubeFedCluster:
  READY     True when the cluster answers its health check, False when it
            does not (-o wide says why), Unknown before the first check
  VERSION   the cluster's Kubernetes version
  NODES     ready/total nodes
  ZONES, REGION  from the topology labels of the cluster's nodes
  MODE      (-o wide) Push, or Pull for a member whose agent propagates to it
  REPLICA   (-o wide) the controller-manager replica that propagates to the
            cluster: with --scale-out the holder of its fence Lease, else
            the elected leader; <agent> for a Pull-mode member`

const getClustersExample = `  # All member clusters
  kubefedctl get clusters

  # Two of them, with the reason a cluster is not ready and its endpoint
  kubefedctl get clusters member1 member2 -o wide`

func newGetCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Display the control plane's objects",
	}
	cmd.AddCommand(newGetClustersCommand(g, streams))
	return cmd
}

type getClustersOptions struct {
	g      *globalOptions
	output string
}

func newGetClustersCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &getClustersOptions{g: g}
	cmd := &cobra.Command{
		Use:     "clusters [NAME...]",
		Aliases: []string{"cluster", "kubefedclusters", "kubefedcluster"},
		Short:   "List member clusters with their health, version and nodes",
		Long:    getClustersLong,
		Example: getClustersExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "", "wide", "json", "yaml":
			default:
				return fmt.Errorf("invalid --output %q: must be wide, json or yaml", o.output)
			}
			return o.run(cmd.Context(), streams, args)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "",
		"Output format: wide (adds the API endpoint, serving replica, reason and message), json or yaml. Defaults to a table.")
	return cmd
}

func (o *getClustersOptions) run(ctx context.Context, streams IOStreams, names []string) error {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return err
	}
	var list corev1beta1.KubeFedClusterList
	if err := host.fed.List(ctx, &list, client.InNamespace(o.g.kubefedNamespace)); err != nil {
		return fmt.Errorf("list KubeFedClusters in namespace %q of %s: %w", o.g.kubefedNamespace, host.context, err)
	}
	clusters, err := selectClusters(list.Items, names)
	if err != nil {
		return fmt.Errorf("%w in namespace %q of %s", err, o.g.kubefedNamespace, host.context)
	}
	switch o.output {
	case "json", "yaml":
		return printStructured(streams.Out, o.output, clusterList(clusters))
	}
	if len(clusters) == 0 {
		fmt.Fprintf(streams.ErrOut, "No member clusters joined in namespace %s.\n", o.g.kubefedNamespace)
		return nil
	}
	var serving func(string) string
	if o.output == "wide" {
		serving = servingReplicas(ctx, host.fed, o.g.kubefedNamespace)
	}
	return printClusterTable(streams.Out, clusters, clock(), serving)
}

// servingReplicas tells which replica propagates to each cluster: the
// holder of its fence Lease when replicas scale out, the leader's
// otherwise; "<none>" while nobody does (a fence being handed over) and
// "<unknown>" when the Leases cannot be read.
func servingReplicas(ctx context.Context, c client.Reader, namespace string) func(string) string {
	fences, err := sharding.FenceHolders(ctx, c, namespace)
	if err != nil {
		return func(string) string { return "<unknown>" }
	}
	if len(fences) == 0 {
		var leader coordinationv1.Lease
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: corev1beta1.ControllerManagerLeaseName}, &leader)
		switch {
		case apierrors.IsNotFound(err):
			return func(string) string { return "<none>" }
		case err != nil:
			return func(string) string { return "<unknown>" }
		}
		return func(string) string { return orNone(ptr.Deref(leader.Spec.HolderIdentity, "")) }
	}
	return func(cluster string) string { return orNone(fences[cluster]) }
}

// selectClusters returns the named clusters in the order named, or all
// sorted by name when none is named.
func selectClusters(all []corev1beta1.KubeFedCluster, names []string) ([]corev1beta1.KubeFedCluster, error) {
	if len(names) == 0 {
		sorted := append([]corev1beta1.KubeFedCluster(nil), all...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		return sorted, nil
	}
	byName := map[string]corev1beta1.KubeFedCluster{}
	for _, c := range all {
		byName[c.Name] = c
	}
	var selected []corev1beta1.KubeFedCluster
	var missing []string
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		selected = append(selected, c)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("KubeFedCluster %s not found", strings.Join(missing, ", "))
	}
	return selected, nil
}

// clusterList is the clusters as kubectl prints a list: a v1 List of
// complete objects, without the managed fields nobody reads.
func clusterList(clusters []corev1beta1.KubeFedCluster) map[string]any {
	items := make([]any, 0, len(clusters))
	for _, c := range clusters {
		c := *c.DeepCopy()
		c.APIVersion, c.Kind = corev1beta1.GroupVersion.String(), "KubeFedCluster"
		c.ManagedFields = nil
		items = append(items, c)
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{}}
}

// printClusterTable prints the clusters; serving, set for -o wide, names
// the replica serving each.
func printClusterTable(out io.Writer, clusters []corev1beta1.KubeFedCluster, now time.Time, serving func(string) string) error {
	wide := serving != nil
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := []string{"NAME", "READY", "VERSION", "NODES", "ZONES", "REGION", "AGE"}
	if wide {
		// MODE is last: scripts that read the columns before it keep working.
		header = append(header, "API-ENDPOINT", "REPLICA", "REASON", "MESSAGE", "MODE")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range clusters {
		c := &clusters[i]
		ready, reason, message := string(corev1.ConditionUnknown), "", ""
		if cond := c.ReadyCondition(); cond != nil {
			ready = string(cond.Status)
			reason, message = ptr.Deref(cond.Reason, ""), ptr.Deref(cond.Message, "")
		}
		version := c.Status.KubernetesVersion
		if version == "" {
			version = "<unknown>"
		}
		nodes := "<unknown>"
		if n := c.Status.NodeSummary; n != nil {
			nodes = fmt.Sprintf("%d/%d", n.ReadyNum, n.TotalNum)
		}
		row := []string{
			c.Name, ready, version, nodes,
			orNone(strings.Join(c.Status.Zones, ",")), orNone(ptr.Deref(c.Status.Region, "")),
			age(c.CreationTimestamp, now),
		}
		if wide {
			mode, replica := string(corev1beta1.ClusterModePush), serving(c.Name)
			if c.PullMode() {
				// Its own agent propagates to it.
				mode, replica = string(corev1beta1.ClusterModePull), "<agent>"
			}
			row = append(row, c.Spec.APIEndpoint, replica, orNone(reason), orNone(message), mode)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}
