package kubefedctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

const statusLong = `Show where federated objects are propagated and what went wrong.

One row per federated object, one column per member cluster:
  OK          the object is propagated to the cluster
  <reason>    propagation to the cluster failed, e.g. UpdateFailed,
              ClusterNotReady or AlreadyExists
  -           the object is not placed in the cluster
A workload's cell adds its ready count there, such as "OK 3/3", and the
READY column sums it over the clusters (ready over desired replicas; Jobs:
succeeded over completions), as ` + "`kubectl get`" + ` shows it for the kind; READY is
shown when some object has it.
The PROPAGATION column is the object's Propagation condition: OK, the
reason it failed (CheckClusters when some cluster failed,
NamespaceNotFederated, ...), Pending while the control plane has not acted
on the object's latest change, or Deleting. A summary line follows.

TYPE is the target type or the federated type, by any name enable accepts
(deployments, deployments.apps, FederatedDeployment, fdeploy), or the
FederatedTypeConfig's name; without TYPE every enabled type is shown.
Cluster-scoped federated types are shown with --all-namespaces or when
named.`

const statusExample = `  # Everything federated in the namespace demo
  kubefedctl status -n demo

  # Every FederatedDeployment, in all namespaces, with the condition messages
  kubefedctl status deployments -A -o wide

  # One object, for a script
  kubefedctl status fdeploy web -n demo -o json`

// Per-cluster states of a federated object.
const (
	// PlacementOK is a cluster the object is propagated to.
	PlacementOK = "OK"
	// PlacementFailed is a cluster where propagation failed; the reason says why.
	PlacementFailed = "Failed"
	// PlacementNotPlaced is a cluster the object is not placed in.
	PlacementNotPlaced = "NotPlaced"
)

// States of a federated object's propagation as a whole.
const (
	// PropagationOK means the Propagation condition is True.
	PropagationOK = "OK"
	// PropagationFailed means the condition is False; its reason says why.
	PropagationFailed = "Failed"
	// PropagationPending means the control plane has not reported on the
	// object's current generation yet.
	PropagationPending = "Pending"
	// PropagationDeleting means the object is being deleted.
	PropagationDeleting = "Deleting"
	// PropagationUnknown means the condition's status is Unknown.
	PropagationUnknown = "Unknown"
)

// notPlacedCell is how the table shows a cluster the object is not placed in.
const notPlacedCell = "-"

// clock tells the time the AGE columns count from; golden tests fix it.
var clock = time.Now

// statusReport is what `status` prints; -o json and -o yaml print it as is.
type statusReport struct {
	// Clusters are the member clusters, joined ones first by name, then
	// those only named by some object's status.
	Clusters []clusterReadiness `json:"clusters"`
	Objects  []objectStatus     `json:"objects"`
	Summary  statusSummary      `json:"summary"`
}

// clusterReadiness is a member cluster as the status report sees it.
type clusterReadiness struct {
	Name string `json:"name"`
	// Joined is false for a cluster that only an object's status names,
	// such as one its placement lists but that is not joined.
	Joined bool `json:"joined"`
	// Mode is Push or Pull (an agent in the member reports); empty when
	// not joined.
	Mode  corev1beta1.ClusterMode `json:"mode,omitempty"`
	Ready bool                    `json:"ready"`
	// Reason is the Ready condition's reason when the cluster is not ready.
	Reason string `json:"reason,omitempty"`
}

// objectStatus is one federated object's propagation.
type objectStatus struct {
	APIVersion  string           `json:"apiVersion"`
	Kind        string           `json:"kind"`
	Namespace   string           `json:"namespace,omitempty"`
	Name        string           `json:"name"`
	Propagation propagationState `json:"propagation"`
	// Ready is <ready>/<desired> over the clusters, for the kinds whose
	// status is aggregated (status.ready).
	Ready    string             `json:"ready,omitempty"`
	Clusters []clusterPlacement `json:"clusters"`

	created metav1.Time
}

