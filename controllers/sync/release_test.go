package sync

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// A status flush reads the object being deleted from the cache, then reads
// members live (othersHold) before it releases the finalizer. Meanwhile a
// release answered a moment ago may be followed by the cache dropping the
// object and its reconcile forgetting that release. The flush then finds no
// release on record, but must not patch the object again: the cache, read
// after that check, no longer shows it (a second patch finds it gone, one
// write too many on the host, as the scale-out integration test counts).
func TestReleaseFinalizerOnceWhenTheReleaseIsForgottenMeanwhile(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"}
	fed := &unstructured.Unstructured{}
	fed.SetAPIVersion("types.kubefed.io/v1beta1")
	fed.SetKind("FederatedConfigMap")
	fed.SetNamespace("ns")
	fed.SetName("a")
	fed.SetUID(types.UID("uid-a"))
	fed.SetFinalizers([]string{corev1beta1.SyncControllerFinalizer})
	now := metav1.Now()
	fed.SetDeletionTimestamp(&now)
	host := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "FederatedConfigMapList"}, fed.DeepCopy())
	w := &typeWorker{
		e:             &Engine{host: host},
		fedGVR:        gvr,
		informer:      toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0, toolscache.Indexers{}),
		released:      map[string]types.UID{},
		statusWritten: map[string]statusRecord{},
		changed:       map[string]changeSeen{},
	}
	if err := w.informer.GetIndexer().Add(fed); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const key = "ns/a"
	patches := func() int {
		n := 0
		for _, a := range host.Actions() {
			if a.Matches("patch", "federatedconfigmaps") {
				n++
			}
		}
		return n
	}

	if err := w.releaseFinalizer(ctx, key, fed, nil); err != nil {
		t.Fatal(err)
	}
	if got := patches(); got != 1 {
		t.Fatalf("%d patches releasing the object, want 1", got)
	}
	live, err := host.Resource(gvr).Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live.GetFinalizers()) != 0 {
		t.Fatalf("finalizers %v after the release", live.GetFinalizers())
	}
	// Released, the apiserver deletes the object; the cache drops it and
	// its reconcile forgets the release.
	if err := host.Tracker().Delete(gvr, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.informer.GetIndexer().Delete(fed); err != nil {
		t.Fatal(err)
	}
	w.forgetGone(key)

	// The flush that read the object before all this goes on with it.
	if err := w.releaseFinalizer(ctx, key, fed, nil); err != nil {
		t.Fatal(err)
	}
	if got := patches(); got != 1 {
		t.Fatalf("%d patches of an object released and gone since the flush read it, want the 1 release (actions %v)",
			got, actionVerbs(host.Actions()))
	}

	// An object of the same name made since is not the one to release:
	// its own reconcile plans it.
	again := fed.DeepCopy()
	again.SetUID(types.UID("uid-b"))
	if err := w.informer.GetIndexer().Add(again); err != nil {
		t.Fatal(err)
	}
	if err := w.releaseFinalizer(ctx, key, fed, nil); err != nil {
		t.Fatal(err)
	}
	if got := patches(); got != 1 {
		t.Fatalf("%d patches after another object of the name came, want the 1 release", got)
	}
}

func actionVerbs(actions []clienttesting.Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.GetVerb() + " " + a.GetResource().Resource
	}
	return out
}
