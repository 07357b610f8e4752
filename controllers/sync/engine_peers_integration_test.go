//go:build integration

package sync_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestEngineScaleOutWithPeers runs three replicas that reach each other
// (--peer-bind-address), two of them serving one member each: every object's status
// is written by one replica, the object's owner, with both members'
// entries, in about one write per object where each replica would write
// its own; one event names both members; deleting goes as fast as without
// peers; and once the owner of objects stops, the other writes their
// status alone.
func TestEngineScaleOutWithPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Entries carry their copies' status (RawResourceStatusCollection), as
	// Deployments' do by default: the host cache holds digests of them.
	fw := setUpHost(t, ctx, func(spec *corev1beta1.KubeFedConfigSpec) {
		spec.FeatureGates = append(spec.FeatureGates, corev1beta1.FeatureGatesConfig{
			Name: corev1beta1.RawResourceStatusCollection, Configuration: corev1beta1.Enabled})
	})
	host := fw.Host.Client
	if _, err := fw.Kubectl(ctx, fw.Host.Name, "apply", "--server-side", "-f", filepath.Join(fw.RepoRoot, "config", "default-types", "deployments.apps.yaml")); err != nil {
		t.Fatal(err)
	}
	names := []string{fw.Members[0].Name, fw.Members[1].Name}
	// Three replicas, two serving a member each: the third writes the
	// status of the objects it owns from the other two's entries alone.
	ids := splittingReplicas(names, "peer-", 3)
	stops := map[string]func(){}
	for _, id := range ids {
		stops[id] = runControllerManager(t, ctx, fw, func(o *controllermanager.Options) {
			o.ScaleOut, o.ReplicaID, o.PeerBindAddress = true, id, "127.0.0.1:0"
		})
	}
	assigned := sharding.Assign(names, ids)
	both := joinMembers(t, ctx, fw)
	waitFor(t, ctx, "each member fenced by its replica", time.Minute, func() bool {
		f, _ := sharding.FenceHolders(ctx, host, corev1beta1.DefaultKubeFedNamespace)
		return f[names[0]] == assigned[names[0]] && f[names[1]] == assigned[names[1]]
	})
	waitFor(t, ctx, "both replicas publishing where to reach them", time.Minute, func() bool {
		leases := 0
		for _, id := range ids {
			var l coordinationv1.Lease
			if err := host.Get(ctx, client.ObjectKey{Namespace: corev1beta1.DefaultKubeFedNamespace, Name: sharding.ReplicaLeaseName(id)}, &l); err == nil &&
				l.Annotations[sharding.PeerAddressAnnotation] != "" && l.Annotations[sharding.PeerCertificateAnnotation] != "" {
				leases++
			}
		}
		return leases == len(ids)
	})

	statusWrites := func() int {
		t.Helper()
		got, err := framework.APIServerRequestSeries(ctx, fw.Host, func(line string) bool {
			return (strings.Contains(line, `verb="PATCH"`) || strings.Contains(line, `verb="APPLY"`) || strings.Contains(line, `verb="PUT"`)) &&
				strings.Contains(line, `resource="federatedconfigmaps"`) && strings.Contains(line, `subresource="status"`)
		})
		if err != nil {
			t.Fatal(err)
		}
		return framework.SeriesTotal(got)
	}
	sentBefore := counterValue(t, "kubefed_peer_reports_sent_total")
	fallbacksBefore := counterValue(t, "kubefed_peer_fallbacks_total") + counterValue(t, "kubefed_peer_send_failures_total")
	before := statusWrites()
	const n = 6 * workers
	want := "True| " + strings.Join(both, " ")
	for i := range n {
		create(t, ctx, host, fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	waitFor(t, ctx, "every object's status listing both replicas' members", 2*time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", "pcm-"+strconv.Itoa(i)) != want {
				return false
			}
		}
		return true
	})
	// One replica, the object's owner, applied both entries.
	owners := map[string]int{}
	for i := range n {
		u := fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		owner := sharding.Owner("federatedconfigmaps/"+testNS+"/"+u.GetName(), ids)
		owners[owner]++
		for _, member := range names {
			if got := statusManagerOf(u, member); got != "kubefed-status/"+owner {
				t.Fatalf("%s: the entry of %s is applied by %q, want the object's owner %s's field manager (managedFields %v)",
					u.GetName(), member, got, owner, u.GetManagedFields())
			}
		}
	}
	if sent := counterValue(t, "kubefed_peer_reports_sent_total") - sentBefore; sent < float64(n) {
		t.Errorf("%v status reports sent between the replicas for %d objects, want at least one per object", sent, n)
	}
	if f := counterValue(t, "kubefed_peer_fallbacks_total") + counterValue(t, "kubefed_peer_send_failures_total") - fallbacksBefore; f != 0 {
		t.Errorf("%v reports were not delivered, or not written by the owner, while both replicas ran", f)
	}
	// Without peers each replica writes its entries: 2n writes at least.
	// With them the owner writes both, once per object but for a member's
	// report that came after its wait.
	writes := statusWrites() - before
	t.Logf("%d status writes for %d objects on 3 replicas (objects per owner %v)", writes, n, owners)
	if len(owners) != len(ids) {
		t.Fatalf("the objects' owners are %v, want each of %v to own some", owners, ids)
	}
	if writes >= 2*n {
		t.Errorf("%d status writes for %d objects, want fewer than one per object and replica (%d)", writes, n, 2*n)
	}
	// One event per object names both members.
	var creations map[string][]string
	defer func() {
		if t.Failed() {
			t.Logf("creation events by object: %v", creations)
		}
	}()
	waitFor(t, ctx, "one creation event per object naming both members", time.Minute, func() bool {
		var events corev1.EventList
		if err := host.List(ctx, &events, client.InNamespace(testNS)); err != nil {
			return false
		}
		creations = map[string][]string{}
		named := map[string]bool{}
		for _, e := range events.Items {
			if e.Reason != "CreateInCluster" {
				continue
			}
			creations[e.InvolvedObject.Name] = append(creations[e.InvolvedObject.Name], fmt.Sprintf("%s (%s, x%d)", e.Message, e.FirstTimestamp.Format(time.StampMilli), e.Count))
			if strings.Contains(e.Message, `"`+both[0]+`"`) && strings.Contains(e.Message, `"`+both[1]+`"`) {
				named[e.InvolvedObject.Name] = true
			}
		}
		for i := range n {
			if !named["pcm-"+strconv.Itoa(i)] {
				return false
			}
		}
		return true
	})

	// One member's entries change alone (an override its API server
	// refuses: ConfigMap data must be strings): the owner's write of that
	// replica's entries keeps the other member's, which it wrote before
	// from the other replica's report.
	for i := range n {
		u := fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"clusterName":      names[0],
			"clusterOverrides": []any{map[string]any{"path": "/data/i", "value": int64(5)}},
		}}, "spec", "overrides"); err != nil {
			t.Fatal(err)
		}
		if err := host.Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "member1's entries failing and member2's kept", time.Minute, func() bool {
		for i := range n {
			got := state(ctx, host, "ConfigMap", "pcm-"+strconv.Itoa(i))
			if !strings.HasPrefix(got, "False/") || strings.Contains(got, " "+names[1]+"=") || !strings.Contains(got, " "+names[1]) ||
				!strings.Contains(got, " "+names[0]+"=") {
				return false
			}
		}
		return true
	})
	t.Logf("with member1 refusing: %s", state(ctx, host, "ConfigMap", "pcm-0"))
	for i := range n {
		u := fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u.Object, "spec", "overrides")
		if err := host.Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "every object propagated again", time.Minute, func() bool {
		for i := range n {
			if state(ctx, host, "ConfigMap", "pcm-"+strconv.Itoa(i)) != want {
				return false
			}
		}
		return true
	})

	// Deployments: each entry carries its copy's status. One member's
	// copies change (an override of their replicas): the owner writes that
	// replica's new entries with the other member's, whose remote status
	// it reads from the host (its cache holds digests of it).
	const d = 2 * workers
	deployment := func(i int) *unstructured.Unstructured {
		return fedObject("Deployment", testNS, "pd-"+strconv.Itoa(i), map[string]any{"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "pd"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "pd"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		}}, both)
	}
	for i := range d {
		create(t, ctx, host, deployment(i))
	}
	// remoteDesired is the replicas of member's copy of pd-i as its entry
	// reports them, or -1.
	remoteDesired := func(i int, member string) int64 {
		u := deployment(i)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return -1
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if m["name"] == member {
				if r, ok, _ := unstructured.NestedInt64(m, "remoteStatus", "replicas"); ok {
					return r
				}
				if _, ok := m["remoteStatus"]; ok {
					return 0
				}
			}
		}
		return -1
	}
	waitFor(t, ctx, "every Deployment's entries carrying both copies' status", 2*time.Minute, func() bool {
		for i := range d {
			if state(ctx, host, "Deployment", "pd-"+strconv.Itoa(i)) != want || remoteDesired(i, names[0]) < 0 || remoteDesired(i, names[1]) < 0 {
				return false
			}
		}
		return true
	})
	fallbacksBefore = counterValue(t, "kubefed_peer_fallbacks_total") + counterValue(t, "kubefed_peer_send_failures_total")
	for i := range d {
		u := deployment(i)
		if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"clusterName":      names[0],
			"clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(3)}},
		}}, "spec", "overrides"); err != nil {
			t.Fatal(err)
		}
		if err := host.Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "member1's copies reporting 3 replicas, member2's entries kept", time.Minute, func() bool {
		for i := range d {
			if state(ctx, host, "Deployment", "pd-"+strconv.Itoa(i)) != want || remoteDesired(i, names[0]) != 3 || remoteDesired(i, names[1]) < 0 {
				return false
			}
		}
		return true
	})
	if f := counterValue(t, "kubefed_peer_fallbacks_total") + counterValue(t, "kubefed_peer_send_failures_total") - fallbacksBefore; f != 0 {
		t.Errorf("%v Deployment reports were not delivered, or not written by the owner", f)
	}
	for i := range d {
		if err := host.Delete(ctx, deployment(i)); err != nil {
			t.Fatal(err)
		}
	}

	// Deleting: the owner releases each object once the other's copy is
	// gone, as the other tells it.
	for i := range n / 2 {
		if err := host.Delete(ctx, fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	waitFor(t, ctx, "half the objects deleted across both replicas", time.Minute, func() bool {
		for i := range n / 2 {
			u := fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)
			if err := host.Get(ctx, client.ObjectKeyFromObject(u), u); err == nil {
				return false
			}
		}
		return true
	})
	// Without the other's word the owner waits for the host to show it,
	// 10 s and more.
	if took := time.Since(deleted); took > 8*time.Second {
		t.Errorf("deleting %d objects took %s", n/2, took.Round(time.Millisecond))
	}

	// The replica serving member1 stops: the others take over its member,
	// and its objects' status.
	leaving := assigned[names[0]]
	stops[leaving]()
	waitFor(t, ctx, "member1 handed over", 30*time.Second, func() bool {
		f, _ := sharding.FenceHolders(ctx, host, corev1beta1.DefaultKubeFedNamespace)
		return f[names[0]] != "" && f[names[0]] != leaving
	})
	for i := n; i < 2*n; i++ {
		create(t, ctx, host, fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), map[string]any{"data": map[string]any{"i": strconv.Itoa(i)}}, both))
	}
	waitFor(t, ctx, "the next objects propagated by the remaining replica", 2*time.Minute, func() bool {
		for i := n; i < 2*n; i++ {
			if state(ctx, host, "ConfigMap", "pcm-"+strconv.Itoa(i)) != want {
				return false
			}
		}
		return true
	})
	for i := n / 2; i < 2*n; i++ {
		if err := host.Delete(ctx, fedObject("ConfigMap", testNS, "pcm-"+strconv.Itoa(i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitAllGone(t, ctx, fw)
}
