//go:build integration

package sync_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// TestEngineUnavailableDelay checks KubeFed's controllerDuration.
// unavailableDelay on real clusters: a member whose apiserver hangs for
// less than the delay has none of its objects planned or written again,
// while an object created meanwhile says ClusterNotReady at once and
// reaches the member when it is back; a member gone past the delay has
// every object say so, and all converge when it returns.
func TestEngineUnavailableDelay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const delay = 30 * time.Second
	fw := setUpHost(t, ctx)
	host := fw.Host.Client
	cfg := &corev1beta1.KubeFedConfig{}
	if err := host.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: corev1beta1.KubeFedConfigName}, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Spec.ControllerDuration = &corev1beta1.DurationConfig{UnavailableDelay: &metav1.Duration{Duration: delay}}
	if err := host.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	runControllerManager(t, ctx, fw)
	member1, member2 := fw.Members[0], fw.Members[1]
	both := joinMembers(t, ctx, fw)
	allTrue := "True| " + strings.Join(both, " ")

	const n = 10
	name := func(i int) string { return "cm-" + strconv.Itoa(i) }
	for i := range n {
		create(t, ctx, host, fedObject("ConfigMap", testNS, name(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	waitFor(t, ctx, "the objects propagated", time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", name(i)) != allTrue {
				return false
			}
		}
		return true
	})
	versions := func() []string {
		out := make([]string, n)
		for i := range n {
			u := fedObject("ConfigMap", testNS, name(i), nil, nil)
			if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				t.Fatal(err)
			}
			out[i] = u.GetResourceVersion()
		}
		return out
	}
	before := versions()

	pause := func() (notReady time.Time) {
		t.Helper()
		if err := member2.Local.PauseAPIServer(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, member2.Name+" not Ready", time.Minute, func() bool { return !clusterReady(ctx, host, member2.Name) })
		return time.Now()
	}
	resume := func() {
		t.Helper()
		if err := member2.Local.ResumeAPIServer(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, member2.Name+" Ready", time.Minute, func() bool { return clusterReady(ctx, host, member2.Name) })
	}
	resumed := true
	t.Cleanup(func() {
		if !resumed {
			_ = member2.Local.ResumeAPIServer()
		}
	})

	// A hang shorter than the delay.
	resumed = false
	notReady := pause()
	create(t, ctx, host, fedObject("ConfigMap", testNS, "during", map[string]any{"data": map[string]any{"k": "v"}}, both))
	waitFor(t, ctx, "the object created meanwhile says ClusterNotReady", 20*time.Second, func() bool {
		return state(ctx, host, "ConfigMap", "during") == "False/CheckClusters| "+member1.Name+" "+member2.Name+"=ClusterNotReady"
	})
	// Plans and status writes went on meanwhile (the object above); the
	// earlier objects were not written.
	if got := versions(); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("objects written while %s was not Ready for less than the delay: %v -> %v", member2.Name, before, got)
	}
	if waited := time.Since(notReady); waited >= delay {
		t.Fatalf("checked %s after %s was not Ready, past the %s delay: the check proves nothing", waited, member2.Name, delay)
	}
	resume()
	resumed = true
	waitFor(t, ctx, "the object created meanwhile in "+member2.Name, time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "during") == allTrue
	})
	if got := versions(); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("objects written after %s came back within the delay: %v -> %v", member2.Name, before, got)
	}

	// A hang past the delay.
	resumed = false
	pause()
	want := "False/CheckClusters| " + member1.Name + " " + member2.Name + "=ClusterNotReady"
	waitFor(t, ctx, "every object says ClusterNotReady past the delay", delay+time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", name(i)) != want {
				return false
			}
		}
		return true
	})
	resume()
	resumed = true
	waitFor(t, ctx, "every object propagated again", 2*time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", name(i)) != allTrue {
				return false
			}
		}
		return state(ctx, host, "ConfigMap", "during") == allTrue
	})
	if got := copies(t, ctx, member2); got != n {
		t.Fatalf("%s has %d copies, want %d", member2.Name, got, n)
	}
}

