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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

const federateLong = `Create the federated object of an existing object.

federate reads the object TYPE NAME from the host cluster and creates its
Federated<Kind>, or reads the objects of a file (-f FILE, - for standard
input; several documents and kind List are fine) and prints theirs, as
KubeFed did (pipe them to kubectl apply -f - to create them). A federated
object has the same name and namespace as its object, and a spec.template is the object without apiVersion, kind,
status and all metadata but labels, and whose placement selects every
member cluster (spec.placement.clusterSelector: {}). Fields each cluster
fills in for itself are left out as well: a Service's clusterIP(s) and
node ports, a Job's generated selector, a Pod's node.

TYPE is resolved like enable's NAME; the type must be enabled, or
--enable-type enables it first. An existing federated object is left
alone if it is identical, and is an error otherwise.

--contents, with TYPE namespace, federates the namespace and every object
in it of every enabled namespaced type (with --enable-type, of every
namespaced type, enabling those with objects there; without it, objects of
types not enabled are counted in a warning), except: events, endpoints and
endpointslices; pods and replicasets owned by another object, and objects
of any type managed by a controller (their owner is federated instead);
what each cluster creates by itself (ServiceAccount "default", its token
Secrets and any ServiceAccount token Secret, ConfigMap "kube-root-ca.crt");
KubeFed's own types; objects whose names are not valid object names; and
the types listed in --skip-api-resources (an API group such as apps skips
each of its types, and a name the host does not serve is ignored with a
warning, as in KubeFed).

-o yaml prints the federated objects instead of creating them (with
--enable-type and a type not yet enabled, preceded by what enable creates).
Printing needs no FederatedTypeConfig, nor KubeFed's API in the host: a type
not enabled is printed as enable would federate it by default.`

const federateExample = `  # Federate the Deployment web of namespace demo to all member clusters
  kubefedctl federate deployment web -n demo

  # Federate namespace demo with everything in it but its Secrets
  kubefedctl federate namespace demo --contents --skip-api-resources secrets

  # Print the federated objects of a manifest, and create them
  kubefedctl federate -f app.yaml | kubectl apply -f -

  # The same with what enable creates for types not enabled yet
  kubefedctl federate -f app.yaml --enable-type`

type federateOptions struct {
	g *globalOptions

	namespace        string
	output           string
	enableType       bool
	contents         bool
	filename         string
	skipAPIResources []string
	federatedGroup   string
	federatedVersion string
	dryRun           bool
	timeout          time.Duration

	// Tests shorten it.
	pollInterval time.Duration
}

func newFederateCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &federateOptions{g: g, pollInterval: defaultPollInterval}
	cmd := &cobra.Command{
		Use:     "federate (TYPE NAME | -f FILE)",
		Short:   "Create the federated object of an existing object",
		Long:    federateLong,
		Example: federateExample,
		Args:    cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.filename != "" && len(args) > 0:
				return errors.New("give either TYPE NAME or --filename, not both")
			case o.filename != "" && o.contents:
				return errors.New("--contents federates a namespace of the host cluster; it cannot be used with --filename")
			case o.filename == "" && len(args) != 2:
				return errors.New("name the object to federate as TYPE NAME, or pass --filename")
			case o.output != "" && o.output != "yaml":
				return fmt.Errorf("invalid --output %q: must be yaml", o.output)
			}
			var input []byte
			if o.filename != "" {
				// As in KubeFed, a file's objects are printed, for kubectl
				// apply -f - or a repository, not created.
				o.output = "yaml"
				var err error
				if input, err = readInput(cmd, o.filename); err != nil {
					return err
				}
			}
			return o.run(cmd.Context(), streams, args, input)
		},
	}
	flags := cmd.Flags()
	flags.StringVarP(&o.namespace, "namespace", "n", "",
		"Namespace of the object. Defaults to the kubeconfig context's namespace, else default.")
	flags.StringVarP(&o.output, "output", "o", "",
		"Print the federated objects in this format (only yaml) instead of creating them.")
	flags.BoolVarP(&o.enableType, "enable-type", "t", false,
		"Enable the type for federation first if it is not enabled.")
	flags.BoolVarP(&o.contents, "contents", "c", false,
		"With TYPE namespace, also federate the objects in the namespace.")
	flags.StringVarP(&o.filename, "filename", "f", "",
		"File with the objects to federate instead of TYPE NAME, printed as with -o yaml (as in KubeFed); - reads standard input.")
	flags.StringSliceVarP(&o.skipAPIResources, "skip-api-resources", "s", nil,
		"Types --contents leaves out, as names enable accepts or API groups, comma-separated (e.g. secrets,deployments.apps or configmaps,apps).")
	addFederatedTypeFlags(cmd, &o.federatedGroup, &o.federatedVersion)
	flags.DurationVar(&o.timeout, "timeout", defaultEstablishWait,
		"With --enable-type, how long to wait for the API server to serve a new federated type.")
	addDryRunFlag(cmd, &o.dryRun)
	return cmd
}

