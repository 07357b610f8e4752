package kubefedctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const joinLong = `Register a cluster with a KubeFed control plane.

In the member cluster (--cluster-context, by default the context named
CLUSTER_NAME) join creates, in the KubeFed namespace:
  - the namespace itself, if missing;
  - ServiceAccount <CLUSTER_NAME>-<host cluster name>;
  - RBAC named kubefed-controller-manager:<service account>: with Cluster
    scope a ClusterRole (all verbs on all resources, get on all non-resource
    URLs) and ClusterRoleBinding; with Namespaced scope a Role (all verbs on
    all resources of the namespace) and RoleBinding, plus ClusterRole and
    ClusterRoleBinding kubefed-controller-manager:<namespace>:healthcheck-<service account>
    for health checks (health and discovery endpoints, reading nodes,
    listing pods);
  - Secret <service account>-token of type kubernetes.io/service-account-token,
    which the member's token controller fills with a long-lived token.
In the host cluster (--host-cluster-context, by default the current context)
it creates a Secret holding that token and ca.crt, and the KubeFedCluster
CLUSTER_NAME pointing at the member's API server.

The scope is --scope, else that of the host's KubeFedConfig "kubefed", else
Cluster. The host cluster name defaults to the host context's name, made a
valid Kubernetes name (lowercase, other invalid characters replaced by '-').

With --error-on-existing (the default, as in KubeFed) join fails, changing
nothing, when the KubeFedCluster already exists, or when another object it
would create exists but was not created by kubefedctl join for this cluster.
Objects an interrupted join left behind are reused. With
--error-on-existing=false join updates whatever exists to match.`

const joinExample = `  # Join the cluster of context "member1" to the control plane of the current context
  kubefedctl join member1

  # Name the cluster "east" and join the host cluster itself as well
  kubefedctl join east --cluster-context gke_acme_us-east1_prod --host-cluster-context host
  kubefedctl join host --cluster-context host --host-cluster-context host

  # Show what would be created without changing anything
  kubefedctl join member1 --dry-run`

// namespaceDeletionWait bounds how long join waits for a member's KubeFed
// namespace that an earlier unjoin is still deleting.
const namespaceDeletionWait = 2 * time.Minute

// defaultPollInterval paces the waits for the token and for namespace deletion.
const defaultPollInterval = 500 * time.Millisecond

type joinOptions struct {
	memberOptions
	g *globalOptions

	secretName      string
	scope           string
	mode            string
	errorOnExisting bool
	dryRun          bool
	tokenWait       time.Duration
	installAgent    bool
	agentImage      string

	// Tests shorten these.
	pollInterval  time.Duration
	namespaceWait time.Duration
}

func newJoinCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &joinOptions{g: g, pollInterval: defaultPollInterval, namespaceWait: namespaceDeletionWait}
	cmd := &cobra.Command{
		Use:     "join CLUSTER_NAME [--cluster-context CONTEXT]",
		Short:   "Register a cluster with a KubeFed control plane",
		Long:    joinLong,
		Example: joinExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.clusterName = args[0]
			return o.run(cmd.Context(), streams)
		},
	}
	o.bind(cmd)
	flags := cmd.Flags()
	flags.StringVar(&o.secretName, "secret-name", "",
		"Name of the host Secret holding the member's credentials. Defaults to the one the KubeFedCluster already uses, else a name generated from CLUSTER_NAME.")
	flags.StringVar(&o.scope, "scope", "",
		"Access granted in the member: Cluster or Namespaced. Defaults to the scope of the host's KubeFedConfig, else Cluster.")
	flags.StringVar(&o.mode, "mode", modePush,
		"push: the control plane reaches the member with a token join creates there (KubeFed's way). pull: the member is behind NAT or a firewall; "+
			"its agent (controller-manager agent) reaches the host with a token join creates on the host, and the host stores no credential for the member.")
	flags.BoolVar(&o.installAgent, "install-agent", true,
		"With --mode pull: create the agent's Deployment "+AgentDeploymentName+" in the member. With false, join creates the credentials only; "+
			"run the agent with the kubefed-agent chart or as a process. With --dry-run the Deployment is printed.")
	flags.StringVar(&o.agentImage, "agent-image", DefaultAgentImage(),
		"With --mode pull: the image of the agent's Deployment, which runs /controller-manager agent.")
	flags.BoolVar(&o.errorOnExisting, "error-on-existing", true,
		"Fail if the KubeFedCluster, or an object join did not create, already exists. If false, update existing objects to match.")
	flags.DurationVar(&o.tokenWait, "token-wait", defaultTokenWait,
		"How long to wait for the member's token controller to issue the ServiceAccount token.")
	addDryRunFlag(cmd, &o.dryRun)
	return cmd
}

