package kubefedctl

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/version"
)

func agentDeploymentOf(t *testing.T, f *fakeCluster) *appsv1.Deployment {
	t.Helper()
	d, err := f.kube.AppsV1().Deployments(testNamespace).Get(context.Background(), AgentDeploymentName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent's Deployment: %v", err)
	}
	return d
}

// A pull join runs the agent in the member: a Deployment as join's member
// ServiceAccount, with the Secret holding its way to the host mounted where
// its arguments look for it; a re-run changes nothing, another image rolls
// it; unjoin removes it with the rest.
func TestJoinPullInstallsTheAgent(t *testing.T) {
	w := newWorld(t)
	out := w.mustRun(t, "join", "member1", "--mode", "pull", "--agent-image", "registry.example/kubefed:v9")
	if !strings.Contains(out, "Deployment kube-federation-system/kubefed-agent created in member1\n") {
		t.Errorf("join output lacks the Deployment:\n%s", out)
	}
	d := agentDeploymentOf(t, w.member)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "registry.example/kubefed:v9" || pod.ServiceAccountName != "member1-host" || !ptr.Deref(pod.AutomountServiceAccountToken, false) {
		t.Errorf("image %q, service account %q, automount %v", c.Image, pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if want := []string{"--cluster-name=member1", "--kubefed-namespace=" + testNamespace, "--host-kubeconfig=/etc/kubefed-agent/kubeconfig", "--leader-elect=true"}; !containsAll(c.Args, want) {
		t.Errorf("args %q lack %q", c.Args, want)
	}
	if s := pod.Volumes[0].Secret; s == nil || s.SecretName != AgentHostSecret || c.VolumeMounts[0].MountPath != "/etc/kubefed-agent" {
		t.Errorf("volumes %+v, mounts %+v", pod.Volumes, c.VolumeMounts)
	}
	if _, err := w.member.kube.CoreV1().Secrets(testNamespace).Get(context.Background(), AgentHostSecret, metav1.GetOptions{}); err != nil {
		t.Errorf("the agent's host kubeconfig Secret in the member: %v", err)
	}
	if d.Labels[JoinedClusterLabel] != "member1" || d.Spec.Template.Labels[JoinedClusterLabel] != "member1" {
		t.Errorf("labels %v, pod labels %v", d.Labels, d.Spec.Template.Labels)
	}

	// A re-run with the same settings leaves it alone; someone's scale stays.
	d.Spec.Replicas = ptr.To[int32](2)
	if _, err := w.member.kube.AppsV1().Deployments(testNamespace).Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = w.mustRun(t, "join", "member1", "--mode", "pull", "--agent-image", "registry.example/kubefed:v9", "--error-on-existing=false")
	if !strings.Contains(out, "Deployment kube-federation-system/kubefed-agent unchanged in member1\n") {
		t.Errorf("re-run output:\n%s", out)
	}
	out = w.mustRun(t, "join", "member1", "--mode", "pull", "--agent-image", "registry.example/kubefed:v10", "--error-on-existing=false")
	if !strings.Contains(out, "Deployment kube-federation-system/kubefed-agent configured in member1\n") {
		t.Errorf("new image output:\n%s", out)
	}
	d = agentDeploymentOf(t, w.member)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "registry.example/kubefed:v10" || *d.Spec.Replicas != 2 {
		t.Errorf("after a new image: image %q, replicas %d", got, *d.Spec.Replicas)
	}

	// The agents' election Lease does not keep the namespace.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.AgentLeaderElectionLeaseName, Namespace: testNamespace}}
	if _, err := w.member.kube.CoordinationV1().Leases(testNamespace).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = w.mustRun(t, "unjoin", "member1")
	for _, want := range []string{"Deployment kube-federation-system/kubefed-agent deleted in member1", "Namespace kube-federation-system deleted in member1"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("unjoin output lacks %q:\n%s", want, out)
		}
	}
	if _, err := w.member.kube.AppsV1().Deployments(testNamespace).Get(context.Background(), AgentDeploymentName, metav1.GetOptions{}); err == nil {
		t.Error("the agent's Deployment outlived unjoin")
	}
}

// The agent reads its host kubeconfig once: a re-run of join that writes
// the Secret anew (here the host's token for the agent was rotated) rolls
// the Deployment, whose pod template carries a fingerprint of the Secret,
// not the Secret; a re-run that leaves the Secret as it is leaves the
// Deployment too.
func TestJoinPullRollsTheAgentWhenItsHostKubeconfigChanges(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.mustRun(t, "join", "member1", "--mode", "pull")
	fingerprint := func() string {
		t.Helper()
		d := agentDeploymentOf(t, w.member)
		for k, v := range d.Spec.Template.Annotations {
			if strings.Contains(v, "token") {
				t.Errorf("pod template annotation %s holds the Secret's content: %q", k, v)
			}
		}
		return d.Spec.Template.Annotations[agentHostSecretHashAnnotation]
	}
	first := fingerprint()
	if first == "" {
		t.Fatal("the pod template has no fingerprint of the agent's host kubeconfig")
	}
	out := w.mustRun(t, "join", "member1", "--mode", "pull", "--error-on-existing=false")
	if !strings.Contains(out, "Deployment kube-federation-system/kubefed-agent unchanged in member1\n") || fingerprint() != first {
		t.Errorf("a re-run that changed nothing rolled the agent:\n%s", out)
	}

	agentToken := registration{clusterName: "member1", hostClusterName: "host", namespace: testNamespace}.agentRegistration().tokenSecretName()
	token, err := w.host.kube.CoreV1().Secrets(testNamespace).Get(ctx, agentToken, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token.Data[tokenKey] = []byte("rotated-token")
	if _, err := w.host.kube.CoreV1().Secrets(testNamespace).Update(ctx, token, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = w.mustRun(t, "join", "member1", "--mode", "pull", "--error-on-existing=false")
	for _, want := range []string{
		"Secret kube-federation-system/" + AgentHostSecret + " configured in member1\n",
		"Deployment kube-federation-system/kubefed-agent configured in member1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("re-run output lacks %q:\n%s", want, out)
		}
	}
	if got := fingerprint(); got == first || got == "" {
		t.Errorf("fingerprint %q after the Secret changed, %q before", got, first)
	}
	secret, err := w.member.kube.CoreV1().Secrets(testNamespace).Get(ctx, AgentHostSecret, metav1.GetOptions{})
	if err != nil || !strings.Contains(string(secret.Data[AgentHostKubeconfigKey]), "rotated-token") {
		t.Fatalf("the agent's host kubeconfig was not rewritten: %v", err)
	}
	if got := agentDeploymentOf(t, w.member).Annotations[agentTemplateHashAnnotation]; got != templateHash(&agentDeploymentOf(t, w.member).Spec.Template) {
		t.Errorf("template hash %s does not match the template written", got)
	}
}

// Without --install-agent join writes credentials only and says how to
// run the agent; a Deployment of that name that join did not create is
// refused rather than overwritten, and survives unjoin.
func TestJoinPullWithoutAgentAndForeignDeployment(t *testing.T) {
	w := newWorld(t)
	out := w.mustRun(t, "join", "member1", "--mode", "pull", "--install-agent=false")
	if strings.Contains(out, "Deployment") || !strings.Contains(out, "helm install kubefed-agent charts/kubefed-agent") {
		t.Errorf("output:\n%s", out)
	}
	w.mustRun(t, "unjoin", "member1")

	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: AgentDeploymentName, Namespace: testNamespace}}
	if _, err := w.member.kube.AppsV1().Deployments(testNamespace).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := w.run(t, "join", "member1", "--mode", "pull")
	if err == nil || !strings.Contains(err.Error()+errOut, "Deployment kube-federation-system/kubefed-agent") {
		t.Fatalf("join over a foreign Deployment: err %v, stderr %s", err, errOut)
	}
	w.mustRun(t, "join", "member1", "--mode", "pull", "--install-agent=false")
	w.mustRun(t, "unjoin", "member1")
	if _, err := w.member.kube.AppsV1().Deployments(testNamespace).Get(context.Background(), AgentDeploymentName, metav1.GetOptions{}); err != nil {
		t.Errorf("unjoin deleted a Deployment join did not create: %v", err)
	}
}

