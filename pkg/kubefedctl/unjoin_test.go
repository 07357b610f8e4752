package kubefedctl

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestUnjoinRemovesExactlyWhatJoinCreated(t *testing.T) {
	for _, scope := range []corev1beta1.Scope{corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped} {
		t.Run(string(scope), func(t *testing.T) {
			w := newWorld(t)
			// Objects that were there before must survive, in both clusters.
			userCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}}
			for _, f := range []*fakeCluster{w.host, w.member} {
				if _, err := f.kube.CoreV1().ConfigMaps("default").Create(context.Background(), userCM, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			memberBefore, hostBefore := w.member.objects(t), w.host.objects(t)
			w.mustRun(t, "join", "member1", "--scope="+string(scope))
			hostSecret := w.hostSecret(t).Name

			out := w.mustRun(t, "unjoin", "member1")
			if got := w.member.objects(t); !slices.Equal(got, memberBefore) {
				t.Errorf("member objects after unjoin:\n got %q\nwant %q", got, memberBefore)
			}
			if got := w.host.objects(t); !slices.Equal(got, hostBefore) {
				t.Errorf("host objects after unjoin:\n got %q\nwant %q", got, hostBefore)
			}
			var wantLines []string
			for _, obj := range memberObjects[scope] {
				wantLines = append(wantLines, obj+" deleted in member1")
			}
			wantLines = append(wantLines,
				"KubeFedCluster kube-federation-system/member1 deleted in host",
				"Secret kube-federation-system/"+hostSecret+" deleted in host",
				`Cluster "member1" unjoined`)
			gotLines := strings.Split(strings.TrimSpace(out), "\n")
			slices.Sort(wantLines)
			slices.Sort(gotLines)
			if !slices.Equal(gotLines, wantLines) {
				t.Errorf("output:\n got %q\nwant %q", gotLines, wantLines)
			}

			// Joining again works.
			w.mustRun(t, "join", "member1", "--scope="+string(scope))
			if got := w.member.objects(t); len(got) != len(memberBefore)+len(memberObjects[scope]) {
				t.Errorf("rejoin: member objects %q", got)
			}
		})
	}
}

func TestUnjoinHostItselfKeepsNamespace(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "host", "--cluster-context=host")
	out := w.mustRun(t, "unjoin", "host", "--cluster-context=host")
	if got, want := w.host.objects(t), []string{"Namespace kube-federation-system"}; !slices.Equal(got, want) {
		t.Errorf("host objects:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(out, "Namespace kube-federation-system kept in host: the member is the host cluster") {
		t.Errorf("output does not say why the namespace is kept:\n%s", out)
	}
}

// A context with another name for the host still is the host; so is one
// with the same server URL.
func TestUnjoinRecognisesHostUnderAnotherContext(t *testing.T) {
	w := newWorld(t)
	// Label the host namespace as if join had created it, so that only
	// the host check can keep it.
	ns, _ := w.host.kube.CoreV1().Namespaces().Get(context.Background(), testNamespace, metav1.GetOptions{})
	ns.Labels = map[string]string{ManagedByLabel: ManagedByValue}
	if _, err := w.host.kube.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	alias := &fakeCluster{kube: w.host.kube, fed: w.host.fed}
	alias.cluster = &cluster{context: "host-admin", server: "https://HOST.example:6443/", kube: w.host.kube, metadata: w.host.metadata, fed: w.host.fed, caData: w.host.caData}
	w.conn["host-admin"] = alias
	w.mustRun(t, "join", "self", "--cluster-context=host-admin")
	out := w.mustRun(t, "unjoin", "self", "--cluster-context=host-admin")
	if !strings.Contains(out, "kept in host-admin: the member is the host cluster") {
		t.Errorf("namespace not kept:\n%s", out)
	}
}