func (o *joinOptions) run(ctx context.Context, streams IOStreams) error {
	scope, err := parseScope(o.scope)
	if err != nil {
		return err
	}
	if o.secretName != "" {
		if errs := validation.IsDNS1123Subdomain(o.secretName); len(errs) > 0 {
			return fmt.Errorf("invalid --secret-name %q: %s", o.secretName, strings.Join(errs, "; "))
		}
	}
	switch o.mode {
	case modePush, modePull:
	default:
		return fmt.Errorf("invalid --mode %q: must be %s or %s", o.mode, modePush, modePull)
	}
	if o.mode == modePull && o.installAgent && strings.TrimSpace(o.agentImage) == "" {
		return fmt.Errorf("--agent-image is empty; name the image of the agent's Deployment, or pass --install-agent=false")
	}
	if o.mode == modePull && o.secretName != "" {
		return fmt.Errorf("--secret-name names the host Secret with a member's token, which a pull-mode member has none of")
	}
	t, err := o.resolve(o.g, streams)
	if err != nil {
		return err
	}
	if t.memberErr != nil {
		return t.memberErr
	}
	j := &joiner{
		pull:      o.mode == modePull,
		opts:      o,
		reg:       t.reg,
		host:      t.host,
		mem:       t.member,
		scopeFlag: scope,
		out:       printer{out: streams.Out, dryRun: o.dryRun},
		warn:      streams.ErrOut,
	}
	return j.join(ctx)
}

// parseScope accepts the scope names case-insensitively; "" means unset.
func parseScope(s string) (corev1beta1.Scope, error) {
	for _, scope := range []corev1beta1.Scope{corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped} {
		if strings.EqualFold(s, string(scope)) {
			return scope, nil
		}
	}
	if s == "" {
		return "", nil
	}
	return "", fmt.Errorf("invalid --scope %q: must be %s or %s", s, corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped)
}

// joiner carries one join from plan to completion.
type joiner struct {
	opts *joinOptions
	reg  registration
	host *cluster
	mem  *cluster
	// pull is --mode pull.
	pull bool
	// scopeFlag is --scope, "" when not given; scope is the one in effect.
	scopeFlag corev1beta1.Scope
	scope     corev1beta1.Scope
	out       printer
	warn      io.Writer

	// existing is the KubeFedCluster found while planning, if any.
	existing *corev1beta1.KubeFedCluster
	// namespaceTerminating is set when the member's KubeFed namespace is
	// being deleted: everything in it must be created anew.
	namespaceTerminating bool

	// Filled in while the steps run.
	token          *corev1.Secret
	hostSecretName string
	// hostSecretCreated is set when this run created the host Secret, so
	// that it is removed again if the KubeFedCluster cannot be created.
	hostSecretCreated bool
	// agentHostSecretHash fingerprints the agent's host kubeconfig Secret
	// as written, for the agent's Deployment.
	agentHostSecretHash string
}

func (j *joiner) join(ctx context.Context) error {
	steps, err := j.plan(ctx)
	if err != nil {
		return fmt.Errorf("join cluster %q: %w", j.reg.clusterName, err)
	}
	if err := runSteps(ctx, steps, j.out); err != nil {
		return fmt.Errorf("join cluster %q: %w", j.reg.clusterName, err)
	}
	j.out.linef("Cluster %q joined (KubeFedCluster %s/%s)", j.reg.clusterName, j.reg.namespace, j.reg.clusterName)
	switch {
	case !j.pull:
	case j.opts.installAgent:
		j.out.linef("Its agent runs in %s as Deployment %s/%s (image %s); the cluster turns Ready once the agent's heartbeat reaches the host",
			j.mem.context, j.reg.namespace, AgentDeploymentName, j.opts.agentImage)
		if j.opts.dryRun {
			return j.printAgentManifest()
		}
	default:
		j.out.linef("Run its agent in %s: helm install kubefed-agent charts/kubefed-agent -n %s --set clusterName=%s, "+
			"or controller-manager agent --cluster-name %s --host-kubeconfig <key %s of Secret %s/%s in %s>",
			j.mem.context, j.reg.namespace, j.reg.clusterName,
			j.reg.clusterName, AgentHostKubeconfigKey, j.reg.namespace, AgentHostSecret, j.mem.context)
	}
	return nil
}

