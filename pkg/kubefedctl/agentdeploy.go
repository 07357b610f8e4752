package kubefedctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubefed-io/kubefed/pkg/version"
)

// The Deployment that runs a Pull-mode member's agent in the member, as
// join --mode pull creates it and the kubefed-agent chart renders it.
const (
	// AgentDeploymentName names the Deployment in the member's KubeFed namespace.
	AgentDeploymentName = "kubefed-agent"
	// AgentImageRepository is the image the agent runs unless --agent-image says otherwise.
	AgentImageRepository = "ghcr.io/kubefed-io/kubefed"
	// agentHostMountPath is where the Secret AgentHostSecret is mounted.
	agentHostMountPath = "/etc/kubefed-agent"
	// agentTemplateHashAnnotation records the pod template join wrote, so
	// that a re-run tells its own template from the API server's defaults.
	agentTemplateHashAnnotation = "kubefed.io/agent-template-hash"
	// agentHostSecretHashAnnotation on the pod template fingerprints the
	// content of the Secret AgentHostSecret, never the content itself. The
	// agent reads its host kubeconfig once, at start: a join that rewrites
	// the Secret (another token, server or CA) changes the template with it
	// and so rolls the Deployment, and the new Pods read the new kubeconfig.
	agentHostSecretHashAnnotation = "kubefed.io/agent-host-secret-hash"
)

// releaseVersion matches the versions of release builds (v1.2.3,
// v1.2.3-rc.1), which have an image of the same tag.
var releaseVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)

// DefaultAgentImage is the image of this kubefedctl's release, or the
// latest one for a development build.
func DefaultAgentImage() string {
	if v := version.Version; releaseVersion.MatchString(v) {
		if v[0] != 'v' {
			v = "v" + v
		}
		return AgentImageRepository + ":" + v
	}
	return AgentImageRepository + ":latest"
}

// AgentContainerArgs are the agent's arguments in its Pod: it reaches the
// host with the kubeconfig of the mounted Secret AgentHostSecret, its
// member in-cluster, and names itself after its Pod in the Leases.
func AgentContainerArgs(clusterName, kubefedNamespace string) []string {
	return []string{
		"agent",
		"--cluster-name=" + clusterName,
		"--kubefed-namespace=" + kubefedNamespace,
		"--host-kubeconfig=" + agentHostMountPath + "/" + AgentHostKubeconfigKey,
		"--identity=$(POD_NAME)",
		"--leader-elect=true",
		"--metrics-addr=:8080",
		"--health-addr=:8081",
	}
}

// AgentDeployment is the Deployment that runs the agent of clusterName in
// the member's namespace as serviceAccount. One replica: a second one
// would stand by (the agents elect a leader on the member) and take over
// within the 15 s lease.
func AgentDeployment(clusterName, namespace, serviceAccount, image string, labels map[string]string) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/name": AgentDeploymentName, "app.kubernetes.io/component": "agent"}
	podLabels := map[string]string{}
	for k, v := range labels {
		podLabels[k] = v
	}
	for k, v := range selector {
		podLabels[k] = v
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			PeriodSeconds:    10,
			TimeoutSeconds:   5,
			FailureThreshold: 3,
		}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: AgentDeploymentName, Namespace: namespace, Labels: podLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccount,
					// The member's account is the agent's identity in its
					// cluster; join's ServiceAccount does not mount it by default.
					AutomountServiceAccountToken:  ptr.To(true),
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "agent",
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"/controller-manager"},
						Args:            AgentContainerArgs(clusterName, namespace),
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
						Ports: []corev1.ContainerPort{
							{Name: "metrics", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
							{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
						},
						LivenessProbe:  probe("/healthz"),
						ReadinessProbe: probe("/readyz"),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "host-kubeconfig", MountPath: agentHostMountPath, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "host-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: AgentHostSecret,
						Items:      []corev1.KeyToPath{{Key: AgentHostKubeconfigKey, Path: AgentHostKubeconfigKey}},
					}}}},
				},
			},
		},
	}
}