func TestUnjoinKeepsNamespaceHoldingOtherObjects(t *testing.T) {
	t.Run("foreign objects", func(t *testing.T) {
		w := newWorld(t)
		w.mustRun(t, "join", "member1")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "user-data", Namespace: testNamespace}}
		if _, err := w.member.kube.CoreV1().ConfigMaps(testNamespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// What Kubernetes itself puts into a namespace does not count.
		root := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: testNamespace}}
		if _, err := w.member.kube.CoreV1().ConfigMaps(testNamespace).Create(context.Background(), root, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := w.mustRun(t, "unjoin", "member1")
		if !strings.Contains(out, "Namespace kube-federation-system kept in member1: it still holds objects this unjoin did not remove: ConfigMap user-data\n") {
			t.Errorf("output:\n%s", out)
		}
		want := []string{
			"ConfigMap kube-federation-system/kube-root-ca.crt",
			"ConfigMap kube-federation-system/user-data",
			"Namespace kube-federation-system",
		}
		if got := w.member.objects(t); !slices.Equal(got, want) {
			t.Errorf("member objects:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("system objects only", func(t *testing.T) {
		w := newWorld(t)
		w.mustRun(t, "join", "member1")
		for _, obj := range []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: testNamespace}}} {
			if _, err := w.member.kube.CoreV1().ConfigMaps(testNamespace).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: testNamespace}}
		if _, err := w.member.kube.CoreV1().ServiceAccounts(testNamespace).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev", Namespace: testNamespace}}
		if _, err := w.member.kube.CoreV1().Events(testNamespace).Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := w.mustRun(t, "unjoin", "member1")
		if !strings.Contains(out, "Namespace kube-federation-system deleted in member1\n") {
			t.Errorf("namespace not deleted:\n%s", out)
		}
	})
	t.Run("namespace join did not create", func(t *testing.T) {
		w := newWorld(t)
		w.member = newFakeCluster(t, "member1", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})
		w.conn["member1"] = w.member
		w.mustRun(t, "join", "member1")
		out := w.mustRun(t, "unjoin", "member1")
		if !strings.Contains(out, "Namespace kube-federation-system kept in member1: it was not created by kubefedctl join") {
			t.Errorf("output:\n%s", out)
		}
		if got, want := w.member.objects(t), []string{"Namespace kube-federation-system"}; !slices.Equal(got, want) {
			t.Errorf("member objects %q, want %q", got, want)
		}
	})
	t.Run("another registration", func(t *testing.T) {
		w := newWorld(t)
		w.mustRun(t, "join", "member1")
		w.mustRun(t, "join", "alias", "--cluster-context=member1")
		out := w.mustRun(t, "unjoin", "member1")
		if !strings.Contains(out, "it still holds objects this unjoin did not remove: Secret alias-host-token, ServiceAccount alias-host") {
			t.Errorf("output:\n%s", out)
		}
		if getKFC(t, w.host, "alias").Spec.SecretRef.Name == "" {
			t.Error("the other registration was damaged")
		}
	})
}

// Clusters joined by KubeFed carry no labels; unjoin finds their objects
// by name.
func TestUnjoinCleansKubeFedJoinedCluster(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	ctx := context.Background()
	sa, _ := w.member.kube.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "member1-host", metav1.GetOptions{})
	sa.Labels = nil
	if _, err := w.member.kube.CoreV1().ServiceAccounts(testNamespace).Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cr, _ := w.member.kube.RbacV1().ClusterRoles().Get(ctx, "kubefed-controller-manager:member1-host", metav1.GetOptions{})
	cr.Labels = nil
	if _, err := w.member.kube.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// KubeFed's own token Secret name.
	legacy := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member1-host", Namespace: testNamespace,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "member1-host"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if _, err := w.member.kube.CoreV1().Secrets(testNamespace).Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.mustRun(t, "unjoin", "member1")
	if got := w.member.objects(t); len(got) != 0 {
		t.Errorf("member objects left: %q", got)
	}
}

func TestUnjoinUnreachableMember(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	w.member.setUnreachable(true)
	hostBefore := w.host.objects(t)

	_, _, err := w.run(t, "unjoin", "member1")
	if err == nil || !strings.Contains(err.Error(), "cannot reach member cluster \"member1\"") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("got %v, want an error suggesting --force", err)
	}
	if got := w.host.objects(t); !slices.Equal(got, hostBefore) {
		t.Errorf("host changed without --force: %q", got)
	}

	out, errOut, err := w.run(t, "unjoin", "member1", "--force")
	if err != nil {
		t.Fatalf("unjoin --force: %v\n%s", err, errOut)
	}
	if got, want := w.host.objects(t), []string{"Namespace kube-federation-system"}; !slices.Equal(got, want) {
		t.Errorf("host objects after --force: %q", got)
	}
	if !strings.Contains(out, `Cluster "member1" unjoined`) {
		t.Errorf("output:\n%s", out)
	}
	for _, want := range []string{"connection refused", "may remain in member cluster \"member1\"", "ServiceAccount kube-federation-system/member1-host", "ClusterRole kubefed-controller-manager:member1-host"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// The member's objects are indeed still there.
	w.member.setUnreachable(false)
	if got := w.member.objects(t); !slices.Equal(got, memberObjects[corev1beta1.ClusterScoped]) {
		t.Errorf("member objects %q", got)
	}
	// And a later unjoin, the member back, cleans them up.
	w.mustRun(t, "unjoin", "member1")
	if got := w.member.objects(t); len(got) != 0 {
		t.Errorf("member objects left: %q", got)
	}
}

