package kubefedctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const unjoinLong = `Remove a cluster's registration from a KubeFed control plane.

In the host cluster unjoin deletes the KubeFedCluster and its Secret. In the
member cluster it deletes the ServiceAccount, its token Secrets and the RBAC
objects join creates (both scopes'), found by the names join gives them, so
clusters joined by KubeFed's kubefedctl are cleaned as well.

The member's KubeFed namespace is deleted only when all of these hold:
  - the member is not the host cluster (the control plane lives there);
  - kubefedctl join created the namespace (label app.kubernetes.io/managed-by=kubefedctl);
  - nothing else is left in it: no object of any type, custom ones included,
    besides what Kubernetes puts into every namespace and Events.
Otherwise unjoin says why it kept the namespace.

If the member cannot be reached unjoin changes nothing, unless --force is
given: then it still removes the registration from the host and lists what
it could not remove from the member.`

const unjoinExample = `  # Unjoin the cluster of context "member1" from the control plane of the current context
  kubefedctl unjoin member1

  # Unjoin a member that no longer exists
  kubefedctl unjoin member1 --force`

type unjoinOptions struct {
	memberOptions
	g *globalOptions

	force  bool
	dryRun bool
}

func newUnjoinCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &unjoinOptions{g: g}
	cmd := &cobra.Command{
		Use:     "unjoin CLUSTER_NAME [--cluster-context CONTEXT]",
		Short:   "Remove a cluster's registration from a KubeFed control plane",
		Long:    unjoinLong,
		Example: unjoinExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.clusterName = args[0]
			return o.run(cmd.Context(), streams)
		},
	}
	o.bind(cmd)
	cmd.Flags().BoolVar(&o.force, "force", false,
		"Remove the registration from the host even if the member cannot be reached or cleaned up.")
	addDryRunFlag(cmd, &o.dryRun)
	return cmd
}

func (o *unjoinOptions) run(ctx context.Context, streams IOStreams) error {
	t, err := o.resolve(o.g, streams)
	if err != nil {
		return err
	}
	u := &unjoiner{
		opts:      o,
		reg:       t.reg,
		host:      t.host,
		mem:       t.member,
		memberErr: t.memberErr,
		memberCtx: t.memberContext,
		out:       printer{out: streams.Out, dryRun: o.dryRun},
		warn:      streams.ErrOut,
	}
	return u.unjoin(ctx)
}

// unjoiner carries one unjoin.
type unjoiner struct {
	opts      *unjoinOptions
	reg       registration
	host      *cluster
	mem       *cluster
	memberErr error
	memberCtx string
	out       printer
	warn      io.Writer

	// namespace is the member's KubeFed namespace as found while planning.
	namespace *corev1.Namespace
}

func (u *unjoiner) unjoin(ctx context.Context) error {
	name := u.reg.clusterName
	kfc, err := getKubeFedCluster(ctx, u.host, u.reg)
	if err != nil {
		return fmt.Errorf("unjoin cluster %q: %w", name, err)
	}
	var memberSteps []*step
	memberErr := u.memberErr
	if memberErr == nil {
		memberSteps, memberErr = u.planMember(ctx)
	}
	if memberErr != nil && !u.opts.force {
		return fmt.Errorf("unjoin cluster %q: %w; nothing was deleted (use --force to remove the registration from the host anyway)", name, memberErr)
	}
	hostSteps, hostNotes, err := u.planHost(ctx, kfc)
	if err != nil {
		return fmt.Errorf("unjoin cluster %q: %w", name, err)
	}
	if kfc == nil && len(hostSteps) == 0 && len(memberSteps) == 0 && (memberErr != nil || !u.namespaceMayBeRemoved()) {
		if memberErr != nil {
			return fmt.Errorf("cluster %q is not joined: KubeFedCluster %s/%s not found in %s, and member cluster %q could not be looked at for what join creates: %w",
				name, u.reg.namespace, name, u.host.context, u.memberCtx, memberErr)
		}
		return fmt.Errorf("cluster %q is not joined: KubeFedCluster %s/%s not found in %s, and nothing join creates was found in the member",
			name, u.reg.namespace, name, u.host.context)
	}

	var notCleaned []string
	if memberErr != nil {
		fmt.Fprintf(u.warn, "Warning: member cluster %q not cleaned up: %v\n", u.memberCtx, memberErr)
		notCleaned = u.memberObjectNames(kfc != nil && kfc.PullMode())
	} else {
		for _, s := range memberSteps {
			if err := runSteps(ctx, []*step{s}, u.out); err != nil {
				if !u.opts.force {
					return fmt.Errorf("unjoin cluster %q: %w (the registration in the host is kept; re-run unjoin, or use --force)", name, err)
				}
				fmt.Fprintf(u.warn, "Warning: %v\n", err)
				notCleaned = append(notCleaned, s.ref.String())
			}
		}
		if err := u.removeNamespace(ctx, memberSteps); err != nil {
			if !u.opts.force {
				return fmt.Errorf("unjoin cluster %q: %w", name, err)
			}
			fmt.Fprintf(u.warn, "Warning: %v\n", err)
			notCleaned = append(notCleaned, "Namespace "+u.reg.namespace)
		}
	}
	if err := runSteps(ctx, hostSteps, u.out); err != nil {
		return fmt.Errorf("unjoin cluster %q: %w", name, err)
	}
	for _, note := range hostNotes {
		u.out.linef("%s", note)
	}
	u.out.linef("Cluster %q unjoined", name)
	if len(notCleaned) > 0 {
		fmt.Fprintf(u.warn, "Warning: these objects may remain in member cluster %q; delete them once it is reachable: %s\n",
			u.memberCtx, strings.Join(notCleaned, ", "))
	}
	return nil
}