// federator carries one federate.
type federator struct {
	opts      *federateOptions
	host      *cluster
	idx       *apiIndex
	ftcs      []corev1beta1.FederatedTypeConfig
	namespace string
	out       printer
	// notes receives what is skipped: standard output, unless that is
	// reserved for -o yaml.
	notes io.Writer
	warn  io.Writer

	// enabled are the types --enable-type enables, with their steps and
	// manifests, in the order found.
	enabled      []federatedtype.Target
	enableSteps  []*step
	enableOutput []byte

	// objects are the federated objects to create, in order.
	objects []federatedItem
	// added holds the objects' references, to tell repeats.
	added map[objectRef]bool
}

// federatedItem is a federated object and the resource it is created as.
type federatedItem struct {
	obj *unstructured.Unstructured
	gvr schema.GroupVersionResource
	// twice marks an object an earlier item already federates.
	twice bool
}

func (o *federateOptions) run(ctx context.Context, streams IOStreams, args []string, input []byte) error {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return err
	}
	f := &federator{
		opts:  o,
		host:  host,
		out:   printer{out: streams.Out, dryRun: o.dryRun},
		notes: streams.Out,
		warn:  streams.ErrOut,
	}
	if o.output != "" {
		f.notes = streams.ErrOut
	}
	if err := validateFederatedType(f.enableOptions()); err != nil {
		return err
	}
	f.namespace = o.namespace
	if f.namespace == "" {
		f.namespace = host.namespace
	}
	if f.namespace == "" {
		f.namespace = metav1.NamespaceDefault
	}
	offline := false
	if f.idx, err = discoverAPI(ctx, host); err != nil {
		if o.filename == "" {
			return err
		}
		// A file is federated without the host, as in KubeFed (a CI job
		// that prints what it commits): its types are guessed.
		fmt.Fprintf(f.warn, "Warning: the host's API cannot be read (%v); the types of %s are guessed from their kinds, as KubeFed did\n", err, o.filename)
		f.idx, offline = &apiIndex{}, true
	}
	if offline {
		// No FederatedTypeConfig can be read: each type as enable would
		// federate it by default.
	} else if f.ftcs, err = listTypeConfigs(ctx, host, o.g.kubefedNamespace); err != nil {
		// Printing needs no KubeFed API in the host, as in KubeFed.
		if o.output != "yaml" || !meta.IsNoMatchError(err) {
			return err
		}
	}

	if o.filename != "" {
		err = f.collectFromFile(ctx, input)
	} else {
		err = f.collectFromHost(ctx, args[0], args[1])
	}
	if err != nil {
		return fmt.Errorf("federate: %w", err)
	}

	if o.output == "yaml" {
		return f.print(streams.Out)
	}
	steps, err := f.plan(ctx)
	if err != nil {
		return fmt.Errorf("federate: %w", err)
	}
	if err := runSteps(ctx, f.enableSteps, f.out); err != nil {
		return fmt.Errorf("federate: %w", err)
	}
	if err := runSteps(ctx, steps, f.out); err != nil {
		return fmt.Errorf("federate: %w", err)
	}
	if len(f.enabled) > 0 {
		warnIfNamespacesDisabled(ctx, host, o.g.kubefedNamespace, f.enabled, f.warn)
	}
	if !o.contents {
		f.warnUnfederatedNamespaces(ctx)
	}
	return nil
}

