package kubefedctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const orphaningLong = `Choose what deleting a federated object does to the objects it propagated.

By default, deleting a federated object deletes its objects in every member
cluster. With orphaning deletion enabled (annotation kubefed.io/orphan: "true"
on the federated object) they are left in place, only no longer managed:
the control plane removes its kubefed.io/managed label from them.

TYPE is the target type or the federated type, by any name enable accepts
(deployments, deployments.apps, FederatedDeployment, fdeploy), or the
FederatedTypeConfig's name. NAME is the federated object's name.`

const orphaningExample = `  # Keep the member Deployments when FederatedDeployment demo/web is deleted
  kubefedctl orphaning-deletion enable deployments web -n demo

  # Check, then go back to deleting them with it
  kubefedctl orphaning-deletion status fdeploy web -n demo
  kubefedctl orphaning-deletion disable FederatedDeployment web -n demo`

type orphaningOptions struct {
	g         *globalOptions
	namespace string
	dryRun    bool
}

func newOrphaningDeletionCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &orphaningOptions{g: g}
	cmd := &cobra.Command{
		Use:     "orphaning-deletion (enable | disable | status) TYPE NAME",
		Short:   "Keep or delete member objects when a federated object is deleted",
		Long:    orphaningLong,
		Example: orphaningExample,
	}
	cmd.PersistentFlags().StringVarP(&o.namespace, "namespace", "n", "",
		"Namespace of the federated object. Defaults to the kubeconfig context's namespace, else default; for namespaces, to NAME.")
	verb := func(use, short string, mutates bool, do func(context.Context, *orphanTarget) error) *cobra.Command {
		c := &cobra.Command{
			Use:   use + " TYPE NAME",
			Short: short,
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				t, err := o.resolve(cmd.Context(), streams, args[0], args[1])
				if err != nil {
					return err
				}
				return do(cmd.Context(), t)
			},
		}
		if mutates {
			addDryRunFlag(c, &o.dryRun)
		}
		return c
	}
	cmd.AddCommand(
		verb("enable", "Leave member objects in place when the federated object is deleted", true,
			func(ctx context.Context, t *orphanTarget) error { return t.set(ctx, true) }),
		verb("disable", "Delete member objects with the federated object (the default)", true,
			func(ctx context.Context, t *orphanTarget) error { return t.set(ctx, false) }),
		verb("status", "Say whether orphaning deletion is enabled", false,
			func(ctx context.Context, t *orphanTarget) error { return t.status(ctx) }),
	)
	return cmd
}

// orphanTarget is the federated object orphaning-deletion acts on.
type orphanTarget struct {
	host *cluster
	fed  corev1beta1.APIResource
	ref  objectRef
	out  printer
	// notes gets what is said beside status's word: standard error.
	notes io.Writer
}

func (o *orphaningOptions) resolve(ctx context.Context, streams IOStreams, typeName, name string) (*orphanTarget, error) {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return nil, err
	}
	ftc, err := findTypeConfig(ctx, host, o.g.kubefedNamespace, typeName)
	if err != nil {
		return nil, err
	}
	fed := ftc.Spec.FederatedType
	ref := objectRef{Kind: fed.Kind, Name: name}
	if fed.Namespaced() {
		switch {
		case o.namespace != "":
			ref.Namespace = o.namespace
		case ftc.IsNamespace():
			// A FederatedNamespace lives in the namespace it federates.
			ref.Namespace = name
		case host.namespace != "":
			ref.Namespace = host.namespace
		default:
			ref.Namespace = metav1.NamespaceDefault
		}
	}
	return &orphanTarget{host: host, fed: fed, ref: ref, out: printer{out: streams.Out, dryRun: o.dryRun}, notes: streams.ErrOut}, nil
}

// enabled reads whether the federated object carries the annotation.
func (t *orphanTarget) enabled(ctx context.Context) (bool, error) {
	obj, err := t.host.dynamic.Resource(gvrOf(t.fed)).Namespace(t.ref.Namespace).Get(ctx, t.ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("%s not found in %s", t.ref, t.host.context)
	case err != nil:
		return false, fmt.Errorf("get %s in %s: %w", t.ref, t.host.context, err)
	}
	return obj.GetAnnotations()[corev1beta1.OrphanManagedResourcesAnnotation] == "true", nil
}

func (t *orphanTarget) status(ctx context.Context) error {
	on, err := t.enabled(ctx)
	if err != nil {
		return err
	}
	// KubeFed's word alone on standard output, for scripts; what it means
	// on standard error.
	word, state := "Disabled", "disabled: deleting it deletes its objects in member clusters"
	if on {
		word, state = "Enabled", "enabled: deleting it leaves its objects in member clusters"
	}
	if _, err := fmt.Fprintln(t.out.out, word); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(t.notes, "Orphaning deletion of %s is %s\n", t.ref, state)
	return nil
}

func (t *orphanTarget) set(ctx context.Context, on bool) error {
	current, err := t.enabled(ctx)
	if err != nil {
		return err
	}
	word := map[bool]string{true: "enabled", false: "disabled"}[on]
	if current == on {
		t.out.linef("Orphaning deletion of %s is already %s", t.ref, word)
		return nil
	}
	if !t.out.dryRun {
		// A merge patch touches only this annotation; null removes it.
		var value any
		if on {
			value = "true"
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
			corev1beta1.OrphanManagedResourcesAnnotation: value,
		}}})
		if err != nil {
			return err
		}
		_, err = t.host.dynamic.Resource(gvrOf(t.fed)).Namespace(t.ref.Namespace).
			Patch(ctx, t.ref.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("annotate %s in %s: %w", t.ref, t.host.context, err)
		}
	}
	t.out.linef("Orphaning deletion of %s %s", t.ref, word)
	return nil
}
