//go:build integration

package localcluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestMembersRunPods starts a member with simulated nodes: the nodes are
// Ready with the configured capacity and topology, and a Deployment, a Job
// and a DaemonSet roll out for real (kube-scheduler binds their pods, kwok
// plays their kubelets), while a pod larger than any node stays
// Unschedulable. The host runs no scheduler and has no nodes.
func TestMembersRunPods(t *testing.T) {
	fed := startFederation(t, Options{
		Clusters: []string{"host", "member1"},
		Nodes:    NodeOptions{Count: 2, CPU: "2", Memory: "2Gi", Pods: 30, Region: "eu", Zones: []string{"eu-a", "eu-b"}},
	})
	ctx := context.Background()
	host, member := fed.Host(), fed.Cluster("member1")
	if _, ok := host.PIDs()[Scheduler]; ok {
		t.Error("the host runs a kube-scheduler")
	}
	for _, comp := range []Component{Scheduler, Kwok} {
		if _, ok := member.PIDs()[comp]; !ok {
			t.Errorf("member1 runs no %s", comp)
		}
	}
	cs, err := kubernetes.NewForConfig(member.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, n := range nodes.Items {
		zones = append(zones, n.Labels[corev1.LabelTopologyZone])
		if n.Labels[corev1.LabelTopologyRegion] != "eu" || n.Status.Allocatable.Cpu().String() != "2" || n.Status.Allocatable.Pods().String() != "30" {
			t.Errorf("node %s: labels %v, allocatable %v", n.Name, n.Labels, n.Status.Allocatable)
		}
	}
	slices.Sort(zones)
	if !slices.Equal(zones, []string{"eu-a", "eu-b"}) {
		t.Errorf("node zones %v, want eu-a and eu-b", zones)
	}

	ns := "pods"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}
	jobTemplate := template.DeepCopy()
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	// A new namespace's "default" ServiceAccount comes a moment later;
	// the workload controllers retry until it is there.
	create := func(what string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	create("Deployment", func() error {
		_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
		return err
	})
	create("Job", func() error {
		_, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"},
			Spec: batchv1.JobSpec{Template: *jobTemplate}}, metav1.CreateOptions{})
		return err
	})
	create("DaemonSet", func() error {
		dsLabels := map[string]string{"app": "agent"}
		dsTemplate := template.DeepCopy()
		dsTemplate.Labels = dsLabels
		_, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: dsLabels}, Template: *dsTemplate}}, metav1.CreateOptions{})
		return err
	})

	eventually(t, 2*time.Minute, "the Deployment, Job and DaemonSet rolled out", func(ctx context.Context) error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.ReadyReplicas == 3 && j.Status.Succeeded == 1 && ds.Status.NumberReady == 2 && ds.Status.DesiredNumberScheduled == 2 {
			return nil
		}
		return fmt.Errorf("deployment %d/3 ready, job %d succeeded, daemonset %d/%d ready",
			d.Status.ReadyReplicas, j.Status.Succeeded, ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	})

	// Larger than either node: the scheduler says so, as the RSP's
	// capacity estimate reads it.
	big := podSpec.DeepCopy()
	big.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	eventually(t, time.Minute, "a pod larger than any node to be created", func(ctx context.Context) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "too-big"}, Spec: *big}, metav1.CreateOptions{})
		return err
	})
	eventually(t, time.Minute, "the pod reported Unschedulable", func(ctx context.Context) error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", p.Status.Conditions)
	})
}