// plan checks the host, then reads every object join would touch. All
// conflicts are reported together and nothing has been changed by then.
func (j *joiner) plan(ctx context.Context) ([]*step, error) {
	if err := checkHostNamespace(ctx, j.host, j.reg.namespace); err != nil {
		return nil, err
	}
	var err error
	if j.existing, err = getKubeFedCluster(ctx, j.host, j.reg); err != nil {
		return nil, err
	}
	if j.existing != nil && j.opts.errorOnExisting {
		return nil, fmt.Errorf("KubeFedCluster %s/%s already exists in %s; unjoin it first, or re-run with --error-on-existing=false to update it",
			j.reg.namespace, j.reg.clusterName, j.host.context)
	}
	if j.scope, err = j.resolveScope(ctx); err != nil {
		return nil, err
	}
	if j.pull {
		if j.host.insecure {
			fmt.Fprintf(j.warn, "Warning: context %q skips TLS verification; the agent's kubeconfig for the host, in Secret %s/%s of %s, does likewise\n",
				j.host.context, j.reg.namespace, AgentHostSecret, j.mem.context)
		}
		return j.planPull(ctx)
	}
	if j.mem.insecure {
		fmt.Fprintf(j.warn, "Warning: context %q skips TLS verification; KubeFedCluster %s gets disabledTLSValidations [\"*\"] likewise\n",
			j.mem.context, j.reg.clusterName)
	}

	var plan stepList
	add := plan.add
	if err := j.planMemberAccess(ctx, &plan); err != nil {
		return nil, err
	}
	add(j.planTokenSecret(ctx))
	add(j.planHostSecret(ctx))
	plan.steps = append(plan.steps, j.planKubeFedCluster())
	add(j.planOldHostSecretDeletion(ctx))
	if j.existing != nil && j.existing.PullMode() {
		// Back to push: the agent's way to the host goes.
		agentSteps, err := planAgentAccountRemoval(ctx, j.host, j.reg, true)
		plan.steps = append(plan.steps, agentSteps...)
		add(nil, err)
		add(planAgentDeploymentRemoval(ctx, j.mem, j.reg))
		add(planDelete(ctx, j.mem, j.mem.kube.CoreV1().Secrets(j.reg.namespace),
			objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: AgentHostSecret},
			func(s *corev1.Secret) bool { return !j.reg.createdForRegistration(s.Labels) }))
	}
	if len(plan.errs) > 0 {
		return nil, errors.Join(plan.errs...)
	}
	return plan.steps, nil
}

// planMemberAccess plans the member's KubeFed namespace, ServiceAccount
// and RBAC, which push and pull joins both give the member.
func (j *joiner) planMemberAccess(ctx context.Context, plan *stepList) error {
	nsStep, err := j.planNamespace(ctx)
	if err != nil {
		// The first request to the member: without it nothing else can be planned.
		return err
	}
	plan.steps = append(plan.steps, nsStep)
	plan.add(j.planServiceAccount(ctx))
	j.planRBAC(ctx, plan.add)
	return nil
}

// checkHostNamespace makes sure the control plane's namespace exists; it is
// also the first request to the host, so an unreachable host shows here.
func checkHostNamespace(ctx context.Context, host *cluster, namespace string) error {
	ns, err := host.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("namespace %q not found in host cluster %q: install the KubeFed control plane there first, or pass the --kubefed-namespace it runs in",
			namespace, host.context)
	case err != nil:
		return fmt.Errorf("host cluster %q: get namespace %q: %w", host.context, namespace, err)
	case ns.DeletionTimestamp != nil:
		return fmt.Errorf("namespace %q of host cluster %q is being deleted", namespace, host.context)
	}
	return nil
}