// memberObjectNames lists what join creates in a member, for the report
// of an unreachable member; pull adds a Pull-mode member's agent, its way
// to the host and the Lease its replicas elect their leader on.
func (u *unjoiner) memberObjectNames(pull bool) []string {
	r := u.reg
	refs := []objectRef{
		clusterRoleBindingRef(r.roleName()), clusterRoleRef(r.roleName()),
		clusterRoleBindingRef(r.healthCheckRoleName()), clusterRoleRef(r.healthCheckRoleName()),
		roleBindingRef(r), roleRef(r), tokenSecretRef(r),
		{Kind: "ServiceAccount", Namespace: r.namespace, Name: r.serviceAccountName()},
	}
	if pull {
		refs = append(refs,
			objectRef{Kind: "Deployment", Namespace: r.namespace, Name: AgentDeploymentName},
			objectRef{Kind: "Secret", Namespace: r.namespace, Name: AgentHostSecret},
			objectRef{Kind: "Lease", Namespace: r.namespace, Name: corev1beta1.AgentLeaderElectionLeaseName})
	}
	refs = append(refs, objectRef{Kind: "Namespace", Name: r.namespace})
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = ref.String()
	}
	return names
}

// planMember plans the deletion of everything join may have created in the
// member, looked up by the names join gives it. The bindings go first, so
// the account loses its access before anything else.
func (u *unjoiner) planMember(ctx context.Context) ([]*step, error) {
	r, m := u.reg, u.mem
	ns, err := m.kube.CoreV1().Namespaces().Get(ctx, r.namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("cannot reach member cluster %q: get namespace %q: %w", m.context, r.namespace, err)
	default:
		u.namespace = ns
	}

	rbac := m.kube.RbacV1()
	var plan stepList
	add := plan.add
	for _, name := range []string{r.roleName(), r.healthCheckRoleName()} {
		add(planDelete[*rbacv1.ClusterRoleBinding](ctx, m, rbac.ClusterRoleBindings(), clusterRoleBindingRef(name), nil))
		add(planDelete[*rbacv1.ClusterRole](ctx, m, rbac.ClusterRoles(), clusterRoleRef(name), nil))
	}
	if u.namespace != nil {
		add(planDelete[*rbacv1.RoleBinding](ctx, m, rbac.RoleBindings(r.namespace), roleBindingRef(r), nil))
		add(planDelete[*rbacv1.Role](ctx, m, rbac.Roles(r.namespace), roleRef(r), nil))
		secrets, err := u.tokenSecrets(ctx)
		if err != nil {
			plan.errs = append(plan.errs, err)
		}
		for _, secretName := range secrets {
			add(planDelete[*corev1.Secret](ctx, m, m.kube.CoreV1().Secrets(r.namespace),
				objectRef{Kind: "Secret", Namespace: r.namespace, Name: secretName}, nil))
		}
		add(planDelete[*corev1.ServiceAccount](ctx, m, m.kube.CoreV1().ServiceAccounts(r.namespace),
			objectRef{Kind: "ServiceAccount", Namespace: r.namespace, Name: r.serviceAccountName()}, nil))
		// A Pull-mode member's agent and its way to the host.
		add(planAgentDeploymentRemoval(ctx, m, r))
		add(planDelete(ctx, m, m.kube.CoreV1().Secrets(r.namespace),
			objectRef{Kind: "Secret", Namespace: r.namespace, Name: AgentHostSecret},
			func(s *corev1.Secret) bool { return !r.createdForRegistration(s.Labels) }))
	}
	return plan.steps, errors.Join(plan.errs...)
}

