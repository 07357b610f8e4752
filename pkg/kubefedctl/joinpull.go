package kubefedctl

import (
	"context"
	"errors"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

// AgentHostSecret is the member Secret, in its KubeFed namespace, whose
// key AgentHostKubeconfigKey holds the kubeconfig with which a Pull-mode
// member's agent reaches the host.
const (
	AgentHostSecret        = "kubefed-agent-host"
	AgentHostKubeconfigKey = "kubeconfig"
)

// Cluster modes join accepts.
const (
	modePush = "push"
	modePull = "pull"
)

// agentRegistration names the host-side objects of a Pull-mode member's
// agent: its ServiceAccount kubefed-agent-<cluster>, the token Secret and
// the ClusterRole and binding of it, in the host's KubeFed namespace.
func (r registration) agentRegistration() registration {
	r.agent = true
	return r
}

// planPull plans a Pull-mode join. The member gets what a push join gives
// it (namespace, ServiceAccount, RBAC: the agent's identity there) and the
// Secret with the agent's host kubeconfig; the host gets the agent's
// ServiceAccount, allowed to read federated objects and their type configs
// and to write their status, events and its own heartbeat only, and the
// KubeFedCluster in Pull mode. No member credential reaches the host.
func (j *joiner) planPull(ctx context.Context) ([]*step, error) {
	var plan stepList
	add := plan.add
	if err := j.planMemberAccess(ctx, &plan); err != nil {
		return nil, err
	}

	// The agent's account on the host, planned as a member's account is:
	// the same token machinery, with the roles of the clusters swapped.
	agent := &joiner{opts: j.opts, reg: j.reg.agentRegistration(), host: j.host, mem: j.host, scope: j.scope, out: j.out, warn: j.warn}
	add(agent.planServiceAccount(ctx))
	groups, err := j.federatedGroups(ctx)
	if err != nil {
		return nil, err
	}
	rbac := j.host.kube.RbacV1()
	r := agent.reg
	takeOver := !j.opts.errorOnExisting
	clusterRole, role := agentRoles(r, groups, j.scope)
	add(applyPlan[*rbacv1.ClusterRole]{
		where: j.host, client: rbac.ClusterRoles(), ref: clusterRoleRef(r.roleName()), desired: clusterRole,
		sync: func(live, desired *rbacv1.ClusterRole) syncResult { return syncRules(&live.Rules, desired.Rules) },
		reg:  r, takeOver: takeOver,
	}.plan(ctx))
	add(applyPlan[*rbacv1.ClusterRoleBinding]{
		where: j.host, client: rbac.ClusterRoleBindings(), ref: clusterRoleBindingRef(r.roleName()), desired: clusterRoleBinding(r, r.roleName()),
		sync: func(live, desired *rbacv1.ClusterRoleBinding) syncResult {
			return syncBinding(&live.RoleRef, &live.Subjects, desired.RoleRef, desired.Subjects)
		},
		reg: r, takeOver: takeOver,
	}.plan(ctx))
	// The heartbeat Lease: created here, so that the agent may only get and
	// renew this one Lease (create cannot be limited by name).
	add(applyPlan[*coordinationv1.Lease]{
		where: j.host, client: j.host.kube.CoordinationV1().Leases(r.namespace),
		ref: objectRef{Kind: "Lease", Namespace: r.namespace, Name: corev1beta1.AgentLeaseName(r.clusterName)},
		desired: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: corev1beta1.AgentLeaseName(r.clusterName), Namespace: r.namespace, Labels: r.labels()}},
		reg: r, takeOver: true,
	}.plan(ctx))
	add(applyPlan[*rbacv1.Role]{
		where: j.host, client: rbac.Roles(r.namespace), ref: roleRef(r), desired: role,
		sync: func(live, desired *rbacv1.Role) syncResult { return syncRules(&live.Rules, desired.Rules) },
		reg:  r, takeOver: takeOver,
	}.plan(ctx))
	add(applyPlan[*rbacv1.RoleBinding]{
		where: j.host, client: rbac.RoleBindings(r.namespace), ref: roleBindingRef(r), desired: roleBinding(r),
		sync: func(live, desired *rbacv1.RoleBinding) syncResult {
			return syncBinding(&live.RoleRef, &live.Subjects, desired.RoleRef, desired.Subjects)
		},
		reg: r, takeOver: takeOver,
	}.plan(ctx))
	add(agent.planTokenSecret(ctx))
	add(j.planAgentHostSecret(ctx, agent))
	if j.opts.installAgent {
		add(j.planAgentDeployment(ctx))
	}
	plan.steps = append(plan.steps, j.planKubeFedCluster())
	// The host Secret of an earlier push join: the host keeps no
	// credential of a Pull-mode member. It goes once the KubeFedCluster is
	// in Pull mode: should that switch fail, the cluster is still pushed to
	// and still needs it.
	if j.existing != nil && j.existing.Spec.SecretRef.Name != "" {
		add(planDelete(ctx, j.host, j.host.kube.CoreV1().Secrets(j.reg.namespace),
			objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: j.existing.Spec.SecretRef.Name},
			func(s *corev1.Secret) bool { return !j.reg.createdForRegistration(s.Labels) }))
	}
	if len(plan.errs) > 0 {
		return nil, errors.Join(plan.errs...)
	}
	return plan.steps, nil
}