// propagationState is the object's Propagation condition in one word.
type propagationState struct {
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// clusterPlacement is the object's state in one cluster.
type clusterPlacement struct {
	Cluster string `json:"cluster"`
	State   string `json:"state"`
	// Reason is the cluster's propagation status when State is Failed.
	Reason string `json:"reason,omitempty"`
	// Ready is the copy's <ready>/<desired>, when the status is aggregated.
	Ready string `json:"ready,omitempty"`
}

// statusSummary counts objects and placements.
type statusSummary struct {
	Objects  int `json:"objects"`
	Clusters int `json:"clusters"`
	// OK, Failed and NotPlaced count (object, cluster) pairs.
	OK        int `json:"ok"`
	Failed    int `json:"failed"`
	NotPlaced int `json:"notPlaced"`
	// NotPropagated counts objects whose Propagation is not OK.
	NotPropagated int `json:"notPropagated"`
	// NotReadyClusters names the joined clusters that are not Ready.
	NotReadyClusters []string `json:"notReadyClusters,omitempty"`
}

type statusOptions struct {
	g             *globalOptions
	namespace     string
	allNamespaces bool
	output        string
}

func newStatusCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &statusOptions{g: g}
	cmd := &cobra.Command{
		Use:     "status [TYPE [NAME]]",
		Short:   "Show where federated objects are propagated and what went wrong",
		Long:    statusLong,
		Example: statusExample,
		Args:    cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.output {
			case "", "wide", "json", "yaml":
			default:
				return fmt.Errorf("invalid --output %q: must be wide, json or yaml", o.output)
			}
			if o.allNamespaces && len(args) == 2 {
				return fmt.Errorf("--all-namespaces cannot be used with NAME")
			}
			return o.run(cmd.Context(), streams, args)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "",
		"Namespace of the federated objects. Defaults to the kubeconfig context's namespace, else default.")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"Show federated objects of all namespaces, and those of cluster-scoped types.")
	cmd.Flags().StringVarP(&o.output, "output", "o", "",
		"Output format: wide (adds the condition message and age), json or yaml. Defaults to a table.")
	return cmd
}

// statusQuery is which federated objects status reads.
type statusQuery struct {
	ftcs []corev1beta1.FederatedTypeConfig
	// named is set when the user named the type.
	named bool
	// name is the one object to show, "" for all.
	name string
	// namespace is where namespaced objects are read; "" means all.
	namespace string
}

func (o *statusOptions) run(ctx context.Context, streams IOStreams, args []string) error {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return err
	}
	q := statusQuery{}
	if len(args) > 0 {
		ftc, err := findTypeConfig(ctx, host, o.g.kubefedNamespace, args[0])
		if err != nil {
			return err
		}
		q.ftcs, q.named = []corev1beta1.FederatedTypeConfig{*ftc}, true
	} else if q.ftcs, err = listTypeConfigs(ctx, host, o.g.kubefedNamespace); err != nil {
		return err
	}
	if len(args) > 1 {
		q.name = args[1]
	}
	switch {
	case o.allNamespaces:
	case o.namespace != "":
		q.namespace = o.namespace
	case q.name != "" && q.named && q.ftcs[0].IsNamespace():
		// A FederatedNamespace lives in the namespace it federates.
		q.namespace = q.name
	case host.namespace != "":
		q.namespace = host.namespace
	default:
		q.namespace = metav1.NamespaceDefault
	}

	var clusters corev1beta1.KubeFedClusterList
	if err := host.fed.List(ctx, &clusters, client.InNamespace(o.g.kubefedNamespace)); err != nil {
		return fmt.Errorf("list KubeFedClusters in namespace %q of %s: %w", o.g.kubefedNamespace, host.context, err)
	}
	objects, err := readFederatedObjects(ctx, host, q, streams.ErrOut)
	if err != nil {
		return err
	}
	report, err := buildStatusReport(clusters.Items, objects)
	if err != nil {
		return err
	}

	switch o.output {
	case "json", "yaml":
		return printStructured(streams.Out, o.output, report)
	}
	if len(report.Objects) == 0 {
		where := "in any namespace"
		if q.namespace != "" {
			where = fmt.Sprintf("in namespace %s", q.namespace)
		}
		fmt.Fprintf(streams.ErrOut, "No federated objects found %s.\n", where)
		return nil
	}
	return printStatusTable(streams.Out, report, clock(), o.output == "wide", o.allNamespaces)
}

// readFederatedObjects reads the objects a query designates. A type whose
// objects cannot be listed is skipped with a warning, unless it is the one
// the user named.
func readFederatedObjects(ctx context.Context, host *cluster, q statusQuery, warn io.Writer) ([]unstructured.Unstructured, error) {
	var objects []unstructured.Unstructured
	for _, ftc := range q.ftcs {
		fed := ftc.Spec.FederatedType
		namespace := q.namespace
		if !fed.Namespaced() {
			if q.namespace != "" && !q.named {
				continue
			}
			namespace = ""
		}
		res := host.dynamic.Resource(gvrOf(fed)).Namespace(namespace)
		if q.name != "" {
			obj, err := res.Get(ctx, q.name, metav1.GetOptions{})
			if err != nil {
				ref := objectRef{Kind: fed.Kind, Namespace: namespace, Name: q.name}
				if apierrors.IsNotFound(err) {
					return nil, fmt.Errorf("%s not found in %s", ref, host.context)
				}
				return nil, fmt.Errorf("get %s in %s: %w", ref, host.context, err)
			}
			objects = append(objects, *obj)
			continue
		}
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			err = fmt.Errorf("list %s in %s: %w", describeType(fed), host.context, err)
			if q.named {
				return nil, err
			}
			fmt.Fprintf(warn, "Warning: %v\n", err)
			continue
		}
		objects = append(objects, list.Items...)
	}
	return objects, nil
}

