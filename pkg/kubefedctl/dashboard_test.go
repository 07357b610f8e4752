package kubefedctl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	dashDeployGVR = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"}
	dashCMGVR     = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"}
	dashSecretGVR = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedsecrets"}
)

func dashObject(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetCreationTimestamp(metav1.NewTime(goldenNow.Add(-time.Hour)))
	return u
}

func dashTypeConfig(plural, group, kind string) *unstructured.Unstructured {
	name := plural
	if group != "" {
		name += "." + group
	}
	return dashObject("core.kubefed.io/v1beta1", "FederatedTypeConfig", testNamespace, name, map[string]any{
		"spec": map[string]any{
			"targetType":    map[string]any{"group": group, "version": "v1", "kind": kind, "pluralName": plural, "scope": "Namespaced"},
			"federatedType": map[string]any{"group": "types.kubefed.io", "version": "v1beta1", "kind": "Federated" + kind, "pluralName": "federated" + plural, "scope": "Namespaced"},
			"propagation":   "Enabled",
		},
		"status": map[string]any{"propagationController": "Running", "targetTypeClusterStatus": []any{
			map[string]any{"clusterName": "member1", "status": "Present"},
			map[string]any{"clusterName": "member2", "status": "NotPresent"},
		}},
	})
}

func dashCluster(name, ready, reason, message string) *unstructured.Unstructured {
	return dashObject("core.kubefed.io/v1beta1", "KubeFedCluster", testNamespace, name, map[string]any{
		"spec": map[string]any{"apiEndpoint": "https://" + name + ".example:6443"},
		"status": map[string]any{
			"kubernetesVersion": "v1.37.2",
			"nodeSummary":       map[string]any{"totalNum": int64(3), "readyNum": int64(3)},
			"region":            "eu-" + name,
			"zones":             []any{"eu-a", "eu-b"},
			"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": reason, "message": message,
				"lastProbeTime": goldenNow.Add(-5 * time.Second).Format(time.RFC3339), "lastTransitionTime": goldenNow.Add(-time.Hour).Format(time.RFC3339)}},
		},
	})
}

// dashWeb: web failed in member2 with the member's own error; settings is fine.
func dashWeb() *unstructured.Unstructured {
	return dashObject("types.kubefed.io/v1beta1", "FederatedDeployment", "demo", "web", map[string]any{
		"metadata": map[string]any{"generation": int64(2)},
		"spec": map[string]any{
			"template":  map[string]any{"spec": map[string]any{"replicas": int64(3)}},
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "member1"}, map[string]any{"name": "member2"}}},
			"overrides": []any{map[string]any{"clusterName": "member2", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(-1)}}}},
		},
		"status": map[string]any{
			"observedGeneration": int64(2),
			"conditions": []any{map[string]any{"type": "Propagation", "status": "False", "reason": "CheckClusters",
				"message": `member2: CreationFailed: Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`}},
			"clusters": []any{
				map[string]any{"name": "member1", "ready": "3/3", "counts": map[string]any{"readyReplicas": int64(3), "desiredReplicas": int64(3)},
					"remoteStatus": map[string]any{"readyReplicas": int64(3)}},
				map[string]any{"name": "member2", "status": "CreationFailed"},
			},
			"ready":  "3/3",
			"counts": map[string]any{"readyReplicas": int64(3), "desiredReplicas": int64(3)},
		},
	})
}

func configMap(namespace, name string) *unstructured.Unstructured {
	return dashObject("types.kubefed.io/v1beta1", "FederatedConfigMap", namespace, name, map[string]any{
		"metadata": map[string]any{"generation": int64(1)},
		"spec":     map[string]any{"placement": map[string]any{"clusterSelector": map[string]any{}}},
		"status": map[string]any{"observedGeneration": int64(1),
			"conditions": []any{map[string]any{"type": "Propagation", "status": "True"}},
			"clusters":   []any{map[string]any{"name": "member1"}, map[string]any{"name": "member2"}}},
	})
}

type dashFixture struct {
	d   *dashboard
	dyn *dynamicfake.FakeDynamicClient
	srv *httptest.Server
}

func newDashFixture(t testing.TB, objects ...runtime.Object) *dashFixture {
	t.Helper()
	return newDashFixtureWith(t, nil, nil, objects...)
}

