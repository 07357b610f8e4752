package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestWritesRecordsTheChangesOfPrefixedConfigMaps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Cluster{Name: "member1", Kube: fake.NewClientset()}
	cms := c.Kube.CoreV1().ConfigMaps("ns")
	mk := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	}
	if _, err := cms.Create(ctx, mk("wave-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := WatchWrites(ctx, c, "ns", "wave-")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"wave-1", "wave-2", "other"} {
		if _, err := cms.Create(ctx, mk(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	changed := mk("wave-1")
	changed.Data = map[string]string{"i": "1"}
	for _, cm := range []*corev1.ConfigMap{changed, mk("wave-0"), mk("other")} {
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "wave-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	added, modified, deleted, err := w.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Names(added), "wave-1 wave-2"; got != want {
		t.Errorf("added %q, want %q (the sentinel and other left out, wave-0 made before)", got, want)
	}
	if got, want := Names(modified), "wave-0 wave-1×2"; got != want {
		t.Errorf("modified %q, want %q", got, want)
	}
	if got, want := Names(deleted), "wave-2"; got != want {
		t.Errorf("deleted %q, want %q", got, want)
	}
}