// getKubeFedCluster returns the registration's KubeFedCluster, or nil.
func getKubeFedCluster(ctx context.Context, host *cluster, r registration) (*corev1beta1.KubeFedCluster, error) {
	kfc := &corev1beta1.KubeFedCluster{}
	err := host.fed.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.clusterName}, kfc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("the KubeFedCluster API (%s) is not installed in host cluster %q: install the KubeFed control plane there first",
			corev1beta1.GroupVersion, host.context)
	case err != nil:
		return nil, fmt.Errorf("get KubeFedCluster %s/%s in %s: %w", r.namespace, r.clusterName, host.context, err)
	}
	return kfc, nil
}

// resolveScope picks the scope: --scope, else the KubeFedConfig's, else
// Cluster. KubeFed required the KubeFedConfig; a control plane installed
// without one runs Cluster-scoped, so that is the default here.
func (j *joiner) resolveScope(ctx context.Context) (corev1beta1.Scope, error) {
	cfg := &corev1beta1.KubeFedConfig{}
	key := client.ObjectKey{Namespace: j.reg.namespace, Name: corev1beta1.KubeFedConfigName}
	var configured corev1beta1.Scope
	switch err := j.host.fed.Get(ctx, key, cfg); {
	case err == nil:
		configured = cfg.Spec.Scope
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
	default:
		return "", fmt.Errorf("get KubeFedConfig %s in %s: %w", key, j.host.context, err)
	}
	switch {
	case j.scopeFlag != "" && configured != "" && j.scopeFlag != configured:
		fmt.Fprintf(j.warn, "Warning: --scope=%s differs from scope %s of KubeFedConfig %s\n", j.scopeFlag, configured, key)
		return j.scopeFlag, nil
	case j.scopeFlag != "":
		return j.scopeFlag, nil
	case configured != "":
		return configured, nil
	}
	return corev1beta1.ClusterScoped, nil
}

func (j *joiner) planNamespace(ctx context.Context) (*step, error) {
	ref := objectRef{Kind: "Namespace", Name: j.reg.namespace}
	s := &step{where: j.mem, ref: ref, action: actionUnchanged}
	ns, err := j.mem.kube.CoreV1().Namespaces().Get(ctx, j.reg.namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("member cluster %q: get namespace %q: %w", j.mem.context, j.reg.namespace, err)
	case ns.DeletionTimestamp != nil:
		j.namespaceTerminating = true
	default:
		// An existing namespace is left as it is: it may be shared, and
		// unjoin only deletes namespaces that join created.
		return s, nil
	}
	s.action = actionCreated
	s.run = func(ctx context.Context, s *step) error {
		if j.namespaceTerminating {
			if err := waitNamespaceGone(ctx, j.mem, j.reg.namespace, j.opts.namespaceWait, j.opts.pollInterval); err != nil {
				return err
			}
		}
		desired := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   j.reg.namespace,
			Labels: map[string]string{ManagedByLabel: ManagedByValue},
		}}
		_, err := j.mem.kube.CoreV1().Namespaces().Create(ctx, desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			s.action = actionUnchanged
			return nil
		}
		if err != nil {
			return fmt.Errorf("create %s in %s: %w", s.ref, s.where.context, err)
		}
		return nil
	}
	return s, nil
}

// waitNamespaceGone waits until a terminating namespace has been deleted.
func waitNamespaceGone(ctx context.Context, c *cluster, name string, timeout, interval time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for namespace %q in %s, which is being deleted, to be gone: %w", name, c.context, err)
	}
	return nil
}

func (j *joiner) planServiceAccount(ctx context.Context) (*step, error) {
	desired := &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: j.reg.serviceAccountName(), Namespace: j.reg.namespace, Labels: j.reg.labels()},
		// The account is used from outside the cluster only; no pod should mount it.
		AutomountServiceAccountToken: ptr.To(false),
	}
	return applyPlan[*corev1.ServiceAccount]{
		where:   j.mem,
		client:  j.mem.kube.CoreV1().ServiceAccounts(j.reg.namespace),
		ref:     objectRef{Kind: "ServiceAccount", Namespace: j.reg.namespace, Name: desired.Name},
		desired: desired,
		sync: func(live, desired *corev1.ServiceAccount) syncResult {
			if ptr.Equal(live.AutomountServiceAccountToken, desired.AutomountServiceAccountToken) {
				return inSync
			}
			live.AutomountServiceAccountToken = desired.AutomountServiceAccountToken
			return needsUpdate
		},
		reg:      j.reg,
		takeOver: !j.opts.errorOnExisting,
		absent:   j.namespaceTerminating,
	}.plan(ctx)
}

