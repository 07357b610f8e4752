//go:build integration

package chart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/kubefedctl"
	"github.com/kubefed-io/kubefed/test/framework"
)

// agentChartDir is the chart a Pull-mode member's agent is installed with.
var agentChartDir = filepath.Join(repoRoot, "charts", "kubefed-agent")

func TestAgentChartLintsAndRejectsInvalidValues(t *testing.T) {
	h := newHelm(t)
	if out, err := h.run("lint", "--strict", agentChartDir, "--set", "clusterName=edge1"); err != nil || !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("lint: %v\n%s", err, out)
	}
	for set, want := range map[string]string{
		"":                           "clusterName",
		"clusterName=Edge_1":         "/clusterName",
		"image.pullPolicy=Sometimes": "/image/pullPolicy",
		"host.kubefedNamespace=A B":  "/host/kubefedNamespace",
		// Its Role is in the release namespace, where copies would not go.
		"clusterName=edge1,scope=Namespaced,host.kubefedNamespace=elsewhere": "host.kubefedNamespace \"elsewhere\" must be the release namespace",
	} {
		args := []string{"template", "kubefed-agent", agentChartDir}
		if set != "" {
			args = append(args, "--set", set)
		}
		if _, err := h.run(args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %q: got %v, want an error naming %s", set, err, want)
		}
	}
}

// An agent installed in another namespace than the host's KubeFed
// namespace holds its election Lease in its own, where its account may
// write it.
func TestAgentChartElectsInItsOwnNamespace(t *testing.T) {
	h := newHelm(t)
	out, err := h.run("template", "kubefed-agent", agentChartDir, "--namespace", "agents", "--set", "clusterName=edge1",
		"--set", "host.kubefedNamespace="+corev1beta1.DefaultKubeFedNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--kubefed-namespace=" + corev1beta1.DefaultKubeFedNamespace, "--leader-election-namespace=agents"} {
		if !strings.Contains(out, "- "+want+"\n") {
			t.Errorf("the agent's args lack %s:\n%s", want, out)
		}
	}
}

// The chart's agent is the one kubefedctl join --mode pull creates: the
// same container (but for the log level flag the chart adds), volumes and
// pod settings, so that both ways run an agent the same way.
func TestAgentChartRendersJoinsDeployment(t *testing.T) {
	h := newHelm(t)
	out, err := h.run("template", "kubefed-agent", agentChartDir, "--namespace", corev1beta1.DefaultKubeFedNamespace, "--set", "clusterName=edge1")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	var chart appsv1.Deployment
	into(t, only(t, objs, "Deployment"), &chart)
	got := chart.Spec.Template.Spec
	c := &got.Containers[0]
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--zap-log-level=") })

	join := kubefedctl.AgentDeployment("edge1", corev1beta1.DefaultKubeFedNamespace, got.ServiceAccountName, c.Image, nil)
	if chart.Name != join.Name || *chart.Spec.Replicas != *join.Spec.Replicas {
		t.Errorf("Deployment %s with %d replicas, join's %s with %d", chart.Name, *chart.Spec.Replicas, join.Name, *join.Spec.Replicas)
	}
	want := join.Spec.Template.Spec
	if !equality.Semantic.DeepEqual(got.Containers, want.Containers) {
		t.Errorf("the chart's container differs from join's:\nchart %+v\njoin  %+v", got.Containers[0], want.Containers[0])
	}
	got.Containers, want.Containers = nil, nil
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the chart's pod differs from join's:\nchart %+v\njoin  %+v", got, want)
	}
	if sa := only(t, objs, "ServiceAccount"); sa.GetName() != got.ServiceAccountName {
		t.Errorf("the pod runs as %s, the chart creates %s", got.ServiceAccountName, sa.GetName())
	}
}

// TestAgentChartInstall joins a member in Pull mode with join creating only
// the credentials, installs the agent chart into the member and runs the
// agent as the chart's Deployment would (its arguments, the mounted Secret,
// the chart's ServiceAccount token for the member): the member turns Ready
// through the heartbeat, a federated ConfigMap arrives, and neither the
// agent nor the control plane is refused a request. With both scopes: a
// Namespaced control plane's agent runs on namespaced grants, on the host
// (join's) and in the member (the chart's).
func TestAgentChartInstall(t *testing.T) {
	for _, in := range []install{
		{scope: corev1beta1.ClusterScoped, namespace: corev1beta1.DefaultKubeFedNamespace, release: "kubefed"},
		{scope: corev1beta1.NamespaceScoped, namespace: "kubefed-tenant", release: "tenant"},
	} {
		t.Run(string(in.scope), func(t *testing.T) { agentChartInstall(t, in) })
	}
}