func (f *federator) enableOptions() federatedtype.Options {
	return federatedtype.Options{
		FederatedGroup:   f.opts.federatedGroup,
		FederatedVersion: f.opts.federatedVersion,
		Namespace:        f.opts.g.kubefedNamespace,
	}
}

// typeConfig returns the FTC of a target type; with --enable-type it plans
// to enable a type that has none.
func (f *federator) typeConfig(ctx context.Context, t apiType) (*corev1beta1.FederatedTypeConfig, error) {
	if ftc := typeConfigFor(f.ftcs, t.gvr.GroupResource()); ftc != nil {
		if resourceOf(ftc.Spec.TargetType) != t.gvr.GroupResource() {
			return nil, fmt.Errorf("%s is a federated type; federate its target type instead", t.name())
		}
		return ftc, nil
	}
	if err := federatable(t); err != nil {
		return nil, err
	}
	if !f.opts.enableType && f.opts.output == "yaml" {
		// Printed objects need no FederatedTypeConfig yet, as in KubeFed:
		// they are written as the default one would federate the type.
		return federatedtype.TypeConfig(t.target(), f.enableOptions()), nil
	}
	if !f.opts.enableType {
		return nil, fmt.Errorf("%s is not enabled for federation; enable it with: kubefedctl enable %s (or pass --enable-type)", t.name(), t.name())
	}
	target, opts := t.target(), f.enableOptions()
	if f.opts.output == "yaml" {
		data, err := typeManifests(target, opts)
		if err != nil {
			return nil, err
		}
		f.enableOutput = append(f.enableOutput, data...)
	} else {
		if err := checkHostNamespace(ctx, f.host, opts.Namespace); err != nil {
			return nil, err
		}
		e := &typeEnabler{host: f.host, opts: opts, timeout: f.opts.timeout, interval: f.opts.pollInterval}
		steps, err := e.plan(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("enable %s: %w", t.name(), err)
		}
		f.enableSteps = append(f.enableSteps, steps...)
	}
	f.enabled = append(f.enabled, target)
	ftc := federatedtype.TypeConfig(target, opts)
	f.ftcs = append(f.ftcs, *ftc)
	return ftc, nil
}

// targetVersion is the target type in the version its FTC propagates,
// which the template must be written in.
func (f *federator) targetVersion(ftc *corev1beta1.FederatedTypeConfig) (apiType, error) {
	t, err := f.idx.version(resourceOf(ftc.Spec.TargetType), ftc.Spec.TargetType.Version)
	if err != nil {
		return apiType{}, fmt.Errorf("%w, the version FederatedTypeConfig %s propagates", err, ftc.Name)
	}
	return t, nil
}

func (f *federator) collectFromHost(ctx context.Context, typeName, name string) error {
	t, err := f.idx.resolve(typeName, "")
	if err != nil {
		return err
	}
	isNamespaces := t.gvr.GroupResource() == schema.GroupResource{Resource: "namespaces"}
	if f.opts.contents && !isNamespaces {
		return fmt.Errorf("--contents federates the objects of a namespace; TYPE must be namespace, not %s", t.name())
	}
	ftc, err := f.typeConfig(ctx, t)
	if err != nil {
		return err
	}
	if t, err = f.targetVersion(ftc); err != nil {
		return err
	}
	obj, err := f.get(ctx, t, name)
	if err != nil {
		return err
	}
	f.add(ftc, obj)
	if f.opts.contents {
		return f.collectContents(ctx, name)
	}
	return nil
}