// newDashFixtureWith serves objects, which the sync wait counts, beside
// the fixture's base objects and extra ones of more kinds.
func newDashFixtureWith(t testing.TB, kinds map[schema.GroupVersionResource]string, extra []runtime.Object, objects ...runtime.Object) *dashFixture {
	t.Helper()
	return startDashFixture(t, dashHost(kinds, slices.Concat(extra, objects)...), len(objects))
}

// dashHost is a host with the fixture's base objects and objects, whose
// lists of more kinds are named in kinds.
func dashHost(kinds map[schema.GroupVersionResource]string, objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{
		kubeFedClustersGVR: "KubeFedClusterList",
		typeConfigsGVR:     "FederatedTypeConfigList",
		preferencesGVR:     "ReplicaSchedulingPreferenceList",
		dashDeployGVR:      "FederatedDeploymentList",
		dashCMGVR:          "FederatedConfigMapList",
	}
	maps.Copy(listKinds, kinds)
	base := []runtime.Object{
		dashCluster("member1", "True", "ClusterReady", "/healthz responded with ok"),
		dashCluster("member2", "False", "ClusterNotReachable", "Get https://member2.example:6443/healthz: dial tcp: connection refused"),
		dashTypeConfig("deployments", "apps", "Deployment"),
		dashTypeConfig("configmaps", "", "ConfigMap"),
		dashObject("scheduling.kubefed.io/v1alpha1", "ReplicaSchedulingPreference", "demo", "web", map[string]any{
			"spec": map[string]any{"targetKind": "FederatedDeployment", "totalReplicas": int64(6)},
			"status": map[string]any{"clusters": []any{
				map[string]any{"name": "member1", "replicas": int64(4), "estimatedCapacity": int64(4)},
				map[string]any{"name": "member2", "replicas": int64(2), "failedOver": true},
			}},
		}),
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, slices.Concat(base, objects)...)
}

// startDashFixture serves the dashboard of dyn once it has read dyn and
// holds at least objects federated objects.
func startDashFixture(t testing.TB, dyn *dynamicfake.FakeDynamicClient, objects int) *dashFixture {
	t.Helper()
	fixClock(t)
	kube := kubefake.NewClientset(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "demo"},
		InvolvedObject: corev1.ObjectReference{Kind: "FederatedDeployment", Namespace: "demo", Name: "web"},
		Type:           corev1.EventTypeWarning, Reason: "CreateInClusterFailed", Count: 2,
		Message:       `Failed to create Deployment "web" in cluster member2: spec.replicas: Invalid value: -1`,
		LastTimestamp: metav1.NewTime(goldenNow.Add(-time.Minute)),
	})
	d := newDashboard(dyn, kube, testNamespace, "")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.start(ctx)
	waitDash(t, "the dashboard to sync", func() bool { s := d.current(); return s.synced && len(s.objects) >= objects })
	srv := httptest.NewServer(d.handler("127.0.0.1:0", dashToken))
	t.Cleanup(srv.Close)
	return &dashFixture{d: d, dyn: dyn, srv: srv}
}

// waitDash waits until done, for at most a minute.
func waitDash(t testing.TB, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dashToken is the fixtures' run token; requests carry it in the cookie.
const dashToken = "0123456789abcdef"

func dashRequest(t testing.TB, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: tokenCookieName("127.0.0.1:0"), Value: dashToken})
	return req
}