// planRBAC plans the grants of the scope, and the removal of the other
// scope's grants that an earlier join with that scope created.
func (j *joiner) planRBAC(ctx context.Context, add func(*step, error)) {
	rbac := j.mem.kube.RbacV1()
	r, ns := j.reg, j.reg.namespace
	takeOver := !j.opts.errorOnExisting
	notOurs := func(o metav1.Object) bool { return !r.createdForRegistration(o.GetLabels()) }

	clusterRole := func(desired *rbacv1.ClusterRole) {
		add(applyPlan[*rbacv1.ClusterRole]{
			where: j.mem, client: rbac.ClusterRoles(), ref: clusterRoleRef(desired.Name), desired: desired,
			sync: func(live, desired *rbacv1.ClusterRole) syncResult {
				if equality.Semantic.DeepEqual(live.Rules, desired.Rules) && live.AggregationRule == nil {
					return inSync
				}
				live.Rules, live.AggregationRule = desired.Rules, nil
				return needsUpdate
			},
			reg: r, takeOver: takeOver,
		}.plan(ctx))
	}
	clusterBinding := func(desired *rbacv1.ClusterRoleBinding) {
		add(applyPlan[*rbacv1.ClusterRoleBinding]{
			where: j.mem, client: rbac.ClusterRoleBindings(), ref: clusterRoleBindingRef(desired.Name), desired: desired,
			sync: func(live, desired *rbacv1.ClusterRoleBinding) syncResult {
				return syncBinding(&live.RoleRef, &live.Subjects, desired.RoleRef, desired.Subjects)
			},
			reg: r, takeOver: takeOver,
		}.plan(ctx))
	}
	removeClusterGrant := func(name string) {
		add(planDelete(ctx, j.mem, rbac.ClusterRoleBindings(), clusterRoleBindingRef(name),
			func(o *rbacv1.ClusterRoleBinding) bool { return notOurs(o) }))
		add(planDelete(ctx, j.mem, rbac.ClusterRoles(), clusterRoleRef(name),
			func(o *rbacv1.ClusterRole) bool { return notOurs(o) }))
	}

	if j.scope == corev1beta1.ClusterScoped {
		clusterRole(clusterScopeRole(r))
		clusterBinding(clusterRoleBinding(r, r.roleName()))
		removeClusterGrant(r.healthCheckRoleName())
		if !j.namespaceTerminating {
			add(planDelete(ctx, j.mem, rbac.RoleBindings(ns), roleBindingRef(r),
				func(o *rbacv1.RoleBinding) bool { return notOurs(o) }))
			add(planDelete(ctx, j.mem, rbac.Roles(ns), roleRef(r),
				func(o *rbacv1.Role) bool { return notOurs(o) }))
		}
		return
	}
	add(applyPlan[*rbacv1.Role]{
		where: j.mem, client: rbac.Roles(ns), ref: roleRef(r), desired: namespaceScopeRole(r),
		sync: func(live, desired *rbacv1.Role) syncResult { return syncRules(&live.Rules, desired.Rules) },
		reg:  r, takeOver: takeOver, absent: j.namespaceTerminating,
	}.plan(ctx))
	add(applyPlan[*rbacv1.RoleBinding]{
		where: j.mem, client: rbac.RoleBindings(ns), ref: roleBindingRef(r), desired: roleBinding(r),
		sync: func(live, desired *rbacv1.RoleBinding) syncResult {
			return syncBinding(&live.RoleRef, &live.Subjects, desired.RoleRef, desired.Subjects)
		},
		reg: r, takeOver: takeOver, absent: j.namespaceTerminating,
	}.plan(ctx))
	clusterRole(healthCheckRole(r))
	clusterBinding(clusterRoleBinding(r, r.healthCheckRoleName()))
	removeClusterGrant(r.roleName())
}

// syncBinding updates a binding's subjects; a different roleRef, which the
// API does not allow to change, means the binding must be recreated.
func syncBinding(liveRef *rbacv1.RoleRef, liveSubjects *[]rbacv1.Subject, ref rbacv1.RoleRef, subjects []rbacv1.Subject) syncResult {
	if *liveRef != ref {
		return needsRecreate
	}
	if equality.Semantic.DeepEqual(*liveSubjects, subjects) {
		return inSync
	}
	*liveSubjects = subjects
	return needsUpdate
}