// federatedGroups are the API groups of the federated types the host has
// type configs for, which the agent reads.
func (j *joiner) federatedGroups(ctx context.Context) ([]string, error) {
	ftcs, err := listTypeConfigs(ctx, j.host, j.reg.namespace)
	if err != nil {
		return nil, err
	}
	groups := []string{typesv1beta1.DefaultFederatedGroup}
	for _, ftc := range ftcs {
		if g := ftc.Spec.FederatedType.Group; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	return groups, nil
}

// agentRoles are what a Pull-mode member's agent may do on the host, as a
// ClusterRole and a Role in the KubeFed namespace, both named
// kubefed-agent:<cluster>: read the federated objects and write their
// status and events; read the type configs, the KubeFedConfig and its own
// KubeFedCluster; read the DNS records and write their status (its
// entries); get and renew its own heartbeat Lease (agentLeaseRule); read
// kube-system's UID, which tells whether it runs in the host itself.
// Nothing about other clusters, and no Secret; but the templates of every
// federated object, those not placed on it too (FederatedSecrets
// included), are readable. With Cluster scope the federated objects are
// read in every namespace, so their rules are the ClusterRole's; with
// Namespaced scope they are the Role's, in the control plane's namespace
// alone, and the ClusterRole has kube-system's rule only.
func agentRoles(r registration, groups []string, scope corev1beta1.Scope) (*rbacv1.ClusterRole, *rbacv1.Role) {
	read := []string{"get", "list", "watch"}
	objects := []rbacv1.PolicyRule{
		{APIGroups: groups, Resources: []string{"*"}, Verbs: read},
		{APIGroups: groups, Resources: []string{"*/status"}, Verbs: []string{"get", "patch", "update"}},
		{APIGroups: []string{corev1beta1.GroupVersion.Group}, Resources: []string{"federatedtypeconfigs", "kubefedconfigs"}, Verbs: read},
		{APIGroups: []string{corev1beta1.GroupVersion.Group}, Resources: []string{"kubefedclusters"}, ResourceNames: []string{r.clusterName}, Verbs: read},
		// Its entries of the DNS records, from its Services and Ingresses.
		{APIGroups: []string{dnsv1alpha1.GroupVersion.Group}, Resources: []string{"servicednsrecords", "ingressdnsrecords"}, Verbs: read},
		{APIGroups: []string{dnsv1alpha1.GroupVersion.Group}, Resources: []string{"servicednsrecords/status", "ingressdnsrecords/status"}, Verbs: []string{"get", "patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	kubeSystem := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{metav1.NamespaceSystem}, Verbs: []string{"get"}}
	clusterRules, roleRules := append(objects, kubeSystem), []rbacv1.PolicyRule{agentLeaseRule(r)}
	if scope == corev1beta1.NamespaceScoped {
		clusterRules, roleRules = []rbacv1.PolicyRule{kubeSystem}, append(objects, agentLeaseRule(r))
	}
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: r.roleName(), Labels: r.labels()}, Rules: clusterRules},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: r.roleName(), Namespace: r.namespace, Labels: r.labels()}, Rules: roleRules}
}