// tokenSecrets names the token Secrets of the registration's ServiceAccount:
// join's own, and those KubeFed or Kubernetes before 1.24 created under
// other names. The token controller would delete them with the account,
// but not before unjoin looks at what is left in the namespace.
func (u *unjoiner) tokenSecrets(ctx context.Context) ([]string, error) {
	names := []string{u.reg.tokenSecretName()}
	list, err := u.mem.kube.CoreV1().Secrets(u.reg.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return names, fmt.Errorf("list Secrets in namespace %q of %s: %w", u.reg.namespace, u.mem.context, err)
	}
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeServiceAccountToken && s.Name != names[0] &&
			s.Annotations[corev1.ServiceAccountNameKey] == u.reg.serviceAccountName() {
			names = append(names, s.Name)
		}
	}
	return names, nil
}

// namespaceMayBeRemoved reports whether the member's KubeFed namespace is
// one join created and nobody is deleting yet.
func (u *unjoiner) namespaceMayBeRemoved() bool {
	return u.namespace != nil && u.namespace.DeletionTimestamp == nil && createdByJoin(u.namespace.Labels)
}

// removeNamespace deletes the member's KubeFed namespace when it is safe,
// and otherwise says why it is kept.
func (u *unjoiner) removeNamespace(ctx context.Context, deleted []*step) error {
	ns := u.namespace
	if ns == nil || ns.DeletionTimestamp != nil {
		return nil
	}
	ref := objectRef{Kind: "Namespace", Name: ns.Name}
	keep := func(reason string) error {
		u.out.linef("%s kept in %s: %s", ref, u.mem.context, reason)
		return nil
	}
	if sameCluster(ctx, u.host, u.mem) {
		return keep("the member is the host cluster, whose control plane runs in it")
	}
	if !createdByJoin(ns.Labels) {
		return keep("it was not created by kubefedctl join")
	}
	// In a dry run the objects unjoin would delete are still there. The
	// agents' election Lease goes with them: they wrote it, not a user.
	ignore := map[objectKey]bool{
		{group: coordinationv1.GroupName, kind: "Lease", name: corev1beta1.AgentLeaderElectionLeaseName}: true,
	}
	for _, s := range deleted {
		if s.ref.Namespace == ns.Name {
			ignore[objectKey{group: groupOfKind(s.ref.Kind), kind: s.ref.Kind, name: s.ref.Name}] = true
		}
	}
	foreign, err := foreignObjects(ctx, u.mem, ns.Name, ignore)
	if err != nil {
		return keep(fmt.Sprintf("could not make sure it holds nothing else: %v", err))
	}
	if len(foreign) > 0 {
		const shown = 5
		list := strings.Join(foreign[:min(shown, len(foreign))], ", ")
		if len(foreign) > shown {
			list += fmt.Sprintf(" and %d more", len(foreign)-shown)
		}
		return keep("it still holds objects this unjoin did not remove: " + list)
	}
	uid := ns.UID
	return runSteps(ctx, []*step{{where: u.mem, ref: ref, action: actionDeleted, run: func(ctx context.Context, s *step) error {
		err := u.mem.kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s in %s: %w", ref, u.mem.context, err)
		}
		return nil
	}}}, u.out)
}

// groupOfKind is the API group of the kinds unjoin deletes in a namespace.
func groupOfKind(kind string) string {
	switch kind {
	case "Role", "RoleBinding":
		return rbacv1.GroupName
	case "Deployment":
		return appsv1.GroupName
	case "Lease":
		return coordinationv1.GroupName
	}
	return ""
}

// planAgentDeploymentRemoval plans the deletion of the agent Deployment
// join created in a member; one join did not create stays.
func planAgentDeploymentRemoval(ctx context.Context, m *cluster, r registration) (*step, error) {
	return planDelete(ctx, m, m.kube.AppsV1().Deployments(r.namespace),
		objectRef{Kind: "Deployment", Namespace: r.namespace, Name: AgentDeploymentName},
		func(d *appsv1.Deployment) bool { return !r.createdForRegistration(d.Labels) })
}