func clusterRoleRef(name string) objectRef { return objectRef{Kind: "ClusterRole", Name: name} }

func clusterRoleBindingRef(name string) objectRef {
	return objectRef{Kind: "ClusterRoleBinding", Name: name}
}

func roleRef(r registration) objectRef {
	return objectRef{Kind: "Role", Namespace: r.namespace, Name: r.roleName()}
}

func roleBindingRef(r registration) objectRef {
	return objectRef{Kind: "RoleBinding", Namespace: r.namespace, Name: r.roleName()}
}

func tokenSecretRef(r registration) objectRef {
	return objectRef{Kind: "Secret", Namespace: r.namespace, Name: r.tokenSecretName()}
}

// planTokenSecret plans the member's token Secret: reused when it still
// belongs to the ServiceAccount, replaced when not. Its step also waits for
// the token and keeps it for the host Secret.
func (j *joiner) planTokenSecret(ctx context.Context) (*step, error) {
	ref := tokenSecretRef(j.reg)
	secrets := j.mem.kube.CoreV1().Secrets(j.reg.namespace)
	desired := desiredTokenSecret(j.reg)
	createSecret := func(ctx context.Context) error {
		if _, err := secrets.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s in %s: %w", ref, j.mem.context, err)
		}
		return nil
	}
	// replace swaps a token Secret that no longer serves for a new one.
	replace := func(ctx context.Context, uid types.UID) error {
		err := secrets.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace %s in %s: delete: %w", ref, j.mem.context, err)
		}
		return createSecret(ctx)
	}
	wait := func(ctx context.Context) error {
		token, err := j.waitForAcceptedToken(ctx, ref, createSecret, replace)
		j.token = token
		return err
	}
	create := func(ctx context.Context, s *step) error {
		if err := createSecret(ctx); err != nil {
			return err
		}
		return wait(ctx)
	}
	s := &step{where: j.mem, ref: ref, action: actionCreated, run: create}
	if j.namespaceTerminating {
		return s, nil
	}
	live, err := secrets.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", ref, j.mem.context, err)
	case !j.reg.createdForRegistration(live.Labels) && j.opts.errorOnExisting:
		return nil, existingObjectError(ref, j.mem, j.reg)
	}
	sa, err := j.mem.kube.CoreV1().ServiceAccounts(j.reg.namespace).Get(ctx, j.reg.serviceAccountName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		sa = nil
	case err != nil:
		return nil, fmt.Errorf("get ServiceAccount %s/%s in %s: %w", j.reg.namespace, j.reg.serviceAccountName(), j.mem.context, err)
	}
	if !tokenSecretUsable(live, sa, j.reg) {
		s.action = actionConfigured
		s.run = func(ctx context.Context, s *step) error {
			if err := replace(ctx, live.UID); err != nil {
				return err
			}
			return wait(ctx)
		}
		return s, nil
	}
	s.action = actionUnchanged
	if mergeLabels(live, desired.Labels) {
		s.action = actionConfigured
	}
	s.run = func(ctx context.Context, s *step) error {
		if s.action == actionConfigured {
			if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update %s in %s: %w", ref, j.mem.context, err)
			}
		}
		return wait(ctx)
	}
	return s, nil
}

// waitForAcceptedToken waits for the member's token controller to issue the
// token, then until the member accepts it. A token controller whose cache
// still holds a deleted ServiceAccount of the same name (after an unjoin and
// a quick re-join, or while it catches up after an API server restart)
// issues a token bound to the old account's UID that never authenticates;
// such a Secret is replaced. Everything happens within --token-wait.
func (j *joiner) waitForAcceptedToken(ctx context.Context, ref objectRef,
	createSecret func(context.Context) error, replace func(context.Context, types.UID) error) (*corev1.Secret, error) {
	deadline := time.Now().Add(j.opts.tokenWait)
	for {
		token, err := waitForToken(ctx, j.mem, ref, deadline, j.opts.tokenWait, j.opts.pollInterval)
		if errors.Is(err, errTokenSecretDeleted) && time.Until(deadline) > j.opts.pollInterval {
			// The token controller removed a Secret it found stale.
			if err := createSecret(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		accepted, err := tokenAccepted(ctx, j.mem, token.Data[tokenKey])
		switch {
		case err != nil:
			return nil, err
		case accepted:
			return token, nil
		case !time.Now().Before(deadline):
			return nil, fmt.Errorf("cluster %q does not accept the token its token controller wrote into %s (401 Unauthorized) within %s; "+
				"re-run join, or raise --token-wait", j.mem.context, ref, j.opts.tokenWait)
		}
		sa, err := j.mem.kube.CoreV1().ServiceAccounts(ref.Namespace).Get(ctx, j.reg.serviceAccountName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get ServiceAccount %s/%s in %s: %w", ref.Namespace, j.reg.serviceAccountName(), j.mem.context, err)
		}
		if err == nil && !tokenSecretUsable(token, sa, j.reg) {
			// Someone else replacing it first is as good.
			if err := replace(ctx, token.UID); err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
				return nil, err
			}
			continue
		}
		// The member may not see the new objects yet; ask again.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(j.opts.pollInterval):
		}
	}
}