// agentLeaseRule lets an agent get and renew its own heartbeat Lease, in
// the KubeFed namespace, and no other: join creates it, as creating cannot
// be limited by name.
func agentLeaseRule(r registration) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		ResourceNames: []string{corev1beta1.AgentLeaseName(r.clusterName)}, Verbs: []string{"get", "update"}}
}

// syncRules makes a role's live rules the desired ones.
func syncRules(live *[]rbacv1.PolicyRule, desired []rbacv1.PolicyRule) syncResult {
	if equality.Semantic.DeepEqual(*live, desired) {
		return inSync
	}
	*live = desired
	return needsUpdate
}

// planAgentHostSecret plans the member Secret with the agent's host
// kubeconfig, written once the host issued the agent's token. One that
// join did not write for this cluster (another host's agent reads it) is
// refused unless --error-on-existing=false says to take it over.
func (j *joiner) planAgentHostSecret(ctx context.Context, agent *joiner) (*step, error) {
	ref := objectRef{Kind: "Secret", Namespace: j.reg.namespace, Name: AgentHostSecret}
	secrets := j.mem.kube.CoreV1().Secrets(j.reg.namespace)
	if !j.namespaceTerminating {
		live, err := secrets.Get(ctx, AgentHostSecret, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get %s in %s: %w", ref, j.mem.context, err)
		case !j.reg.createdForRegistration(live.Labels) && j.opts.errorOnExisting:
			return nil, existingObjectError(ref, j.mem, j.reg)
		}
	}
	return &step{where: j.mem, ref: ref, action: actionConfigured, run: func(ctx context.Context, s *step) error {
		kubeconfig, err := agentKubeconfig(j.host, agent.token.Data[tokenKey])
		if err != nil {
			return err
		}
		desired := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: AgentHostSecret, Namespace: j.reg.namespace, Labels: j.reg.labels()},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{AgentHostKubeconfigKey: kubeconfig},
		}
		j.agentHostSecretHash = secretDataHash(desired.Data)
		live, err := secrets.Get(ctx, AgentHostSecret, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("get %s in %s: %w", ref, j.mem.context, err)
		}
		if err != nil {
			if _, err := secrets.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s in %s: %w", ref, j.mem.context, err)
			}
			s.action = actionCreated
			return nil
		}
		if equality.Semantic.DeepEqual(live.Data, desired.Data) && !mergeLabels(live, desired.Labels) {
			s.action = actionUnchanged
			return nil
		}
		mergeLabels(live, desired.Labels)
		live.Data = desired.Data
		if _, err := secrets.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update %s in %s: %w", ref, j.mem.context, err)
		}
		return nil
	}}, nil
}

// agentKubeconfig reaches the host as the user's kubeconfig does (server,
// CA, TLS server name, proxy), authenticated by the agent's token alone.
func agentKubeconfig(host *cluster, token []byte) ([]byte, error) {
	if len(token) == 0 {
		return nil, fmt.Errorf("the host issued no token for the agent")
	}
	cfg := clientcmdapi.NewConfig()
	c := clientcmdapi.NewCluster()
	c.Server = host.server
	c.CertificateAuthorityData = host.caData
	c.TLSServerName = host.serverName
	c.InsecureSkipTLSVerify = host.insecure
	c.ProxyURL = host.proxyURL
	cfg.Clusters["host"] = c
	auth := clientcmdapi.NewAuthInfo()
	auth.Token = string(token)
	cfg.AuthInfos["kubefed-agent"] = auth
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = "host", "kubefed-agent"
	cfg.Contexts["host"] = kctx
	cfg.CurrentContext = "host"
	return clientcmd.Write(*cfg)
}