func (f *dashFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(dashRequest(t, f.srv.URL+path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func mustContain(t *testing.T, page, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not contain %q", page, w)
		}
	}
}

func TestDashboardPages(t *testing.T) {
	f := newDashFixture(t, dashWeb(), configMap("demo", "settings"), configMap("other", "plain"))

	code, body := f.get(t, "/objects")
	if code != http.StatusOK {
		t.Fatalf("/objects: %d\n%s", code, body)
	}
	// The failed placement is a red cell linking to its cluster's row.
	failed := regexp.MustCompile(`<td class="cell failed" data-cluster="member2" title="CreationFailed in member2"><a href="/object\?kind=FederatedDeployment&amp;name=web&amp;ns=demo#cluster-member2">CreationFailed</a></td>`)
	if !failed.MatchString(body) {
		t.Errorf("/objects has no red member2 cell for web:\n%s", body)
	}
	mustContain(t, "/objects", body,
		`<td class="cell ok" data-cluster="member1" title="propagated to member1"><a href="/object?kind=FederatedDeployment&amp;name=web&amp;ns=demo#cluster-member1">OK 3/3</a></td>`,
		`<th class="cluster failed" title="ClusterNotReachable">member2</th>`,
		`<span class="badge failed">CheckClusters</span>`, `<td>3/3</td>`,
		`data-name="settings"`, `data-name="plain"`, "3 federated objects, 2 member clusters")

	// Filters: not propagated, one namespace, one kind, a name.
	_, body = f.get(t, "/objects?state=problems")
	if !strings.Contains(body, `data-name="web"`) || strings.Contains(body, `data-name="settings"`) {
		t.Errorf("state=problems shows the wrong objects:\n%s", body)
	}
	_, body = f.get(t, "/objects?ns=other")
	if strings.Contains(body, `data-name="web"`) || !strings.Contains(body, `data-name="plain"`) {
		t.Errorf("ns=other shows the wrong objects")
	}
	_, body = f.get(t, "/objects?kind=FederatedConfigMap&q=sett")
	if strings.Contains(body, `data-name="web"`) || strings.Contains(body, `data-name="plain"`) || !strings.Contains(body, `data-name="settings"`) {
		t.Errorf("kind and name filters show the wrong objects")
	}

	code, body = f.get(t, "/object?kind=FederatedDeployment&ns=demo&name=web")
	if code != http.StatusOK {
		t.Fatalf("/object: %d\n%s", code, body)
	}
	mustContain(t, "the object page", body,
		// The member's own error, on member2's row.
		`<tr id="cluster-member2" class="row-failed">`,
		`<div class="message cluster-message">Deployment.apps &#34;web&#34; is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0</div>`,
		`<span class="badge failed" title="the cluster is not ready">not ready</span>`,
		// Remote and aggregated status, overrides, placement.
		`<details id="remote-member1"><summary>remote status</summary><pre>readyReplicas: 3`,
		`<tr><th>desiredReplicas</th><td>3</td></tr>`, "READY 3/3",
		"path: /spec/replicas", "- name: member1",
		// The RSP's split as bars, and the events.
		`<span class="bar-label">member1</span><span class="bar" data-width="100"></span><span class="bar-value">4</span><span class="bar-note">capacity 4</span>`,
		`<span class="bar-label">member2</span><span class="bar failed" data-width="50"></span><span class="bar-value">2</span><span class="bar-note">failed over</span>`,
		`<td>CreateInClusterFailed</td><td>60s</td><td>2</td>`)

	if code, _ := f.get(t, "/object?kind=FederatedDeployment&ns=demo&name=gone"); code != http.StatusNotFound {
		t.Errorf("a missing object: %d", code)
	}

	_, body = f.get(t, "/clusters")
	mustContain(t, "/clusters", body,
		`<span class="badge ok" title="/healthz responded with ok">Ready</span>`,
		`<span class="badge failed" title="Get https://member2.example:6443/healthz: dial tcp: connection refused">Offline</span> <span class="reason">ClusterNotReachable</span>`,
		"<td>v1.37.2</td><td>3/3 ready</td>", "<td>eu-a, eu-b</td><td>eu-member1</td><td>5s ago</td>",
		"<td>3 <span class=\"badge failed\">1 failed</span></td>")

	_, body = f.get(t, "/types")
	mustContain(t, "/types", body,
		`<span class="chip ok" title="member1 serves Deployment">member1: serves</span>`,
		`<span class="chip failed" title="member2 does not serve Deployment">member2: missing</span>`,
		`<a href="/objects?kind=FederatedDeployment">FederatedDeployment</a>`)

	// The live script swaps in ?fragment=1: the main part alone.
	_, body = f.get(t, "/objects?fragment=1")
	if strings.Contains(body, "<html") || !strings.Contains(body, `id="matrix"`) {
		t.Errorf("fragment is not the main part alone:\n%.300s", body)
	}
}

func TestDashboardPagesLargeFederations(t *testing.T) {
	var objects []runtime.Object
	for i := range 250 {
		objects = append(objects, configMap("bulk", fmt.Sprintf("cm-%03d", i)))
	}
	f := newDashFixture(t, objects...)
	_, body := f.get(t, "/objects")
	if n := strings.Count(body, "<tr data-kind="); n != pageSize {
		t.Errorf("page 1 has %d rows, want %d", n, pageSize)
	}
	mustContain(t, "page 1", body, "Showing 1–100 of 250", `<a href="/objects?page=2" rel="next">next</a>`)
	_, body = f.get(t, "/objects?page=3")
	if n := strings.Count(body, "<tr data-kind="); n != 50 {
		t.Errorf("page 3 has %d rows, want 50", n)
	}
	mustContain(t, "page 3", body, "Showing 201–250 of 250", `data-name="cm-249"`, `rel="prev"`)
}

// A change in the host reaches an open page through /events.
func TestDashboardLiveEvents(t *testing.T) {
	f := newDashFixture(t)
	resp, err := http.DefaultClient.Do(dashRequest(t, f.srv.URL+"/events"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events <- strings.TrimPrefix(sc.Text(), "event: ")
			}
		}
		close(events)
	}()
	if e := <-events; e != "hello" {
		t.Fatalf("first event %q", e)
	}
	before := f.d.version.Load()
	if _, err := f.dyn.Resource(dashCMGVR).Namespace("demo").Create(context.Background(), configMap("demo", "new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-events:
		if e != "change" {
			t.Fatalf("event %q after a create", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change event after a create")
	}
	if f.d.version.Load() == before {
		t.Error("the version did not move")
	}
	_, body := f.get(t, "/objects?fragment=1")
	if !strings.Contains(body, `data-name="new"`) {
		t.Error("the new object is not on the page")
	}
}

// Only requests addressed to the dashboard are answered: a page of another
// site whose name resolves to 127.0.0.1 gets nothing.
func TestDashboardAnswersItsOwnAddressOnly(t *testing.T) {
	h := newDashboard(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), kubefake.NewClientset(), testNamespace, "").handler("127.0.0.1:8001", dashToken)
	serve := func(method, target, host string, withCookie bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		req.Host = host
		if withCookie {
			req.AddCookie(&http.Cookie{Name: tokenCookieName("127.0.0.1:8001"), Value: dashToken})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for host, want := range map[string]int{
		"127.0.0.1:8001": http.StatusFound, "localhost:8001": http.StatusFound, "[::1]:8001": http.StatusFound,
		"evil.example:8001": http.StatusForbidden, "evil.example": http.StatusForbidden,
	} {
		if rec := serve(http.MethodGet, "/", host, true); rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
	rec := serve(http.MethodPost, "/objects", "127.0.0.1:8001", true)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP %q", csp)
	}

	// Another user of the machine, without the run's token, reads nothing.
	for _, target := range []string{"/objects", "/events", "/objects?token=guess"} {
		if rec := serve(http.MethodGet, target, "127.0.0.1:8001", false); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", target, rec.Code)
		}
	}
	// The printed URL sets the cookie and drops the token from the address.
	rec = serve(http.MethodGet, "/objects?ns=demo&token="+dashToken, "127.0.0.1:8001", false)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/objects?ns=demo" {
		t.Errorf("token URL: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if c := rec.Result().Cookies(); len(c) != 1 || c[0].Value != dashToken || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", c)
	}
}

// A FederatedSecret's page shows where it goes, not what it holds.
func TestDashboardRedactsSecrets(t *testing.T) {
	secret := dashObject("types.kubefed.io/v1beta1", "FederatedSecret", "demo", "creds", map[string]any{
		"spec": map[string]any{
			"template":  map[string]any{"data": map[string]any{"password": "c2VjcmV0"}, "stringData": map[string]any{"user": "admin"}},
			"placement": map[string]any{"clusterSelector": map[string]any{}},
			"overrides": []any{map[string]any{"clusterName": "member2", "clusterOverrides": []any{
				map[string]any{"path": "/data/password", "value": "b3RoZXI="},
				map[string]any{"path": "/metadata/labels/tier", "value": "gold"}}}},
		},
	})
	f := newDashFixtureWith(t, map[schema.GroupVersionResource]string{dashSecretGVR: "FederatedSecretList"},
		[]runtime.Object{dashTypeConfig("secrets", "", "Secret")}, secret)
	code, body := f.get(t, "/object?kind=FederatedSecret&ns=demo&name=creds")
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	for _, secretValue := range []string{"c2VjcmV0", "admin", "b3RoZXI="} {
		if strings.Contains(body, secretValue) {
			t.Errorf("the page shows %q", secretValue)
		}
	}
	mustContain(t, "the secret's page", body, "password: &lt;redacted, 8 bytes&gt;", "user: &lt;redacted, 5 bytes&gt;", "value: &lt;redacted, 8 bytes&gt;", "value: gold")
}

// BenchmarkDashboard10000 measures what a change costs an open matrix page
// in a federation of 10,000 objects: the snapshot is rebuilt once per
// change, and the page renders 100 rows of it (docs/performance.md).
func BenchmarkDashboard10000(b *testing.B) {
	var objects []runtime.Object
	for i := range 10000 {
		objects = append(objects, configMap(fmt.Sprintf("ns-%02d", i%50), fmt.Sprintf("cm-%05d", i)))
	}
	f := newDashFixture(b, objects...)
	h := f.d.handler("127.0.0.1:0", dashToken)
	get := func(path string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1"
		req.AddCookie(&http.Cookie{Name: tokenCookieName("127.0.0.1:0"), Value: dashToken})
		return req
	}
	// What a build costs, not the wait between builds.
	f.d.rebuildEvery = 0
	b.Run("rebuild+page", func(b *testing.B) {
		for b.Loop() {
			f.d.changed()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, get("/objects?state=problems&fragment=1"))
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, get("/objects?page=37&fragment=1"))
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
}

// An object whose status does not read as a federated status is shown
// without it, named at the top, and hides nothing else.
func TestDashboardShowsObjectsWithUnreadableStatus(t *testing.T) {
	broken := configMap("demo", "broken")
	broken.Object["status"] = map[string]any{"clusters": "not a list"}
	alsoBroken := configMap("demo", "broken-too")
	alsoBroken.Object["status"] = map[string]any{"observedGeneration": "one"}
	f := newDashFixture(t, broken, alsoBroken, configMap("demo", "fine"))
	_, body := f.get(t, "/objects")
	mustContain(t, "/objects", body, `data-name="broken"`, `data-name="broken-too"`, `data-name="fine"`,
		"FederatedConfigMap demo/broken is shown without its status", "FederatedConfigMap demo/broken-too is shown without its status")
	if strings.Contains(body, "FederatedConfigMap demo/fine is shown without") {
		t.Error("a readable object is reported unreadable")
	}
	if strings.Contains(body, "Shown without its status: ") {
		t.Error("the note says it twice")
	}
}

// What the host does not let the dashboard read is said at the top of
// every page, in the host's words, until it can be read again: a
// forbidden list instead of "Still reading the federation…" forever, a
// broken watch instead of stale data shown as live.
func TestDashboardShowsHostErrors(t *testing.T) {
	dyn := dashHost(nil, configMap("demo", "settings"))
	var forbidden, watchBroken atomic.Bool
	forbidden.Store(true)
	watchBroken.Store(true)
	dyn.PrependReactor("list", "kubefedclusters", func(k8stesting.Action) (bool, runtime.Object, error) {
		if forbidden.Load() {
			return true, nil, apierrors.NewForbidden(kubeFedClustersGVR.GroupResource(), "",
				fmt.Errorf(`User "bob" cannot list resource "kubefedclusters" in API group "core.kubefed.io" in the namespace %q`, testNamespace))
		}
		return false, nil, nil
	})
	dyn.PrependWatchReactor("federatedconfigmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watchBroken.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f := startDashFixture(t, dyn, 1)
	waitDash(t, "both failures", func() bool { return len(f.d.current().hostErrors) == 2 })

	_, body := f.get(t, "/objects")
	mustContain(t, "/objects", body,
		`<p class="note failed host-error">Cannot list KubeFedClusters in namespace &#34;`+testNamespace+`&#34;: kubefedclusters.core.kubefed.io is forbidden: User &#34;bob&#34; cannot list`,
		`<p class="note failed host-error">Cannot watch federatedconfigmaps.types.kubefed.io: connection refused (since `,
		`; shown as last read</p>`, `data-name="settings"`)
	for _, wrong := range []string{"Still reading the federation", dashToken} {
		if strings.Contains(body, wrong) {
			t.Errorf("/objects shows %q", wrong)
		}
	}

	forbidden.Store(false)
	watchBroken.Store(false)
	waitDash(t, "the host to be read again", func() bool {
		s := f.d.current()
		return len(s.hostErrors) == 0 && len(s.clusters) == 2
	})
	_, body = f.get(t, "/clusters")
	if strings.Contains(body, "host-error") || !strings.Contains(body, `id="cluster-member1"`) {
		t.Errorf("/clusters after the host recovered:\n%s", body)
	}
}

// Two runs on one machine (cookies ignore ports) keep their own token
// cookies: the first run's tab is not locked out by the second.
func TestDashboardRunsOnTwoPortsAtOnce(t *testing.T) {
	d := newDashboard(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), kubefake.NewClientset(), testNamespace, "")
	serve := func(token string) *httptest.Server {
		srv := httptest.NewUnstartedServer(nil)
		srv.Config.Handler = d.handler(srv.Listener.Addr().String(), token)
		srv.Start()
		t.Cleanup(srv.Close)
		return srv
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar}
	get := func(url string) int {
		resp, err := browser.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first, second := serve("0123456789abcdef0123456789abcdef"), serve("fedcba9876543210fedcba9876543210")
	for _, open := range []string{first.URL + "/static/style.css?token=0123456789abcdef0123456789abcdef",
		second.URL + "/static/style.css?token=fedcba9876543210fedcba9876543210", first.URL + "/static/style.css", second.URL + "/static/style.css"} {
		if code := get(open); code != http.StatusOK {
			t.Errorf("%s: %d", open, code)
		}
	}
}

// On a wildcard address the printed URL is one a browser can open, and
// the dashboard answers it and the machine's other names.
func TestDashboardOnWildcardAddress(t *testing.T) {
	for _, served := range []string{"0.0.0.0:8001", "[::]:8001"} {
		addr, err := net.ResolveTCPAddr("tcp", served)
		if err != nil {
			t.Fatal(err)
		}
		printed, err := url.Parse(dashboardURL(addr, dashToken))
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(printed.Hostname()); ip != nil && ip.IsUnspecified() || printed.Port() != "8001" || printed.Query().Get("token") != dashToken {
			t.Errorf("%s: printed %s", served, printed)
		}
		h := newDashboard(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), kubefake.NewClientset(), testNamespace, "").handler(served, dashToken)
		for _, host := range []string{printed.Host, "workstation.example:8001", "192.0.2.7:8001", "127.0.0.1:8001"} {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = host
			req.AddCookie(&http.Cookie{Name: tokenCookieName(served), Value: dashToken})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusFound {
				t.Errorf("served on %s, Host %s: %d", served, host, rec.Code)
			}
		}
	}
	if got := dashboardURL(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8001}, dashToken); got != "http://127.0.0.1:8001/?token="+dashToken {
		t.Errorf("on loopback: %s", got)
	}
}

// A snapshot built before the host was read is not reused once it has
// been: a host whose lists are empty is read without any change.
func TestDashboardSnapshotAfterEmptyLists(t *testing.T) {
	d := newDashboard(dashEmptyHost(), kubefake.NewClientset(), testNamespace, "")
	d.rebuildEvery = 0
	if d.current().synced {
		t.Fatal("synced before reading")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The informers alone, without start: the snapshot must not rely on a
	// change to be rebuilt.
	for _, s := range []*source{d.clusters, d.typeConfigs, d.preferences} {
		go s.inf.RunWithContext(ctx)
	}
	waitDash(t, "the informers to sync", func() bool {
		return d.clusters.inf.HasSynced() && d.typeConfigs.inf.HasSynced() && d.preferences.inf.HasSynced()
	})
	if !d.current().synced {
		t.Error("still reading after the host was read")
	}
}

// Open pages hear when the host has been read, though empty lists make no
// change: each source's sync is a new version.
func TestDashboardAnnouncesSync(t *testing.T) {
	d := newDashboard(dashEmptyHost(), kubefake.NewClientset(), testNamespace, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d.start(ctx)
	waitDash(t, "a version per synced source", func() bool { return d.version.Load() >= 3 })
}

func dashEmptyHost() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubeFedClustersGVR: "KubeFedClusterList", typeConfigsGVR: "FederatedTypeConfigList", preferencesGVR: "ReplicaSchedulingPreferenceList",
	})
}

// A request that went away does not leave its canceled events list to the
// next viewer.
func TestDashboardEventsOfCanceledRequest(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "demo"},
		InvolvedObject: corev1.ObjectReference{Kind: "FederatedDeployment", Namespace: "demo", Name: "web"},
		Reason:         "Created",
	})
	var lists atomic.Int32
	kube.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 1 {
			return true, nil, context.Canceled
		}
		return false, nil, nil
	})
	d := newDashboard(dashEmptyHost(), kube, testNamespace, "")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.eventsOf(gone, "FederatedDeployment", "demo", "web"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled request: %v", err)
	}
	rows, err := d.eventsOf(context.Background(), "FederatedDeployment", "demo", "web")
	if err != nil || len(rows) != 1 {
		t.Errorf("the next viewer got %v, %v", rows, err)
	}
}

