package kubefedctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

const disableLong = `Stop federating an API type.

disable sets spec.propagation of the type's FederatedTypeConfig to Disabled
and waits until the control plane reports its propagation controller
NotRunning (status.propagationController). If no controller-manager answers
within --timeout, disable warns and goes on.

With --delete-crd it then deletes the federated type's
CustomResourceDefinition. That is refused, before anything is changed, while
objects of the federated type exist: deleting the CRD would delete them
without removing what they propagated to member clusters. Delete them first,
while propagation still runs.

Finally disable deletes the FederatedTypeConfig. Objects already propagated
to member clusters stay there.

NAME is the FederatedTypeConfig's name or any name of its target type that
enable accepts (kind, plural, singular, short name, plural.group).`

const disableExample = `  # Stop propagating Deployments, keeping the FederatedDeployment type and objects
  kubefedctl disable deployments.apps

  # Stop federating a custom type and remove its federated type
  kubefedctl disable widgets.example.com --delete-crd`

// defaultStopWait bounds the wait for the control plane to stop a type.
const defaultStopWait = 30 * time.Second

// instancesShown caps the federated objects named in a refusal.
const instancesShown = 10

type disableOptions struct {
	g *globalOptions

	deleteCRD bool
	dryRun    bool
	timeout   time.Duration
	// federatedGroup and federatedVersion name the federated type of a
	// type without a FederatedTypeConfig, for --delete-crd.
	federatedGroup   string
	federatedVersion string

	// Tests shorten it.
	pollInterval time.Duration
}

func newDisableCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &disableOptions{g: g, pollInterval: defaultPollInterval}
	cmd := &cobra.Command{
		Use:     "disable NAME",
		Short:   "Stop federating an API type",
		Long:    disableLong,
		Example: disableExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range []string{"federated-group", "federated-version", "version"} {
				if cmd.Flags().Changed(f) && !o.deleteCRD {
					return fmt.Errorf("--%s is used only with --delete-crd", f)
				}
			}
			return o.run(cmd.Context(), streams, args[0])
		},
	}
	flags := cmd.Flags()
	flags.BoolVar(&o.deleteCRD, "delete-crd", false,
		"Also delete the federated type's CustomResourceDefinition; refused while objects of it exist.")
	flags.DurationVar(&o.timeout, "timeout", defaultStopWait,
		"How long to wait for the control plane to stop propagating the type.")
	addFederatedTypeFlags(cmd, &o.federatedGroup, &o.federatedVersion)
	// KubeFed's disable took --version with --delete-crd; the federated
	// CRD's name does not depend on it.
	flags.String("version", "", "Accepted with --delete-crd for KubeFed compatibility; it changes nothing.")
	addDryRunFlag(cmd, &o.dryRun)
	return cmd
}

func (o *disableOptions) run(ctx context.Context, streams IOStreams, name string) error {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return err
	}
	ftc, err := findTypeConfig(ctx, host, o.g.kubefedNamespace, name)
	var notEnabled *notEnabledError
	if errors.As(err, &notEnabled) {
		// As in KubeFed: nothing to disable is no error, and --delete-crd
		// still deletes the federated type's CRD (an enable that stopped
		// after the CRD leaves one without its FTC), named as enable with
		// --federated-group would name it.
		target := notEnabled.t.target()
		opts := federatedtype.Options{FederatedGroup: o.federatedGroup, FederatedVersion: o.federatedVersion, Namespace: o.g.kubefedNamespace}
		fmt.Fprintf(streams.Out, "FederatedTypeConfig %q does not exist\n", o.g.kubefedNamespace+"/"+target.TypeConfigName())
		if !o.deleteCRD {
			return nil
		}
		d := &disabler{opts: o, host: host, ftc: federatedtype.TypeConfig(target, opts), absent: true,
			out: printer{out: streams.Out, dryRun: o.dryRun}, warn: streams.ErrOut}
		d.ref = typeConfigRef(d.ftc.Namespace, d.ftc.Name)
		if err := d.disable(ctx); err != nil {
			return fmt.Errorf("disable %s: %w", d.ftc.Name, err)
		}
		return nil
	}
	if errors.Is(err, errTypeNotFound) && strings.Contains(name, ".") && !o.deleteCRD {
		// As in KubeFed, which took a name with a dot for the FTC's own
		// name: a type neither enabled nor served any more (a teardown
		// run again) has nothing to disable.
		fmt.Fprintf(streams.Out, "FederatedTypeConfig %q does not exist\n", o.g.kubefedNamespace+"/"+name)
		return nil
	}
	if err != nil {
		return err
	}
	d := &disabler{
		opts: o,
		host: host,
		ftc:  ftc,
		ref:  typeConfigRef(ftc.Namespace, ftc.Name),
		out:  printer{out: streams.Out, dryRun: o.dryRun},
		warn: streams.ErrOut,
	}
	if err := d.disable(ctx); err != nil {
		return fmt.Errorf("disable %s: %w", ftc.Name, err)
	}
	return nil
}