func (f *federator) get(ctx context.Context, t apiType, name string) (*unstructured.Unstructured, error) {
	ns := ""
	if t.namespaced {
		ns = f.namespace
	}
	ref := objectRef{Kind: t.kind, Namespace: ns, Name: name}
	obj, err := f.host.dynamic.Resource(t.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s not found in %s", ref, f.host.context)
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", ref, f.host.context, err)
	}
	return obj, nil
}

func (f *federator) add(ftc *corev1beta1.FederatedTypeConfig, obj *unstructured.Unstructured) {
	if keys := userAnnotations(obj); len(keys) > 0 {
		// As KubeFed warned: the intent may have been to propagate them.
		fmt.Fprintf(f.warn, "Warning: annotations of %s are not propagated and are left out of its template: %s\n", refOf(obj), strings.Join(keys, ", "))
	}
	fed := federatedObject(ftc, obj)
	ref := refOf(fed)
	if f.added == nil {
		f.added = map[objectRef]bool{}
	}
	f.objects = append(f.objects, federatedItem{obj: fed, gvr: gvrOf(ftc.Spec.FederatedType), twice: f.added[ref]})
	f.added[ref] = true
}

// twiceError is the error of an item that repeats an earlier one.
func twiceError(item federatedItem) error {
	return fmt.Errorf("%s is given twice", refOf(item.obj))
}

// collectContents adds the objects of a namespace, type by type in the
// order of their FTC names, each type's objects by name.
func (f *federator) collectContents(ctx context.Context, namespace string) error {
	var skip []schema.GroupResource
	for _, s := range f.opts.skipAPIResources {
		matched := f.idx.matching(s)
		switch {
		case len(matched) > 0:
			// Every type of that name, as in KubeFed: a name that is
			// ambiguous elsewhere is not here.
			skip = append(skip, matched...)
		case f.idx.servesGroup(s):
			// As in KubeFed, an API group skips each of its types
			// (--skip-api-resources apps).
			skip = append(skip, schema.GroupResource{Group: s, Resource: "*"})
		default:
			// KubeFed ignored names it did not know; a typo is named.
			_, err := f.idx.resolve(s, "")
			fmt.Fprintf(f.warn, "Warning: --skip-api-resources: %v; ignored\n", err)
		}
	}
	for i := range f.ftcs {
		ftc := &f.ftcs[i]
		gr := resourceOf(ftc.Spec.TargetType)
		if !ftc.Spec.TargetType.Namespaced() || ftc.IsNamespace() || skippedType(gr, skip) {
			continue
		}
		t, err := f.targetVersion(ftc)
		if err != nil {
			fmt.Fprintf(f.warn, "Warning: %s objects not federated: %v\n", gr, err)
			continue
		}
		list, err := f.host.dynamic.Resource(t.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list %s in namespace %q of %s: %w", gr, namespace, f.host.context, err)
		}
		sort.Slice(list.Items, func(a, b int) bool { return list.Items[a].GetName() < list.Items[b].GetName() })
		for j := range list.Items {
			obj := &list.Items[j]
			if why := skipContent(gr, obj); why != "" {
				fmt.Fprintf(f.notes, "%s skipped: %s\n", objectRef{Kind: t.kind, Namespace: namespace, Name: obj.GetName()}, why)
				continue
			}
			f.add(ftc, obj)
		}
	}
	return f.collectContentsNotEnabled(ctx, namespace, skip)
}