func agentChartInstall(t *testing.T, in install) {
	helm := newHelm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := startHostAndMember(ctx, t)
	ns := in.namespace
	cp := installChart(ctx, t, fw, helm, in)
	cp.start(ctx, t)
	cp.checkDefaultTypesRun(ctx, t)

	member := fw.Members[0]
	if out, errOut, err := fw.Kubefedctl(ctx, "join", member.Name, "--mode", "pull", "--install-agent=false",
		"--cluster-context", member.Name, "--host-cluster-context", fw.Host.Name, "--kubefed-namespace", ns); err != nil {
		t.Fatalf("join: %v\n%s%s", err, out, errOut)
	}
	if _, err := helm.run("install", "kubefed-agent", agentChartDir, "--namespace", ns,
		"--kubeconfig", fw.Kubeconfig, "--kube-context", member.Name, "--set", "clusterName="+member.Name,
		"--set", "scope="+string(in.scope)); err != nil {
		t.Fatal(err)
	}
	if in.scope == corev1beta1.NamespaceScoped {
		// Nothing outside its namespace: the agent's host role reads
		// federated objects there alone, and in the member the chart
		// grants its namespace alone.
		checkAccess(ctx, t, fw.Host, "system:serviceaccount:"+ns+":kubefed-agent-"+member.Name, ns, []access{
			{verb: "watch", group: "types.kubefed.io", resource: "federatedconfigmaps", namespace: ns},
			{verb: "update", group: "types.kubefed.io", resource: "federatedconfigmaps", subresource: "status", namespace: ns},
			{verb: "watch", group: "multiclusterdns.kubefed.io", resource: "servicednsrecords", namespace: ns},
			{verb: "patch", group: "multiclusterdns.kubefed.io", resource: "ingressdnsrecords", subresource: "status", namespace: ns},
		}, []access{
			{verb: "list", group: "types.kubefed.io", resource: "federatedconfigmaps"},
			{verb: "get", group: "types.kubefed.io", resource: "federatedconfigmaps", namespace: "demo"},
			{verb: "list", group: "multiclusterdns.kubefed.io", resource: "servicednsrecords"},
		})
		checkAccess(ctx, t, member, "system:serviceaccount:"+ns+":kubefed-agent", ns, []access{
			{verb: "create", resource: "configmaps", namespace: ns},
			{verb: "list", resource: "nodes"},
		}, []access{
			{verb: "create", resource: "configmaps", namespace: "demo"},
			{verb: "list", resource: "configmaps"},
		})
	}

	var d appsv1.Deployment
	if err := member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: kubefedctl.AgentDeploymentName}, &d); err != nil {
		t.Fatalf("the chart's Deployment in %s: %v", member.Name, err)
	}
	dir := t.TempDir()
	args, err := framework.AgentArgs(ctx, member, &d, dir, "kubefed-agent-test")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "agent.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(binary(t, "controller-manager", "make build"), args...)
	agent.Stdout, agent.Stderr = logFile, logFile
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = agent.Process.Kill()
		_ = agent.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", lastLines(readFile(logPath), 60))
		}
	})

	eventually(t, 90*time.Second, "KubeFedCluster "+member.Name+" Ready through its agent", func() (bool, string) {
		var kfc corev1beta1.KubeFedCluster
		if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: member.Name}, &kfc); err != nil {
			return false, err.Error()
		}
		for _, c := range kfc.Status.Conditions {
			if c.Type == corev1beta1.ClusterReady {
				state := fmt.Sprintf("%s/%s", c.Status, ptr.Deref(c.Reason, ""))
				return state == "True/ClusterReady", state
			}
		}
		return false, "no Ready condition"
	})
	cp.checkPropagates(ctx, t)
	eventually(t, time.Minute, "the agent's status entry on the host", func() (bool, string) {
		fcm := &unstructured.Unstructured{}
		fcm.SetAPIVersion("types.kubefed.io/v1beta1")
		fcm.SetKind("FederatedConfigMap")
		if err := fw.Host.Client.Get(ctx, client.ObjectKey{Namespace: cp.federationNamespace(), Name: "greeting"}, fcm); err != nil {
			return false, err.Error()
		}
		clusters, _, _ := unstructured.NestedSlice(fcm.Object, "status", "clusters")
		return len(clusters) == 1 && fmt.Sprint(clusters[0].(map[string]any)["name"]) == member.Name, fmt.Sprintf("status.clusters %v", clusters)
	})
	var lease coordinationv1.Lease
	if err := member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.AgentLeaderElectionLeaseName}, &lease); err != nil ||
		ptr.Deref(lease.Spec.HolderIdentity, "") != "kubefed-agent-test" {
		t.Errorf("the agents' election Lease in %s: %v, holder %v", member.Name, err, lease.Spec.HolderIdentity)
	}
	if log := readFile(logPath); strings.Contains(log, "forbidden") {
		t.Errorf("the agent was refused requests:\n%s", grepLines(log, "forbidden"))
	}
	// Its part of the DNS records runs: join granted what it checks for.
	if log := readFile(logPath); strings.Contains(log, "DNS record entries are off") {
		t.Errorf("the agent turned its DNS record entries off:\n%s", grepLines(log, "DNS record entries"))
	}
	cp.checkNothingForbidden(t)
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
