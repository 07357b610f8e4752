package sync

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	gosync "sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// As in KubeFed, a copy someone else changed since this engine wrote it is
// written again even when it still holds every desired value: a field
// added by hand goes. A copy whose spec nobody changed (its status did) is
// not written.
func TestACopyEditedByHandIsWrittenAgain(t *testing.T) {
	var mu gosync.Mutex
	var puts []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			http.Error(rw, "unexpected", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		obj := map[string]any{}
		_ = json.Unmarshal(body, &obj)
		mu.Lock()
		puts = append(puts, obj)
		mu.Unlock()
		u := &unstructured.Unstructured{Object: obj}
		u.SetResourceVersion("11")
		u.SetGeneration(3)
		rw.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(u.Object)
		_, _ = rw.Write(out)
	}))
	defer srv.Close()
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	if _, err := registry.SetLocal("member1", &rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	e := &Engine{opts: Options{Registry: registry, ClusterTimeout: 5 * time.Second}, ctx: context.Background()}
	w := &typeWorker{e: e, name: "deployments.apps", gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		target: deploymentType, recorder: record.NewFakeRecorder(10),
		written: map[writeKey]writeRecord{}, changed: map[string]changeSeen{}}
	w.events = newMemberEvents(w.recorder, time.Hour, time.Hour)
	fed := &unstructured.Unstructured{Object: fedDeployment()}
	desired, hash, err := desiredObject(fed.Object, "web", "demo", deploymentType, nil)
	if err != nil {
		t.Fatal(err)
	}
	copyAt := func(rv string, generation int64, extra map[string]any) *unstructured.Unstructured {
		c := &unstructured.Unstructured{Object: jsonvalue.Copy(desired).(map[string]any)}
		c.SetResourceVersion(rv)
		c.SetGeneration(generation)
		for k, v := range extra {
			c.Object["spec"].(map[string]any)[k] = v
		}
		return c
	}
	w.remember("member1", fed, hash, "5", 1)

	// The member's controller wrote its status: a new resourceVersion,
	// the same generation. Nothing to write.
	if o := w.update(context.Background(), fed, "member1", desired, hash, nil, copyAt("6", 1, nil), false); o.status != "" {
		t.Fatalf("status-only change: %s %s", o.status, o.message)
	}
	mu.Lock()
	n := len(puts)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("a copy whose spec nobody changed was written %d times", n)
	}

	// Someone added spec.minReadySeconds by hand: a new generation. The
	// copy still holds every desired value, and is written all the same,
	// without the field.
	if o := w.update(context.Background(), fed, "member1", desired, hash, nil, copyAt("9", 2, map[string]any{"minReadySeconds": int64(5)}), false); o.status != "" {
		t.Fatalf("edited copy: %s %s", o.status, o.message)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(puts) != 1 {
		t.Fatalf("the edited copy was written %d times, want once", len(puts))
	}
	if _, ok := puts[0]["spec"].(map[string]any)["minReadySeconds"]; ok {
		t.Errorf("the field added by hand was written back: %v", puts[0]["spec"])
	}
	if !w.lastWrite("member1", fed).at(hash, "11") {
		t.Error("the write is not remembered")
	}
}

// The records of writes to a member that left, or that another replica
// serves now, go: kept, they would grow with every member that ever left,
// and take the other replica's writes for edits were it handed back.
func TestWritesToAMemberThatLeftAreForgotten(t *testing.T) {
	w := &typeWorker{written: map[writeKey]writeRecord{
		{"member1", "ns/a"}: {hash: "h1"}, {"member1", "ns/b"}: {hash: "h2"}, {"member2", "ns/a"}: {hash: "h1"},
	}}
	e := &Engine{workers: map[string]*typeWorker{"configmaps": w}}
	e.forgetWrites("member1")
	if len(w.written) != 1 || w.written[writeKey{"member2", "ns/a"}].hash != "h1" {
		t.Fatalf("records left: %v", w.written)
	}
}