// collectContentsNotEnabled deals with the namespace's objects of types no
// FederatedTypeConfig federates, in the preferred version of each group: as
// in KubeFed, --enable-type enables the types that have objects and
// federates them, and -o yaml prints them as the types' default FTCs would
// federate them; otherwise they are named on standard error, rather than
// left out without a word.
func (f *federator) collectContentsNotEnabled(ctx context.Context, namespace string, skip []schema.GroupResource) error {
	for _, t := range f.idx.types {
		gr := t.gvr.GroupResource()
		if !t.namespaced || f.idx.preferred[t.gvr.Group] != t.gvr.Version || skippedType(gr, skip) ||
			typeConfigFor(f.ftcs, gr) != nil || federatable(t) != nil {
			continue
		}
		list, err := f.host.dynamic.Resource(t.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(f.warn, "Warning: %s objects not looked at: %v\n", t.name(), err)
			continue
		}
		sort.Slice(list.Items, func(a, b int) bool { return list.Items[a].GetName() < list.Items[b].GetName() })
		var objs []*unstructured.Unstructured
		for j := range list.Items {
			if skipContent(gr, &list.Items[j]) == "" {
				objs = append(objs, &list.Items[j])
			}
		}
		if len(objs) == 0 {
			continue
		}
		if !f.opts.enableType && f.opts.output != "yaml" {
			// Printed, they are written as the type's default FTC would
			// federate them, as in KubeFed.
			fmt.Fprintf(f.warn, "Warning: %d %s object(s) in namespace %q not federated: the type is not enabled (pass --enable-type, or kubefedctl enable %s)\n",
				len(objs), t.name(), namespace, t.name())
			continue
		}
		ftc, err := f.typeConfig(ctx, t)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			f.add(ftc, obj)
		}
	}
	return nil
}

// collectFromFile adds the objects of a YAML or JSON stream.
func (f *federator) collectFromFile(ctx context.Context, input []byte) error {
	docs, err := splitDocuments(input)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.opts.filename, err)
	}
	var objs []*unstructured.Unstructured
	for i, doc := range docs {
		where := fmt.Sprintf("%s (document %d)", f.opts.filename, i+1)
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			for j := range list.Items {
				objs = append(objs, &list.Items[j])
			}
			continue
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return fmt.Errorf("%s holds no object", f.opts.filename)
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		ref := objectRef{Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if obj.GetName() == "" {
			return fmt.Errorf("%s object in %s has no metadata.name", gvk.Kind, f.opts.filename)
		}
		t, err := f.idx.lookup(gvk)
		if errors.Is(err, errTypeNotFound) && !f.idx.servesKind(gvk.GroupKind()) {
			// A kind the host does not serve (yet: its CRD is applied
			// with the file, say) is guessed, as KubeFed guessed every
			// kind of a file: its plural from the kind, and namespaced
			// when the object has a namespace.
			t = guessedType(gvk, obj.GetNamespace() != "")
			if len(f.idx.types) > 0 {
				fmt.Fprintf(f.warn, "Warning: %s: %v; federated as %s, %s, as guessed from its kind\n", ref, err, t.name(), scopeWord(t.namespaced))
			}
		} else if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		ftc, err := f.typeConfig(ctx, t)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		if v := ftc.Spec.TargetType.Version; v != gvk.Version {
			return fmt.Errorf("%s is written in %s, but FederatedTypeConfig %s propagates version %s; convert it first (e.g. read it back from the host with kubectl get %s.%s.%s)",
				ref, gvk.GroupVersion(), ftc.Name, v, t.gvr.Resource, v, t.gvr.Group)
		}
		if t.namespaced {
			switch ns := obj.GetNamespace(); {
			case ns == "":
				obj.SetNamespace(f.namespace)
			case f.opts.namespace != "" && ns != f.opts.namespace:
				return fmt.Errorf("%s is in namespace %q, not in the --namespace %q", ref, ns, f.opts.namespace)
			}
		}
		f.add(ftc, obj)
	}
	return nil
}