func TestUnjoinMissingMemberContextWithForce(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	delete(w.conn, "member1")
	if _, _, err := w.run(t, "unjoin", "member1"); err == nil {
		t.Fatal("unjoin without the member's context succeeded without --force")
	}
	w.mustRun(t, "unjoin", "member1", "--force")
	if got := w.host.objects(t); len(got) != 1 {
		t.Errorf("host objects %q", got)
	}
}

func TestUnjoinNotJoined(t *testing.T) {
	w := newWorld(t)
	_, _, err := w.run(t, "unjoin", "member1")
	if err == nil || !strings.Contains(err.Error(), `cluster "member1" is not joined`) {
		t.Fatalf("got %v", err)
	}
	// Nor after an unjoin whose namespace deletion is still under way.
	w.mustRun(t, "join", "member1")
	w.member.kube.PrependReactor("delete", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		ns, err := w.member.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", testNamespace)
		if err != nil {
			return true, nil, err
		}
		terminating := ns.(*corev1.Namespace).DeepCopy()
		now := metav1.Now()
		terminating.DeletionTimestamp = &now
		return true, nil, w.member.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("namespaces"), terminating, "")
	})
	w.mustRun(t, "unjoin", "member1")
	if _, _, err := w.run(t, "unjoin", "member1"); err == nil || !strings.Contains(err.Error(), "is not joined") {
		t.Errorf("second unjoin: got %v", err)
	}
}

// With --force, a cluster neither registered nor reachable is not said to
// hold nothing join creates: its member could not be looked at.
func TestUnjoinForcedOfAnUnreachableMemberNotJoined(t *testing.T) {
	w := newWorld(t)
	w.member.setUnreachable(true)
	_, _, err := w.run(t, "unjoin", "member1", "--force")
	if err == nil || !strings.Contains(err.Error(), `is not joined`) || !strings.Contains(err.Error(), `could not be looked at`) {
		t.Fatalf("got %v", err)
	}
}

func TestUnjoinDryRun(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1")
	member, host := w.member.objects(t), w.host.objects(t)
	w.member.kube.ClearActions()
	w.host.kube.ClearActions()
	out := w.mustRun(t, "unjoin", "member1", "--dry-run")
	if writes := append(w.member.writes(), w.host.writes()...); len(writes) > 0 {
		t.Errorf("dry run wrote %v", writes)
	}
	if !slices.Equal(w.member.objects(t), member) || !slices.Equal(w.host.objects(t), host) {
		t.Error("dry run changed objects")
	}
	for _, want := range []string{
		"ServiceAccount kube-federation-system/member1-host deleted in member1 (dry run)",
		"Namespace kube-federation-system deleted in member1 (dry run)",
		"KubeFedCluster kube-federation-system/member1 deleted in host (dry run)",
		`Cluster "member1" unjoined (dry run)`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
}

func TestUnjoinKeepsSecretSharedWithAnotherCluster(t *testing.T) {
	w := newWorld(t)
	w.mustRun(t, "join", "member1", "--secret-name=shared")
	other := &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: testNamespace},
		Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: "https://other", SecretRef: corev1beta1.LocalSecretReference{Name: "shared"}},
	}
	if err := w.host.fed.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	out := w.mustRun(t, "unjoin", "member1")
	if !strings.Contains(out, "Secret kube-federation-system/shared kept in host: another KubeFedCluster uses it") {
		t.Errorf("output:\n%s", out)
	}
	if w.hostSecret(t).Name != "shared" {
		t.Error("shared Secret deleted")
	}
}

// A forced unjoin of an unreachable Pull-mode member lists the agent's
// objects among what may remain: its Deployment, its way to the host and
// its replicas' election Lease. A push member had none of them.
func TestUnjoinUnreachablePullMemberListsTheAgent(t *testing.T) {
	agentObjects := []string{
		"Deployment kube-federation-system/" + AgentDeploymentName,
		"Secret kube-federation-system/" + AgentHostSecret,
		"Lease kube-federation-system/" + corev1beta1.AgentLeaderElectionLeaseName,
	}
	for _, mode := range []string{modePull, modePush} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t)
			w.mustRun(t, "join", "member1", "--mode", mode)
			w.member.setUnreachable(true)
			_, errOut, err := w.run(t, "unjoin", "member1", "--force")
			if err != nil {
				t.Fatalf("unjoin --force: %v\n%s", err, errOut)
			}
			_, remaining, ok := strings.Cut(errOut, "may remain in member cluster \"member1\"")
			if !ok || !strings.Contains(remaining, "ServiceAccount kube-federation-system/member1-host") {
				t.Fatalf("stderr lacks the list of what may remain:\n%s", errOut)
			}
			for _, obj := range agentObjects {
				if listed := strings.Contains(remaining, obj); listed != (mode == modePull) {
					t.Errorf("%s listed %v, want %v:\n%s", obj, listed, mode == modePull, errOut)
				}
			}
		})
	}
}