// planHostSecret plans the host's copy of the member's credentials. Its name
// is --secret-name, else the one the KubeFedCluster already refers to (so a
// re-run updates rather than duplicates it), else generated from the cluster
// name as KubeFed did.
func (j *joiner) planHostSecret(ctx context.Context) (*step, error) {
	secrets := j.host.kube.CoreV1().Secrets(j.reg.namespace)
	name := j.opts.secretName
	if name == "" && j.existing != nil {
		name = j.existing.Spec.SecretRef.Name
	}
	ref := objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: name}
	desired := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: j.reg.namespace, Labels: j.reg.labels()},
			Type:       corev1.SecretTypeOpaque,
			Data:       j.credentials(),
		}
	}
	if name == "" {
		ref.Name = j.reg.clusterName + "-<generated>"
		return &step{where: j.host, ref: ref, action: actionCreated, run: func(ctx context.Context, s *step) error {
			secret := desired()
			secret.GenerateName = j.reg.clusterName + "-"
			created, err := secrets.Create(ctx, secret, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create Secret %s/%s* in %s: %w", j.reg.namespace, secret.GenerateName, j.host.context, err)
			}
			s.ref.Name, j.hostSecretName, j.hostSecretCreated = created.Name, created.Name, true
			return nil
		}}, nil
	}
	j.hostSecretName = name
	live, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &step{where: j.host, ref: ref, action: actionCreated, run: func(ctx context.Context, s *step) error {
			if _, err := secrets.Create(ctx, desired(), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s in %s: %w", ref, j.host.context, err)
			}
			j.hostSecretCreated = true
			return nil
		}}, nil
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", ref, j.host.context, err)
	case !j.reg.createdForRegistration(live.Labels) && j.opts.errorOnExisting:
		return nil, existingObjectError(ref, j.host, j.reg)
	}
	// Whether the token changed is only known once the member issued it.
	return &step{where: j.host, ref: ref, action: actionConfigured, run: func(ctx context.Context, s *step) error {
		changed := mergeLabels(live, j.reg.labels())
		if live.Data == nil {
			live.Data = map[string][]byte{}
		}
		// Other keys someone added are kept; join owns these two.
		for k, v := range j.credentials() {
			if !bytes.Equal(live.Data[k], v) {
				live.Data[k], changed = v, true
			}
		}
		if _, ok := live.Data[caCertKey]; ok && len(j.credentials()[caCertKey]) == 0 {
			delete(live.Data, caCertKey)
			changed = true
		}
		if !changed {
			s.action = actionUnchanged
			return nil
		}
		if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update %s in %s: %w", ref, j.host.context, err)
		}
		return nil
	}}, nil
}

// credentials are the member token Secret's token and CA, once issued.
func (j *joiner) credentials() map[string][]byte {
	data := map[string][]byte{}
	if j.token == nil {
		return data
	}
	data[tokenKey] = j.token.Data[tokenKey]
	if ca := j.token.Data[caCertKey]; len(ca) > 0 {
		data[caCertKey] = ca
	}
	return data
}