// disabler carries one disable.
type disabler struct {
	opts *disableOptions
	host *cluster
	ftc  *corev1beta1.FederatedTypeConfig
	ref  objectRef
	out  printer
	warn io.Writer

	// crd is the federated type's CRD to delete, nil when not deleting it.
	crd *apiextensionsv1.CustomResourceDefinition
	// absent says that ftc is not in the host, only the default one of
	// the type: its CRD is deleted, nothing else is done.
	absent bool
}

func (d *disabler) disable(ctx context.Context) error {
	if d.opts.deleteCRD {
		if err := d.planCRDDeletion(ctx); err != nil {
			return err
		}
	}
	if d.absent {
		if d.crd == nil {
			return nil
		}
		return d.deleteCRD(ctx)
	}
	if err := d.disablePropagation(ctx); err != nil {
		return err
	}
	stopped := d.opts.dryRun || d.waitStopped(ctx)
	if d.crd != nil {
		if !d.opts.dryRun {
			// Objects created while propagation was being switched off
			// would be deleted with the CRD; check again.
			if err := d.checkNoInstances(ctx); err != nil {
				return fmt.Errorf("%w (propagation of the type is now disabled)", err)
			}
		}
		if err := d.deleteCRD(ctx); err != nil {
			return err
		}
	}
	if err := d.deleteTypeConfig(ctx, stopped); err != nil {
		return err
	}
	d.out.linef("Type %q disabled", d.ftc.Name)
	if d.ftc.Labels["app.kubernetes.io/managed-by"] == "Helm" {
		release := d.ftc.Annotations["meta.helm.sh/release-name"]
		fmt.Fprintf(d.warn, "Warning: %s was installed by the Helm release %q, whose next upgrade creates it again; add %s to the chart's defaultTypes.exclude to keep it disabled\n",
			d.ref, release, d.ftc.Name)
	}
	return nil
}

// planCRDDeletion finds the federated CRD and refuses to go on while
// federated objects exist or another FTC uses the same federated type.
func (d *disabler) planCRDDeletion(ctx context.Context) error {
	fed := d.ftc.Spec.FederatedType
	name := resourceOf(fed).String()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := d.host.fed.Get(ctx, client.ObjectKey{Name: name}, crd)
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(d.warn, "Warning: %s not found in %s; nothing to delete\n", crdRef(name), d.host.context)
		return nil
	case err != nil:
		return fmt.Errorf("get %s in %s: %w", crdRef(name), d.host.context, err)
	case crd.Spec.Names.Kind != fed.Kind:
		return fmt.Errorf("%s defines kind %s, not the federated type %s of %s; it is not deleted",
			crdRef(name), crd.Spec.Names.Kind, fed.Kind, d.ref)
	}
	ftcs, err := listTypeConfigs(ctx, d.host, d.ftc.Namespace)
	if err != nil {
		return err
	}
	for _, other := range ftcs {
		if other.Name != d.ftc.Name && resourceOf(other.Spec.FederatedType) == resourceOf(fed) {
			return fmt.Errorf("%s also uses the federated type %s; its CustomResourceDefinition is not deleted",
				typeConfigRef(other.Namespace, other.Name), name)
		}
	}
	d.crd = crd
	return d.checkNoInstances(ctx)
}

// checkNoInstances lists the objects of the federated type.
func (d *disabler) checkNoInstances(ctx context.Context) error {
	fed := d.ftc.Spec.FederatedType
	// Any served version lists every object; prefer the FTC's.
	gvr := gvrOf(fed)
	if !servesVersion(d.crd, fed.Version) {
		for _, v := range d.crd.Spec.Versions {
			if v.Served {
				gvr.Version = v.Name
				break
			}
		}
	}
	list, err := d.host.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("list %s objects in %s: %w", fed.Kind, d.host.context, err)
	case len(list.Items) == 0:
		return nil
	}
	names := make([]string, len(list.Items))
	for i, item := range list.Items {
		names[i] = namespacedName(item.GetNamespace(), item.GetName())
	}
	sort.Strings(names)
	shown := strings.Join(names[:min(instancesShown, len(names))], ", ")
	if len(names) > instancesShown {
		shown += ", …"
	}
	noun := fed.Kind
	if len(names) == 1 {
		return fmt.Errorf("1 %s object still exists (%s); delete it first", noun, shown)
	}
	return fmt.Errorf("%d %s objects still exist (%s); delete them first", len(names), noun, shown)
}