// templateHash fingerprints the pod template join writes.
func templateHash(t *corev1.PodTemplateSpec) string {
	raw, err := json.Marshal(t)
	if err != nil {
		panic(err) // a typed template always marshals
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// secretDataHash fingerprints a Secret's data, keys and values.
func secretDataHash(data map[string][]byte) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		// Lengths first, so that no two different maps read the same.
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// desiredAgentDeployment is join's agent Deployment for this registration,
// its Pods started with the Secret AgentHostSecret of hash hostSecretHash
// (none when it is not known, as in a dry run).
func (j *joiner) desiredAgentDeployment(hostSecretHash string) *appsv1.Deployment {
	d := AgentDeployment(j.reg.clusterName, j.reg.namespace, j.reg.serviceAccountName(), j.opts.agentImage, j.reg.labels())
	if hostSecretHash != "" {
		d.Spec.Template.Annotations = map[string]string{agentHostSecretHashAnnotation: hostSecretHash}
	}
	d.Annotations = map[string]string{agentTemplateHashAnnotation: templateHash(&d.Spec.Template)}
	return d
}

// syncAgentDeployment gives live desired's labels and, when join's
// template differs from the one it wrote last, desired's pod template;
// replicas someone scaled stay as they are. It reports whether live
// changed.
func syncAgentDeployment(live, desired *appsv1.Deployment) bool {
	changed := mergeLabels(live, desired.Labels)
	want := desired.Annotations[agentTemplateHashAnnotation]
	if live.Annotations[agentTemplateHashAnnotation] == want {
		return changed
	}
	if live.Annotations == nil {
		live.Annotations = map[string]string{}
	}
	live.Annotations[agentTemplateHashAnnotation] = want
	live.Spec.Template = desired.Spec.Template
	return true
}

// planAgentDeployment plans the agent's Deployment in the member. A re-run
// with another image, or one that rewrote the agent's host kubeconfig,
// rolls it. The Secret's content is only known once its step ran, so the
// Deployment is compared again then; until then (and so in a dry run) the
// Secret is taken to stay as the running Pods have it.
func (j *joiner) planAgentDeployment(ctx context.Context) (*step, error) {
	ref := objectRef{Kind: "Deployment", Namespace: j.reg.namespace, Name: AgentDeploymentName}
	deployments := j.mem.kube.AppsV1().Deployments(j.reg.namespace)
	s := &step{where: j.mem, ref: ref, action: actionCreated, run: func(ctx context.Context, s *step) error {
		desired := j.desiredAgentDeployment(j.agentHostSecretHash)
		live, err := deployments.Get(ctx, AgentDeploymentName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := deployments.Create(ctx, desired, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s in %s: %w", ref, j.mem.context, err)
			}
			s.action = actionCreated
			return nil
		case err != nil:
			return fmt.Errorf("get %s in %s: %w", ref, j.mem.context, err)
		case !syncAgentDeployment(live, desired):
			s.action = actionUnchanged
			return nil
		}
		s.action = actionConfigured
		if _, err := deployments.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update %s in %s: %w", ref, j.mem.context, err)
		}
		return nil
	}}
	if j.namespaceTerminating {
		return s, nil
	}
	live, err := deployments.Get(ctx, AgentDeploymentName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("get %s in %s: %w", ref, j.mem.context, err)
	case j.opts.errorOnExisting && !j.reg.createdForRegistration(live.Labels):
		return nil, existingObjectError(ref, j.mem, j.reg)
	}
	s.action = actionUnchanged
	if syncAgentDeployment(live, j.desiredAgentDeployment(live.Spec.Template.Annotations[agentHostSecretHashAnnotation])) {
		s.action = actionConfigured
	}
	return s, nil
}

// printAgentManifest writes the agent's Deployment as YAML, for a dry run
// or a user who applies it by other means.
func (j *joiner) printAgentManifest() error {
	d := j.desiredAgentDeployment("")
	raw, err := yaml.Marshal(d)
	if err != nil {
		return fmt.Errorf("render the agent's Deployment: %w", err)
	}
	fmt.Fprintf(j.out.out, "---\n%s", raw)
	return nil
}