// buildStatusReport turns the joined clusters and the federated objects
// into the report: each object's state in each cluster, and the counts.
func buildStatusReport(joined []corev1beta1.KubeFedCluster, objects []unstructured.Unstructured) (statusReport, error) {
	report := statusReport{Objects: []objectStatus{}, Clusters: []clusterReadiness{}}
	known := map[string]bool{}
	sort.Slice(joined, func(i, j int) bool { return joined[i].Name < joined[j].Name })
	for _, c := range joined {
		r := clusterReadiness{Name: c.Name, Joined: true, Mode: corev1beta1.ClusterModePush}
		if c.PullMode() {
			r.Mode = corev1beta1.ClusterModePull
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == corev1beta1.ClusterReady {
				r.Ready = cond.Status == corev1.ConditionTrue
				if !r.Ready {
					r.Reason = ptr.Deref(cond.Reason, "")
				}
			}
		}
		if !r.Ready && r.Reason == "" {
			r.Reason = "Unknown"
		}
		report.Clusters = append(report.Clusters, r)
		known[c.Name] = true
	}

	type decoded struct {
		obj    unstructured.Unstructured
		status typesv1beta1.FederatedObjectStatus
	}
	all := make([]decoded, 0, len(objects))
	var unjoined []string
	for _, obj := range objects {
		d := decoded{obj: obj}
		if raw, ok := obj.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &d.status); err != nil {
				ref := objectRef{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
				return report, fmt.Errorf("read the status of %s: %w", ref, err)
			}
		}
		for _, c := range d.status.Clusters {
			if !known[c.Name] {
				known[c.Name] = true
				unjoined = append(unjoined, c.Name)
			}
		}
		all = append(all, d)
	}
	sort.Strings(unjoined)
	for _, name := range unjoined {
		report.Clusters = append(report.Clusters, clusterReadiness{Name: name, Reason: "NotJoined"})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := &all[i].obj, &all[j].obj
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})

	s := &report.Summary
	s.Clusters = len(joined)
	for _, c := range report.Clusters {
		if c.Joined && !c.Ready {
			s.NotReadyClusters = append(s.NotReadyClusters, c.Name)
		}
	}
	for _, d := range all {
		o := objectStatus{
			APIVersion:  d.obj.GetAPIVersion(),
			Kind:        d.obj.GetKind(),
			Namespace:   d.obj.GetNamespace(),
			Name:        d.obj.GetName(),
			Propagation: propagationOf(&d.obj, &d.status),
			Ready:       d.status.Ready,
			created:     d.obj.GetCreationTimestamp(),
		}
		outcome := map[string]typesv1beta1.ClusterStatus{}
		for _, c := range d.status.Clusters {
			outcome[c.Name] = c
		}
		for _, c := range report.Clusters {
			p := clusterPlacement{Cluster: c.Name, State: PlacementNotPlaced}
			if v, placed := outcome[c.Name]; placed {
				p.State, p.Ready = PlacementOK, v.Ready
				if v.Status != "" {
					p.State, p.Reason = PlacementFailed, string(v.Status)
				}
			}
			switch p.State {
			case PlacementOK:
				s.OK++
			case PlacementFailed:
				s.Failed++
			default:
				if c.Joined {
					s.NotPlaced++
				}
			}
			o.Clusters = append(o.Clusters, p)
		}
		if o.Propagation.State != PropagationOK {
			s.NotPropagated++
		}
		report.Objects = append(report.Objects, o)
	}
	s.Objects = len(report.Objects)
	return report, nil
}