// print writes what would be created as a YAML stream.
func (f *federator) print(w io.Writer) error {
	var twice []error
	for _, item := range f.objects {
		if item.twice {
			twice = append(twice, twiceError(item))
		}
	}
	if len(twice) > 0 {
		return errors.Join(twice...)
	}
	if _, err := w.Write(f.enableOutput); err != nil {
		return err
	}
	for _, item := range f.objects {
		data, err := federatedtype.Manifest(item.obj)
		if err != nil {
			return fmt.Errorf("render %s: %w", refOf(item.obj), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

func refOf(u *unstructured.Unstructured) objectRef {
	return objectRef{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// plan looks up each federated object: one to create, one that already
// exists as desired, or one that exists otherwise, a conflict. Conflicts
// are reported together, before anything is created.
func (f *federator) plan(ctx context.Context) ([]*step, error) {
	var steps []*step
	var conflicts []error
	for _, item := range f.objects {
		obj, ref := item.obj, refOf(item.obj)
		if item.twice {
			conflicts = append(conflicts, twiceError(item))
			continue
		}
		res := f.host.dynamic.Resource(item.gvr).Namespace(obj.GetNamespace())
		s := &step{where: f.host, ref: ref}
		live, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Also when the federated type is still to be enabled.
			s.action = actionCreated
			s.run = func(ctx context.Context, s *step) error {
				if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
					if apierrors.IsAlreadyExists(err) {
						return fmt.Errorf("%s was created meanwhile by someone else in %s: %w", s.ref, f.host.context, err)
					}
					return fmt.Errorf("create %s in %s: %w", s.ref, f.host.context, err)
				}
				return nil
			}
		case err != nil:
			return nil, fmt.Errorf("get %s in %s: %w", ref, f.host.context, err)
		default:
			if diff := specDifference(live, obj); diff != "" {
				// The template may hold a Secret's data: name the
				// differing fields, never their values.
				conflicts = append(conflicts, fmt.Errorf("%s already exists in %s with a different %s; delete it or edit it instead",
					ref, f.host.context, diff))
				continue
			}
			s.action = actionUnchanged
		}
		steps = append(steps, s)
	}
	if len(conflicts) > 0 {
		return nil, errors.Join(conflicts...)
	}
	return steps, nil
}

// specDifference names the top-level spec fields in which live differs
// from desired, or returns "" when it is identical.
func specDifference(live, desired *unstructured.Unstructured) string {
	liveSpec, _, _ := unstructured.NestedMap(live.Object, "spec")
	wantSpec, _, _ := unstructured.NestedMap(desired.Object, "spec")
	var fields []string
	for _, k := range sortedKeys(liveSpec, wantSpec) {
		if !equality.Semantic.DeepEqual(liveSpec[k], wantSpec[k]) {
			fields = append(fields, "spec."+k)
		}
	}
	return strings.Join(fields, ", ")
}

func sortedKeys(maps ...map[string]any) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// warnUnfederatedNamespaces warns about namespaced objects created in a
// namespace that is not federated: the control plane places them nowhere
// until it is.
func (f *federator) warnUnfederatedNamespaces(ctx context.Context) {
	nsFTC := typeConfigFor(f.ftcs, schema.GroupResource{Resource: "namespaces"})
	// Namespaces federated by this run need no warning.
	done := map[string]bool{}
	for _, item := range f.objects {
		if nsFTC != nil && item.gvr == gvrOf(nsFTC.Spec.FederatedType) {
			done[item.obj.GetName()] = true
		}
	}
	for _, item := range f.objects {
		ns := item.obj.GetNamespace()
		if ns == "" || done[ns] {
			continue
		}
		done[ns] = true
		if nsFTC != nil {
			_, err := f.host.dynamic.Resource(gvrOf(nsFTC.Spec.FederatedType)).Namespace(ns).Get(ctx, ns, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				continue
			}
		}
		fmt.Fprintf(f.warn, "Warning: namespace %q is not federated; objects in it propagate once it is: kubefedctl federate namespace %s\n", ns, ns)
	}
}