// TestEngineMemberBackFromASpell checks a member back from a spell not
// Ready past the unavailable delay: its copies as they were are taken as
// they are, without rendering their objects again, and a copy changed
// during the spell is compared and corrected. member1 is reached through
// a proxy that fails its health checks while serving everything else.
func TestEngineMemberBackFromASpell(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx, func(s *corev1beta1.KubeFedConfigSpec) {
		s.ControllerDuration = &corev1beta1.DurationConfig{UnavailableDelay: &metav1.Duration{Duration: 2 * time.Second}}
	})
	host := fw.Host.Client
	runControllerManager(t, ctx, fw)
	joinMembers(t, ctx, fw)
	member1 := fw.Members[0]
	proxy := throughFaultProxy(t, ctx, fw, member1)
	healthy := true
	t.Cleanup(func() {
		if !healthy {
			proxy.SetHealthy(true)
		}
	})

	const n = 6
	name := func(i int) string { return "spell-" + strconv.Itoa(i) }
	only1 := []string{member1.Name}
	for i := range n {
		create(t, ctx, host, fedObject("ConfigMap", testNS, name(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, only1))
	}
	allState := func(want string) func() bool {
		return func() bool {
			for i := range n {
				if state(ctx, host, "ConfigMap", name(i)) != want {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, ctx, "the copies through the proxy", time.Minute, allState("True| "+member1.Name))

	healthy = false
	proxy.SetHealthy(false)
	waitFor(t, ctx, member1.Name+" not Ready", time.Minute, func() bool { return !clusterReady(ctx, host, member1.Name) })
	waitFor(t, ctx, "every object says ClusterNotReady past the delay", time.Minute,
		allState("False/CheckClusters| "+member1.Name+"=ClusterNotReady"))
	// Changed during the spell, by someone else than the control plane.
	changed := &corev1.ConfigMap{}
	if err := member1.Client.Get(ctx, client.ObjectKey{Namespace: testNS, Name: name(0)}, changed); err != nil {
		t.Fatal(err)
	}
	changed.Data = map[string]string{"i": "changed"}
	if err := member1.Client.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	unchanged, compared := copyChecks(t, member1.Name, "unchanged"), copyChecks(t, member1.Name, "compared")

	proxy.SetHealthy(true)
	healthy = true
	waitFor(t, ctx, "every object propagated again", time.Minute, allState("True| "+member1.Name))
	waitFor(t, ctx, "the copy changed during the spell corrected", time.Minute, func() bool {
		cm := &corev1.ConfigMap{}
		return member1.Client.Get(ctx, client.ObjectKey{Namespace: testNS, Name: name(0)}, cm) == nil && cm.Data["i"] == "0"
	})
	// The objects were planned for member1 again, each copy looked at:
	// the changed one compared with its rendering, the others taken as
	// they were last found up to date (the federated namespace's too).
	waitFor(t, ctx, "every copy looked at", time.Minute, func() bool {
		return copyChecks(t, member1.Name, "unchanged")-unchanged+copyChecks(t, member1.Name, "compared")-compared >= n
	})
	if got := copyChecks(t, member1.Name, "compared") - compared; got != 1 {
		t.Fatalf("%v copies of %s compared with a rendering after the spell, want 1 (the one changed during it)", got, member1.Name)
	}
	if got := copyChecks(t, member1.Name, "unchanged") - unchanged; got < n-1 {
		t.Fatalf("%v copies of %s taken as they were after the spell, want %d or more", got, member1.Name, n-1)
	}
}

// copyChecks reads the engine's kubefed_copy_checks_total of a member.
func copyChecks(t *testing.T, cluster, how string) float64 {
	t.Helper()
	return counterValue(t, "kubefed_copy_checks_total", "cluster", cluster, "how", how)
}

// TestEngineOrphaningWaitsForNoUnreadyMember: as in KubeFed, deleting an
// object with kubefed.io/orphan does not wait for a member out of reach
// (a plain deletion waits up to notReadyClusterDeletionTimeout): the
// object goes once the ready members' copies are unlabelled, and the
// unready member's copy, kept, is unlabelled once it is back.
func TestEngineOrphaningWaitsForNoUnreadyMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fw := setUpHost(t, ctx)
	host := fw.Host.Client
	runControllerManager(t, ctx, fw)
	member1, member2 := fw.Members[0], fw.Members[1]
	both := joinMembers(t, ctx, fw)

	fed := fedObject("ConfigMap", testNS, "cm-orphan", map[string]any{"data": map[string]any{"k": "v"}}, both)
	fed.SetAnnotations(map[string]string{corev1beta1.OrphanManagedResourcesAnnotation: "true"})
	create(t, ctx, host, fed)
	waitFor(t, ctx, "the object propagated", time.Minute, func() bool {
		return state(ctx, host, "ConfigMap", "cm-orphan") == "True| "+strings.Join(both, " ")
	})
	// labels is the copy's managed label in a member ("gone" without one).
	labels := func(c client.Client) string {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: testNS, Name: "cm-orphan"}, cm); err != nil {
			return "gone"
		}
		return cm.Labels["kubefed.io/managed"]
	}

	if err := member2.Local.PauseAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = member2.Local.ResumeAPIServer()
		}
	})
	waitFor(t, ctx, member2.Name+" not Ready", time.Minute, func() bool { return !clusterReady(ctx, host, member2.Name) })

	if err := host.Delete(ctx, fed); err != nil {
		t.Fatal(err)
	}
	// The default notReadyClusterDeletionTimeout is 5 minutes.
	waitFor(t, ctx, "the orphaned object gone with a member out of reach", time.Minute, func() bool {
		return apierrors.IsNotFound(host.Get(ctx, client.ObjectKeyFromObject(fed), fedObject("ConfigMap", testNS, "cm-orphan", nil, nil)))
	})
	if got := labels(member1.Client); got != "" {
		t.Fatalf("member1's copy: managed label %q, want the copy kept without it", got)
	}

	if err := member2.Local.ResumeAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitFor(t, ctx, member2.Name+" Ready", time.Minute, func() bool { return clusterReady(ctx, host, member2.Name) })
	waitFor(t, ctx, "member2's copy kept and unlabelled once it is back", time.Minute, func() bool {
		return labels(member2.Client) == ""
	})
}