// planHost plans the deletion of the KubeFedCluster, then of its Secret and
// of any Secret an interrupted join left, unless another KubeFedCluster
// uses it; notes say which Secrets are kept.
func (u *unjoiner) planHost(ctx context.Context, kfc *corev1beta1.KubeFedCluster) (steps []*step, notes []string, err error) {
	r, h := u.reg, u.host
	inUse := map[string]bool{}
	var candidates []string
	if kfc != nil {
		uid := kfc.UID
		ref := objectRef{Kind: "KubeFedCluster", Namespace: r.namespace, Name: r.clusterName}
		steps = append(steps, &step{where: h, ref: ref, action: actionDeleted, run: func(ctx context.Context, s *step) error {
			err := h.fed.Delete(ctx, kfc, client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s in %s: %w", ref, h.context, err)
			}
			return nil
		}})
		if kfc.Spec.SecretRef.Name != "" {
			candidates = append(candidates, kfc.Spec.SecretRef.Name)
		}

		var all corev1beta1.KubeFedClusterList
		if err := h.fed.List(ctx, &all, client.InNamespace(r.namespace)); err != nil {
			return nil, nil, fmt.Errorf("list KubeFedClusters in %s: %w", h.context, err)
		}
		for _, other := range all.Items {
			if other.Name != r.clusterName {
				inUse[other.Spec.SecretRef.Name] = true
			}
		}
	}
	if kfc == nil || kfc.PullMode() {
		agentSteps, err := planAgentAccountRemoval(ctx, u.host, u.reg, kfc != nil)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, agentSteps...)
	}
	selector := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedByValue, JoinedClusterLabel: labelValue(r.clusterName)})
	leftovers, err := h.kube.CoreV1().Secrets(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, nil, fmt.Errorf("list Secrets in namespace %q of %s: %w", r.namespace, h.context, err)
	}
	for _, s := range leftovers.Items {
		// A member token Secret of the host joined as a member carries the
		// same labels; the member plan deletes it.
		if s.Type != corev1.SecretTypeServiceAccountToken {
			candidates = append(candidates, s.Name)
		}
	}
	seen := map[string]bool{}
	for _, name := range candidates {
		if seen[name] {
			continue
		}
		seen[name] = true
		ref := objectRef{Kind: "Secret", Namespace: r.namespace, Name: name}
		if inUse[name] {
			notes = append(notes, fmt.Sprintf("%s kept in %s: another KubeFedCluster uses it", ref, h.context))
			continue
		}
		s, err := planDelete[*corev1.Secret](ctx, h, h.kube.CoreV1().Secrets(r.namespace), ref, nil)
		if err != nil {
			return nil, nil, err
		}
		if s != nil {
			steps = append(steps, s)
		}
	}
	return steps, notes, nil
}

// planAgentAccountRemoval plans the removal of a Pull-mode member's agent's host
// account (bindings first, so it loses its access at once), its token and
// its heartbeat Lease; pull says the KubeFedCluster is in Pull mode, else
// it is gone and these are leftovers looked for.
func planAgentAccountRemoval(ctx context.Context, h *cluster, reg registration, pull bool) ([]*step, error) {
	r := reg.agentRegistration()
	notOurs := func(o metav1.Object) bool { return !r.createdForRegistration(o.GetLabels()) }
	rbac := h.kube.RbacV1()
	var plan stepList
	add := plan.add
	// Looking needs rights a namespace admin may lack: a push member's
	// unjoin must not fail on them, and for a Pull-mode member the error
	// names what could not be looked at.
	tolerate := func(s *step, err error) {
		if apierrors.IsForbidden(err) && !pull {
			return
		}
		add(s, err)
	}
	tolerate(planDelete(ctx, h, rbac.ClusterRoleBindings(), clusterRoleBindingRef(r.roleName()), func(o *rbacv1.ClusterRoleBinding) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, rbac.ClusterRoles(), clusterRoleRef(r.roleName()), func(o *rbacv1.ClusterRole) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, rbac.RoleBindings(r.namespace), roleBindingRef(r), func(o *rbacv1.RoleBinding) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, rbac.Roles(r.namespace), roleRef(r), func(o *rbacv1.Role) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, h.kube.CoreV1().Secrets(r.namespace), tokenSecretRef(r), func(o *corev1.Secret) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, h.kube.CoreV1().ServiceAccounts(r.namespace),
		objectRef{Kind: "ServiceAccount", Namespace: r.namespace, Name: r.serviceAccountName()}, func(o *corev1.ServiceAccount) bool { return notOurs(o) }))
	tolerate(planDelete(ctx, h, h.kube.CoordinationV1().Leases(r.namespace),
		objectRef{Kind: "Lease", Namespace: r.namespace, Name: corev1beta1.AgentLeaseName(r.clusterName)}, nil))
	return plan.steps, errors.Join(plan.errs...)
}
