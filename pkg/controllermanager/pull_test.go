package controllermanager

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// TestPullMembersTellOfEveryChange: the engine hears of a member moving
// between Push and Pull and of a Pull member deleted, after Pulled says
// so, and of nothing else.
func TestPullMembersTellOfEveryChange(t *testing.T) {
	ctx := context.Background()
	cache := &informertest.FakeInformers{Scheme: framework.Scheme()}
	p, err := newPullMembers(ctx, cache, corev1beta1.DefaultKubeFedNamespace)
	if err != nil {
		t.Fatal(err)
	}
	var heard []string
	p.onChange(func(cluster string) {
		heard = append(heard, cluster+"="+map[bool]string{true: "pulled", false: "pushed"}[p.Pulled(cluster)])
	})
	inf, err := cache.FakeInformerFor(ctx, &corev1beta1.KubeFedCluster{})
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(name, namespace string, mode corev1beta1.ClusterMode) *corev1beta1.KubeFedCluster {
		return &corev1beta1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: corev1beta1.KubeFedClusterSpec{Mode: mode}}
	}
	ns := corev1beta1.DefaultKubeFedNamespace
	pushed, pulled := cluster("m1", ns, corev1beta1.ClusterModePush), cluster("m1", ns, corev1beta1.ClusterModePull)

	inf.Add(pushed)                                         // nothing to tell
	inf.Update(pushed, pushed)                              // nothing
	inf.Update(pushed, pulled)                              // m1=pulled
	inf.Update(pulled, pulled)                              // nothing
	inf.Update(pulled, pushed)                              // m1=pushed
	inf.Update(pushed, pulled)                              // m1=pulled
	inf.Delete(pulled)                                      // m1=pushed: gone
	inf.Add(cluster("m2", ns, corev1beta1.ClusterModePush)) // nothing
	inf.Delete(cluster("m2", ns, corev1beta1.ClusterModePush))
	inf.Add(cluster("m3", "elsewhere", corev1beta1.ClusterModePull)) // another namespace's
	inf.Add(cluster("m4", ns, corev1beta1.ClusterModePull))          // m4=pulled

	want := []string{"m1=pulled", "m1=pushed", "m1=pulled", "m1=pushed", "m4=pulled"}
	if !slices.Equal(heard, want) {
		t.Errorf("heard %v, want %v", heard, want)
	}
	if p.Pulled("m3") || !p.Any() {
		t.Errorf("Pulled(m3) %v, Any %v", p.Pulled("m3"), p.Any())
	}
}