// A dry run prints the agent's Deployment as a manifest and writes nothing.
func TestJoinPullDryRunPrintsTheAgent(t *testing.T) {
	w := newWorld(t)
	out := w.mustRun(t, "join", "member1", "--mode", "pull", "--dry-run", "--agent-image", "registry.example/kubefed:v9")
	if writes := append(w.member.writes(), w.host.writes()...); len(writes) > 0 {
		t.Errorf("dry run wrote %v", writes)
	}
	_, manifest, ok := strings.Cut(out, "---\n")
	if !ok {
		t.Fatalf("no manifest in:\n%s", out)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(manifest), &d); err != nil {
		t.Fatalf("manifest: %v\n%s", err, manifest)
	}
	if d.Kind != "Deployment" || d.Namespace != testNamespace || d.Spec.Template.Spec.Containers[0].Image != "registry.example/kubefed:v9" {
		t.Errorf("manifest %s %s/%s image %s", d.Kind, d.Namespace, d.Name, d.Spec.Template.Spec.Containers[0].Image)
	}
}

func TestDefaultAgentImage(t *testing.T) {
	for v, want := range map[string]string{
		"v0.2.0": AgentImageRepository + ":v0.2.0", "0.2.0": AgentImageRepository + ":v0.2.0", "v1.0.0-rc.1": AgentImageRepository + ":v1.0.0-rc.1",
		"dev": AgentImageRepository + ":latest", "7deda36": AgentImageRepository + ":latest", "v0.2.0-3-g7deda36-dirty": AgentImageRepository + ":latest",
	} {
		t.Run(v, func(t *testing.T) {
			old := version.Version
			version.Version = v
			t.Cleanup(func() { version.Version = old })
			if got := DefaultAgentImage(); got != want {
				t.Errorf("DefaultAgentImage() = %q, want %q", got, want)
			}
		})
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