// propagationOf reads the Propagation condition, judging it stale when the
// control plane has not reported on the object's current generation.
func propagationOf(obj *unstructured.Unstructured, status *typesv1beta1.FederatedObjectStatus) propagationState {
	if obj.GetDeletionTimestamp() != nil {
		return propagationState{State: PropagationDeleting}
	}
	var cond *typesv1beta1.GenericCondition
	for i := range status.Conditions {
		if status.Conditions[i].Type == typesv1beta1.ConditionPropagation {
			cond = &status.Conditions[i]
		}
	}
	if cond == nil {
		return propagationState{State: PropagationPending, Message: "the control plane has not reported on this object yet"}
	}
	p := propagationState{Reason: cond.Reason, Message: cond.Message}
	switch {
	case status.ObservedGeneration != 0 && status.ObservedGeneration < obj.GetGeneration():
		p.State = PropagationPending
		if p.Message == "" {
			p.Message = fmt.Sprintf("the status is of generation %d, the object is at %d", status.ObservedGeneration, obj.GetGeneration())
		}
	case cond.Status == metav1.ConditionTrue:
		p.State = PropagationOK
	case cond.Status == metav1.ConditionFalse:
		p.State = PropagationFailed
	default:
		p.State = PropagationUnknown
	}
	return p
}

// propagationCell is how the table shows an object's propagation.
func propagationCell(p propagationState) string {
	if p.State == PropagationFailed && p.Reason != "" {
		return p.Reason
	}
	return p.State
}

// placementCell is how the table shows an object's state in a cluster,
// with the copy's ready count when there is one.
func placementCell(p clusterPlacement) string {
	cell := p.State
	switch p.State {
	case PlacementNotPlaced:
		return notPlacedCell
	case PlacementFailed:
		cell = p.Reason
	}
	if p.Ready != "" {
		cell += " " + p.Ready
	}
	return cell
}

// printStatusTable prints one row per object and the summary.
func printStatusTable(out io.Writer, r statusReport, now time.Time, wide, withNamespace bool) error {
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	var header []string
	if withNamespace {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "KIND", "NAME", "PROPAGATION")
	withReady := slices.ContainsFunc(r.Objects, func(o objectStatus) bool { return o.Ready != "" })
	if withReady {
		header = append(header, "READY")
	}
	for _, c := range r.Clusters {
		header = append(header, c.Name)
	}
	if wide {
		header = append(header, "AGE", "MESSAGE")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, o := range r.Objects {
		var row []string
		if withNamespace {
			row = append(row, orNone(o.Namespace))
		}
		row = append(row, o.Kind, o.Name, propagationCell(o.Propagation))
		if withReady {
			row = append(row, o.Ready)
		}
		for _, p := range o.Clusters {
			row = append(row, placementCell(p))
		}
		if wide {
			row = append(row, age(o.created, now), orNone(o.Propagation.Message))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, summaryLine(r))
	if len(r.Summary.NotReadyClusters) > 0 {
		var names []string
		for _, c := range r.Clusters {
			if c.Joined && !c.Ready {
				names = append(names, fmt.Sprintf("%s (%s)", c.Name, c.Reason))
			}
		}
		fmt.Fprintf(out, "Not ready: %s.\n", strings.Join(names, ", "))
	}
	var pulled []string
	for _, c := range r.Clusters {
		if c.Mode == corev1beta1.ClusterModePull {
			pulled = append(pulled, c.Name)
		}
	}
	if len(pulled) > 0 {
		fmt.Fprintf(out, "Pull mode: %s (an agent in the member propagates and reports).\n", strings.Join(pulled, ", "))
	}
	for _, c := range r.Clusters {
		if !c.Joined {
			fmt.Fprintf(out, "Not joined: %s is named by an object's status but has no KubeFedCluster.\n", c.Name)
		}
	}
	return nil
}

// summaryLine counts objects, clusters and placements in one sentence.
func summaryLine(r statusReport) string {
	s := r.Summary
	line := fmt.Sprintf("%s, %s; placements: %d OK, %d failed, %d not placed",
		plural(s.Objects, "federated object"), plural(s.Clusters, "member cluster"), s.OK, s.Failed, s.NotPlaced)
	if s.NotPropagated > 0 {
		reasons := map[string]int{}
		for _, o := range r.Objects {
			if o.Propagation.State != PropagationOK {
				reasons[propagationCell(o.Propagation)]++
			}
		}
		keys := make([]string, 0, len(reasons))
		for k := range reasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%d %s", reasons[k], k)
		}
		line += fmt.Sprintf("; not fully propagated: %s (%s)", plural(s.NotPropagated, "object"), strings.Join(parts, ", "))
	}
	return line + "."
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// age is kubectl's rendering of how long ago t was.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// printStructured prints v as indented JSON, as kubectl does, or as YAML.
func printStructured(out io.Writer, format string, v any) error {
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(v, "", "    ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", format, err)
	}
	_, err = out.Write(data)
	return err
}