// namespacedName is ns/name, or name alone for a cluster-scoped object.
func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func servesVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	return slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == version && v.Served
	})
}

func (d *disabler) disablePropagation(ctx context.Context) error {
	s := &step{where: d.host, ref: d.ref, action: actionUnchanged}
	if d.ftc.Spec.Propagation != corev1beta1.Disabled {
		s.action = actionConfigured
		s.run = func(ctx context.Context, s *step) error {
			updated := d.ftc.DeepCopy()
			updated.Spec.Propagation = corev1beta1.Disabled
			// A patch does not conflict with the controller's status writes.
			if err := d.host.fed.Patch(ctx, updated, client.MergeFrom(d.ftc)); err != nil {
				return fmt.Errorf("disable propagation in %s in %s: %w", d.ref, d.host.context, err)
			}
			d.ftc = updated
			return nil
		}
	}
	if err := runSteps(ctx, []*step{s}, d.out); err != nil {
		return err
	}
	if s.action == actionConfigured {
		d.out.linef("Propagation of %s disabled", d.ftc.Name)
	}
	return nil
}

// waitStopped waits until the control plane reports, for the current
// generation of the FTC, that the propagation controller does not run. It
// reports whether it did; without a controller-manager nobody answers.
func (d *disabler) waitStopped(ctx context.Context) bool {
	generation := d.ftc.Generation
	err := wait.PollUntilContextTimeout(ctx, d.opts.pollInterval, d.opts.timeout, true, func(ctx context.Context) (bool, error) {
		live := &corev1beta1.FederatedTypeConfig{}
		if err := d.host.fed.Get(ctx, client.ObjectKeyFromObject(d.ftc), live); err != nil {
			return false, err
		}
		return live.Status.ObservedGeneration >= generation &&
			live.Status.PropagationController == corev1beta1.ControllerStatusNotRunning, nil
	})
	if err != nil {
		fmt.Fprintf(d.warn, "Warning: the control plane did not report the propagation controller of %s stopped within %s (is the controller-manager running?); continuing\n",
			d.ftc.Name, d.opts.timeout)
		return false
	}
	d.out.linef("Propagation controller of %s stopped", d.ftc.Name)
	return true
}

func (d *disabler) deleteCRD(ctx context.Context) error {
	uid := d.crd.UID
	s := &step{where: d.host, ref: crdRef(d.crd.Name), action: actionDeleted, run: func(ctx context.Context, s *step) error {
		err := d.host.fed.Delete(ctx, d.crd, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s in %s: %w", s.ref, d.host.context, err)
		}
		return nil
	}}
	return runSteps(ctx, []*step{s}, d.out)
}

// deleteTypeConfig deletes the FTC. Its finalizer is the controller's to
// remove; when no controller answered, nothing ever will, so disable
// releases the FTC itself rather than leave it terminating forever.
func (d *disabler) deleteTypeConfig(ctx context.Context, controllerAnswered bool) error {
	uid := d.ftc.UID
	s := &step{where: d.host, ref: d.ref, action: actionDeleted, run: func(ctx context.Context, s *step) error {
		err := d.host.fed.Delete(ctx, d.ftc, client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete %s in %s: %w", s.ref, d.host.context, err)
		}
		if controllerAnswered {
			return nil
		}
		live := &corev1beta1.FederatedTypeConfig{}
		err = d.host.fed.Get(ctx, client.ObjectKeyFromObject(d.ftc), live)
		if apierrors.IsNotFound(err) || (err == nil && !slices.Contains(live.Finalizers, corev1beta1.FederatedTypeConfigFinalizer)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s in %s: %w", s.ref, d.host.context, err)
		}
		live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == corev1beta1.FederatedTypeConfigFinalizer })
		if err := d.host.fed.Update(ctx, live); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove finalizer %s from %s in %s: %w", corev1beta1.FederatedTypeConfigFinalizer, s.ref, d.host.context, err)
		}
		fmt.Fprintf(d.warn, "Warning: removed finalizer %s from %s, as no controller-manager answered to release it\n",
			corev1beta1.FederatedTypeConfigFinalizer, s.ref)
		return nil
	}}
	return runSteps(ctx, []*step{s}, d.out)
}