// Under churn, snapshots are built at most once per interval however often
// pages ask, and never miss a change made before the page asked.
func TestDashboardRebuildsAtMostOncePerInterval(t *testing.T) {
	f := newDashFixture(t)
	const every = 100 * time.Millisecond
	f.d.rebuildEvery = every
	var last *snapshot
	for range 4 {
		f.d.changed()
		v := f.d.version.Load()
		s := f.d.current()
		if s.version < v {
			t.Errorf("snapshot of version %d after change %d", s.version, v)
		}
		if last != nil && s.built.Sub(last.built) < every {
			t.Errorf("built %v after the last", s.built.Sub(last.built))
		}
		last = s
	}
}

// The informer of a federated type stops when no FederatedTypeConfig names
// it any more: deleted, or moved to another version.
func TestDashboardStopsTypesNoLongerConfigured(t *testing.T) {
	cmV2 := schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta2", Resource: "federatedconfigmaps"}
	f := newDashFixtureWith(t, map[schema.GroupVersionResource]string{cmV2: "FederatedConfigMapList"}, nil, configMap("demo", "settings"))
	sourceOf := func(gvr schema.GroupVersionResource) *source {
		f.d.mu.Lock()
		defer f.d.mu.Unlock()
		return f.d.types[gvr]
	}
	deployments, configMaps := sourceOf(dashDeployGVR), sourceOf(dashCMGVR)
	if deployments == nil || configMaps == nil {
		t.Fatal("the federated types are not watched")
	}
	ctx := context.Background()
	ftcs := f.dyn.Resource(typeConfigsGVR).Namespace(testNamespace)
	if err := ftcs.Delete(ctx, "deployments.apps", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ftc, err := ftcs.Get(ctx, "configmaps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(ftc.Object, "v1beta2", "spec", "federatedType", "version"); err != nil {
		t.Fatal(err)
	}
	if _, err := ftcs.Update(ctx, ftc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDash(t, "the new version to be watched", func() bool { s := sourceOf(cmV2); return s != nil && s.inf.HasSynced() })
	waitDash(t, "the old informers to stop", func() bool { return deployments.inf.IsStopped() && configMaps.inf.IsStopped() })
	if sourceOf(dashDeployGVR) != nil || sourceOf(dashCMGVR) != nil {
		t.Error("stopped types are still listed")
	}
}

// The live script and the pages agree: the filter form is the one kept
// while the user fills it in, and tabs in the background pause.
func TestDashboardLiveScriptContract(t *testing.T) {
	f := newDashFixture(t)
	_, body := f.get(t, "/objects?fragment=1")
	if !regexp.MustCompile(`^\s*(<p[^>]*>[^<]*</p>\s*)*<form class="filters"[^>]* data-keep>`).MatchString(body) {
		t.Errorf("the filter form is not a direct part of main marked data-keep:\n%.400s", body)
	}
	_, script := f.get(t, "/static/live.js")
	mustContain(t, "live.js", script, `form[data-keep]`, `"visibilitychange"`, "source.close()")
}