// applySpec sets the KubeFedCluster spec fields join owns. The CA comes from
// the kubeconfig, which is what the user trusts for this server; without one
// the cluster controller falls back to the Secret's ca.crt. A kubeconfig
// that skips TLS verification or uses a proxy carries over, as in KubeFed.
func (j *joiner) applySpec(spec *corev1beta1.KubeFedClusterSpec) {
	if j.pull {
		// The endpoint is for people to read; the host never uses it, and
		// holds no credential for it.
		spec.Mode = corev1beta1.ClusterModePull
		spec.APIEndpoint = j.mem.server
		spec.CABundle, spec.SecretRef, spec.DisabledTLSValidations, spec.ProxyURL = nil, corev1beta1.LocalSecretReference{}, nil, ""
		return
	}
	spec.Mode = ""
	spec.APIEndpoint = j.mem.server
	spec.CABundle = j.mem.caData
	spec.SecretRef.Name = j.hostSecretName
	if j.mem.insecure {
		spec.DisabledTLSValidations = []corev1beta1.TLSValidation{corev1beta1.TLSAll}
	} else if slices.Equal(spec.DisabledTLSValidations, []corev1beta1.TLSValidation{corev1beta1.TLSAll}) {
		// What an earlier join from a kubeconfig that skipped verification
		// set, and this one verifies: verification is back on, as KubeFed's
		// join, which rewrote the whole spec, had it.
		spec.DisabledTLSValidations = nil
	}
	if j.mem.proxyURL != "" {
		spec.ProxyURL = j.mem.proxyURL
	}
}

func (j *joiner) planKubeFedCluster() *step {
	ref := objectRef{Kind: "KubeFedCluster", Namespace: j.reg.namespace, Name: j.reg.clusterName}
	if j.existing == nil {
		return &step{where: j.host, ref: ref, action: actionCreated, run: func(ctx context.Context, s *step) error {
			kfc := &corev1beta1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{
				Name: j.reg.clusterName, Namespace: j.reg.namespace, Labels: j.reg.labels(),
			}}
			j.applySpec(&kfc.Spec)
			err := j.host.fed.Create(ctx, kfc)
			if err == nil {
				return nil
			}
			err = fmt.Errorf("create %s in %s: %w", ref, j.host.context, err)
			if j.hostSecretCreated {
				// Without the KubeFedCluster nothing refers to the Secret, and a
				// re-run would create another one.
				secretRef := objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: j.hostSecretName}
				if delErr := j.host.kube.CoreV1().Secrets(j.reg.namespace).Delete(ctx, j.hostSecretName, metav1.DeleteOptions{}); delErr != nil && !apierrors.IsNotFound(delErr) {
					err = errors.Join(err, fmt.Errorf("remove %s again: %w", secretRef, delErr))
				}
			}
			return err
		}}
	}
	key := client.ObjectKeyFromObject(j.existing)
	return &step{where: j.host, ref: ref, action: actionConfigured, run: func(ctx context.Context, s *step) error {
		// The cluster controller writes the status at least once a
		// minute, so the copy read while planning may be stale by now:
		// each try reads it afresh.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live := &corev1beta1.KubeFedCluster{}
			if err := j.host.fed.Get(ctx, key, live); err != nil {
				return err
			}
			before := live.DeepCopy()
			mergeLabels(live, j.reg.labels())
			j.applySpec(&live.Spec)
			if equality.Semantic.DeepEqual(before.Spec, live.Spec) && equality.Semantic.DeepEqual(before.Labels, live.Labels) {
				s.action = actionUnchanged
				return nil
			}
			s.action = actionConfigured
			// Only the fields join owns change; user labels that drive
			// placement and the other spec fields are kept.
			return j.host.fed.Update(ctx, live)
		})
		if err != nil {
			return fmt.Errorf("update %s in %s: %w", ref, j.host.context, err)
		}
		return nil
	}}
}

// planOldHostSecretDeletion removes the host Secret a KubeFedCluster used
// before --secret-name moved it to another, if join created it.
func (j *joiner) planOldHostSecretDeletion(ctx context.Context) (*step, error) {
	if j.existing == nil || j.opts.secretName == "" || j.existing.Spec.SecretRef.Name == j.opts.secretName {
		return nil, nil
	}
	old := j.existing.Spec.SecretRef.Name
	return planDelete(ctx, j.host, j.host.kube.CoreV1().Secrets(j.reg.namespace),
		objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: old},
		func(s *corev1.Secret) bool { return !j.reg.createdForRegistration(s.Labels) })
}

// createdByJoin reports whether kubefedctl join created an object, such as
// a member's KubeFed namespace, which no single registration owns.
func createdByJoin(labels map[string]string) bool {
	return labels[ManagedByLabel] == ManagedByValue
}
