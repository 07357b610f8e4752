package kubefedctl

import (
	"bytes"
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/fedstatus"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

//go:embed dashboard
var dashboardFiles embed.FS

// pageSize is how many objects the matrix shows at once: a federation of
// 10,000 objects is paged, not sent whole.
const pageSize = 100

// liveInterval is the least time between two change notices to a page.
const liveInterval = 300 * time.Millisecond

var dashboardPages = func() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range []string{"clusters", "objects", "object", "types"} {
		t := template.Must(template.New("layout.html").ParseFS(dashboardFiles, "dashboard/layout.html", "dashboard/"+name+".html"))
		pages[name] = t
	}
	return pages
}()

// tokenCookie carries the run's token after the first page, so that links,
// the live stream and fetches need not.
const tokenCookie = "kubefed-dashboard"

// tokenCookieName is the token cookie of the run serving at served.
// Cookies ignore ports: two runs on one machine, on 8001 and 9000, must
// not overwrite each other's.
func tokenCookieName(served string) string {
	if _, port, err := net.SplitHostPort(served); err == nil && port != "" {
		return tokenCookie + "-" + port
	}
	return tokenCookie
}

// handler serves the pages; served is the listening address, which
// requests must be addressed to, and token the run's secret, which the
// first request brings in its URL and later ones in a cookie.
func (d *dashboard) handler(served, token string) http.Handler {
	cookie := tokenCookieName(served)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/objects", http.StatusFound)
	})
	mux.HandleFunc("GET /clusters", d.page("clusters", d.clustersView))
	mux.HandleFunc("GET /objects", d.page("objects", d.objectsView))
	mux.HandleFunc("GET /object", d.page("object", d.objectView))
	mux.HandleFunc("GET /types", d.page("types", d.typesView))
	mux.HandleFunc("GET /events", d.live)
	static, _ := fs.Sub(dashboardFiles, "dashboard/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedHost(r.Host, served) {
			http.Error(w, "this dashboard answers requests to "+served+" and localhost only", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
		if given := r.URL.Query().Get("token"); given != "" {
			if !sameToken(given, token) {
				http.Error(w, "wrong token: open the URL kubefedctl dashboard printed", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(cookie); err != nil || !sameToken(c.Value, token) {
			http.Error(w, "open the URL kubefedctl dashboard printed: it carries this run's token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func sameToken(given, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

// pageData is what every page template gets.
type pageData struct {
	Title   string
	Nav     string
	Version uint64
	Synced  bool
	// HostErrors say what the host does not let be read.
	HostErrors []string
	// Problems are objects that could not be read as they are.
	Problems []string
	View     any
}

// page renders a page, or with ?fragment=1 only its main part, which the
// live script swaps in after a change.
func (d *dashboard) page(name string, view func(*snapshot, *http.Request) (string, any, int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := d.current()
		title, v, code := view(s, r)
		data := pageData{Title: title, Nav: name, Version: s.version, Synced: s.synced, HostErrors: s.hostErrors, Problems: s.problems, View: v}
		tmpl := "layout.html"
		if r.URL.Query().Get("fragment") == "1" {
			tmpl = "main"
		}
		var buf bytes.Buffer
		if err := dashboardPages[name].ExecuteTemplate(&buf, tmpl, data); err != nil {
			http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		_, _ = w.Write(buf.Bytes())
	}
}

// live streams a notice per change (server-sent events), at most one per
// liveInterval, so that pages update without a reload.
func (d *dashboard) live(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	changes, done := d.subscribe()
	defer done()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "retry: 2000\nevent: hello\ndata: %d\n\n", d.version.Load())
	flusher.Flush()
	keepalive := time.NewTicker(20 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case <-changes:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", d.version.Load())
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(liveInterval):
		}
	}
}

// Cell classes: the matrix's colours.
const (
	cellOK        = "ok"
	cellFailed    = "failed"
	cellNotPlaced = "none"
	cellPending   = "pending"
)

// clustersView is the member clusters page.
type clusterRow struct {
	Name, State, Class, Reason, Message string
	Version, Nodes, CPU, Memory, Pods   string
	Zones, Region, LastProbe, Endpoint  string
	Placed, Failed                      int
}

func (d *dashboard) clustersView(s *snapshot, _ *http.Request) (string, any, int) {
	placed, failed := map[string]int{}, map[string]int{}
	for _, o := range s.report.Objects {
		for _, c := range o.Clusters {
			switch c.State {
			case PlacementOK:
				placed[c.Cluster]++
			case PlacementFailed:
				placed[c.Cluster]++
				failed[c.Cluster]++
			}
		}
	}
	now := clock()
	rows := make([]clusterRow, 0, len(s.clusters))
	for _, c := range s.clusters {
		row := clusterRow{Name: c.Name, State: "Unknown", Class: cellPending, Endpoint: c.Spec.APIEndpoint,
			Version: orNone(c.Status.KubernetesVersion), Zones: orNone(strings.Join(c.Status.Zones, ", ")),
			Region: orNone(ptr.Deref(c.Status.Region, "")), Nodes: "<none>", CPU: "<none>", Memory: "<none>", Pods: "<none>",
			LastProbe: "never", Placed: placed[c.Name], Failed: failed[c.Name]}
		for _, cond := range c.Status.Conditions {
			if cond.Type != corev1beta1.ClusterReady {
				continue
			}
			row.Reason, row.Message = ptr.Deref(cond.Reason, ""), ptr.Deref(cond.Message, "")
			switch cond.Status {
			case corev1.ConditionTrue:
				row.State, row.Class = "Ready", cellOK
			case corev1.ConditionFalse:
				row.State, row.Class = "Offline", cellFailed
			}
			if !cond.LastProbeTime.IsZero() {
				row.LastProbe = age(cond.LastProbeTime, now) + " ago"
			}
		}
		if n := c.Status.NodeSummary; n != nil {
			row.Nodes = fmt.Sprintf("%d/%d ready", n.ReadyNum, n.TotalNum)
		}
		if r := c.Status.ResourceSummary; r != nil {
			row.CPU = resourceCell(r.Allocated, r.Allocatable, corev1.ResourceCPU)
			row.Memory = resourceCell(r.Allocated, r.Allocatable, corev1.ResourceMemory)
			row.Pods = resourceCell(nil, r.Allocatable, corev1.ResourcePods)
		}
		rows = append(rows, row)
	}
	return "Clusters", rows, http.StatusOK
}

// resourceCell shows allocated of allocatable, such as "1.5 of 6".
func resourceCell(allocated, allocatable corev1.ResourceList, name corev1.ResourceName) string {
	total, ok := allocatable[name]
	if !ok {
		return "<none>"
	}
	if used, ok := allocated[name]; ok {
		return used.String() + " of " + total.String()
	}
	return total.String()
}

// objectsView is the matrix: every federated object by every member.
type objectsView struct {
	Clusters   []clusterReadiness
	Rows       []matrixRow
	Namespaces []string
	Kinds      []string
	// Filter values, as the form sends them back.
	Namespace, Kind, State, Query string
	Total, First, Last            int
	Prev, Next                    string
	Summary                       string
}

type matrixRow struct {
	Kind, Namespace, Name string
	Propagation, Class    string
	Ready                 string
	Link                  string
	Cells                 []matrixCell
}

type matrixCell struct {
	Cluster, Text, Class, Title, Link string
}

// objectStates are the state filter's choices.
var objectStates = []string{"", "problems", PropagationOK, PropagationFailed, PropagationPending, PropagationDeleting}

func (d *dashboard) objectsView(s *snapshot, r *http.Request) (string, any, int) {
	q := r.URL.Query()
	v := objectsView{Clusters: s.report.Clusters, Namespaces: s.namespaces(), Kinds: s.kinds(),
		Namespace: q.Get("ns"), Kind: q.Get("kind"), State: q.Get("state"), Query: q.Get("q"), Summary: summaryLine(s.report)}
	var matched []objectStatus
	for _, o := range s.report.Objects {
		if v.Namespace != "" && o.Namespace != v.Namespace || v.Kind != "" && o.Kind != v.Kind ||
			v.Query != "" && !strings.Contains(strings.ToLower(o.Name), strings.ToLower(v.Query)) || !stateMatches(o, v.State) {
			continue
		}
		matched = append(matched, o)
	}
	v.Total = len(matched)
	page, _ := strconv.Atoi(q.Get("page"))
	pages := max(1, (v.Total+pageSize-1)/pageSize)
	page = min(max(page, 1), pages)
	from, to := (page-1)*pageSize, min(page*pageSize, v.Total)
	if v.Total > 0 {
		v.First, v.Last = from+1, to
	}
	link := func(p int) string {
		u := url.Values{}
		for k, val := range map[string]string{"ns": v.Namespace, "kind": v.Kind, "state": v.State, "q": v.Query} {
			if val != "" {
				u.Set(k, val)
			}
		}
		u.Set("page", strconv.Itoa(p))
		return "/objects?" + u.Encode()
	}
	if page > 1 {
		v.Prev = link(page - 1)
	}
	if page < pages {
		v.Next = link(page + 1)
	}
	for _, o := range matched[from:to] {
		row := matrixRow{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Ready: o.Ready,
			Propagation: propagationCell(o.Propagation), Class: propagationClass(o.Propagation), Link: objectLink(o.Kind, o.Namespace, o.Name)}
		for _, p := range o.Clusters {
			cell := matrixCell{Cluster: p.Cluster, Text: placementCell(p), Link: row.Link + "#cluster-" + p.Cluster}
			switch p.State {
			case PlacementOK:
				cell.Class, cell.Title = cellOK, "propagated to "+p.Cluster
			case PlacementFailed:
				cell.Class, cell.Title = cellFailed, p.Reason+" in "+p.Cluster
			default:
				cell.Class, cell.Title, cell.Link = cellNotPlaced, "not placed in "+p.Cluster, ""
			}
			row.Cells = append(row.Cells, cell)
		}
		v.Rows = append(v.Rows, row)
	}
	return "Federated objects", v, http.StatusOK
}

// stateMatches applies the state filter: a propagation state, or
// "problems" for every object not fully propagated.
func stateMatches(o objectStatus, state string) bool {
	switch state {
	case "":
		return true
	case "problems":
		return o.Propagation.State != PropagationOK
	}
	return o.Propagation.State == state
}

func propagationClass(p propagationState) string {
	switch p.State {
	case PropagationOK:
		return cellOK
	case PropagationFailed:
		return cellFailed
	}
	return cellPending
}

func objectLink(kind, namespace, name string) string {
	v := url.Values{"kind": {kind}, "name": {name}}
	if namespace != "" {
		v.Set("ns", namespace)
	}
	return "/object?" + v.Encode()
}

// objectView is one federated object's page.
type objectView struct {
	Kind, APIVersion, Namespace, Name string
	Propagation                       propagationState
	Class                             string
	Generation, ObservedGeneration    int64
	Age                               string
	Placement, Overrides, Template    string
	Ready                             string
	Counts                            []countRow
	Clusters                          []objectClusterRow
	Split                             *splitView
	Events                            []eventRow
	EventsError                       string
}

type countRow struct {
	Name  string
	Value int64
}

type objectClusterRow struct {
	Name, State, Class, Reason, Message, Ready string
	ClusterReady                               bool
	RemoteStatus                               string
}

// splitView is an RSP's per-cluster replicas, drawn as bars.
type splitView struct {
	Name          string
	TotalReplicas int32
	Rebalance     bool
	Bars          []splitBar
}

type splitBar struct {
	Cluster  string
	Replicas int64
	// Percent is the bar's width, of the largest share.
	Percent    int
	Note       string
	FailedOver bool
}

func (d *dashboard) objectView(s *snapshot, r *http.Request) (string, any, int) {
	q := r.URL.Query()
	kind, namespace, name := q.Get("kind"), q.Get("ns"), q.Get("name")
	obj, ok := s.objects[dashKey{kind, namespace, name}]
	if !ok {
		return "Not found", nil, http.StatusNotFound
	}
	v := objectView{Kind: kind, APIVersion: obj.GetAPIVersion(), Namespace: namespace, Name: name,
		Generation: obj.GetGeneration(), Age: age(obj.GetCreationTimestamp(), clock())}
	status, _ := obj.Object["status"].(map[string]any)
	v.ObservedGeneration, _, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	var report objectStatus
	for _, o := range s.report.Objects {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			report = o
		}
	}
	v.Propagation, v.Class, v.Ready = report.Propagation, propagationClass(report.Propagation), report.Ready
	shown := obj.Object
	if s.federatesSecrets(kind) {
		shown = redactSecret(obj.Object)
	}
	v.Placement = yamlOf(shown, "spec", "placement")
	v.Overrides = yamlOf(shown, "spec", "overrides")
	v.Template = yamlOf(shown, "spec", "template")
	counts, _, _ := unstructured.NestedMap(obj.Object, "status", "counts")
	for name, n := range counts {
		if i, ok := n.(int64); ok {
			v.Counts = append(v.Counts, countRow{name, i})
		}
	}
	sort.Slice(v.Counts, func(i, j int) bool { return v.Counts[i].Name < v.Counts[j].Name })

	messages := fedstatus.ClusterMessages(status)
	remote := map[string]string{}
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "clusters")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["remoteStatus"] != nil {
			out, _ := yaml.Marshal(m["remoteStatus"])
			remote[name] = string(out)
		}
	}
	ready := map[string]bool{}
	for _, c := range s.report.Clusters {
		ready[c.Name] = c.Ready
	}
	for _, p := range report.Clusters {
		row := objectClusterRow{Name: p.Cluster, State: p.State, Reason: p.Reason, Ready: p.Ready,
			Message: messages[p.Cluster], RemoteStatus: remote[p.Cluster], ClusterReady: ready[p.Cluster]}
		switch p.State {
		case PlacementOK:
			row.Class = cellOK
		case PlacementFailed:
			row.Class = cellFailed
		default:
			row.Class = cellNotPlaced
		}
		v.Clusters = append(v.Clusters, row)
	}
	if rsp := s.preferenceFor(kind, namespace, name); rsp != nil {
		split := &splitView{Name: rsp.Name, TotalReplicas: rsp.Spec.TotalReplicas, Rebalance: rsp.Spec.Rebalance}
		var most int64
		for _, c := range rsp.Status.Clusters {
			most = max(most, c.Replicas)
		}
		for _, c := range rsp.Status.Clusters {
			bar := splitBar{Cluster: c.Name, Replicas: c.Replicas, FailedOver: c.FailedOver}
			if most > 0 {
				bar.Percent = int(100 * c.Replicas / most)
			}
			var notes []string
			if c.EstimatedCapacity != nil {
				notes = append(notes, fmt.Sprintf("capacity %d", *c.EstimatedCapacity))
			}
			if c.FailedOver {
				notes = append(notes, "failed over")
			}
			if c.NotReadySince != nil {
				notes = append(notes, "not ready since "+c.NotReadySince.UTC().Format(time.RFC3339))
			}
			bar.Note = strings.Join(notes, ", ")
			split.Bars = append(split.Bars, bar)
		}
		v.Split = split
	}
	events, err := d.eventsOf(r.Context(), kind, namespace, name)
	if err != nil {
		v.EventsError = err.Error()
	}
	now := clock()
	for i := range events {
		events[i].Age = orNone(ageOf(events[i].when, now))
	}
	v.Events = events
	title := kind + " " + name
	if namespace != "" {
		title = kind + " " + namespace + "/" + name
	}
	return title, v, http.StatusOK
}

func ageOf(t time.Time, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return age(metav1.NewTime(t), now)
}

// redactSecret is a FederatedSecret with the values of its template's data
// and stringData, and of overrides of them, replaced by their sizes: the
// page shows where a Secret goes, not what it holds.
func redactSecret(obj map[string]any) map[string]any {
	out := jsonvalue.Copy(obj).(map[string]any)
	template, _, _ := unstructured.NestedMap(out, "spec", "template")
	for _, field := range []string{"data", "stringData"} {
		if m, ok := template[field].(map[string]any); ok {
			for k, v := range m {
				m[k] = redacted(v)
			}
		}
	}
	if template != nil {
		_ = unstructured.SetNestedMap(out, template, "spec", "template")
	}
	entries, _, _ := unstructured.NestedSlice(out, "spec", "overrides")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		ops, _ := m["clusterOverrides"].([]any)
		for _, op := range ops {
			o, _ := op.(map[string]any)
			path, _ := o["path"].(string)
			if _, has := o["value"]; has && (strings.HasPrefix(path, "/data") || strings.HasPrefix(path, "/stringData")) {
				o["value"] = redacted(o["value"])
			}
		}
	}
	if entries != nil {
		_ = unstructured.SetNestedSlice(out, entries, "spec", "overrides")
	}
	return out
}

func redacted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("<redacted, %d bytes>", len(s))
	}
	return "<redacted>"
}

// federatesSecrets reports whether a federated kind's targets are Secrets.
func (s *snapshot) federatesSecrets(kind string) bool {
	for _, ftc := range s.typeConfigs {
		if ftc.Spec.FederatedType.Kind == kind {
			return ftc.Spec.TargetType.Group == "" && ftc.Spec.TargetType.Kind == "Secret"
		}
	}
	return kind == "FederatedSecret"
}

// yamlOf renders the value at path as YAML; empty when there is none.
func yamlOf(obj map[string]any, path ...string) string {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !ok || v == nil {
		return ""
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(out)
}

// typesView is the federated types page.
type typeRow struct {
	Name, Target, Federated      string
	Propagation, Controller      string
	PropagationClass, Collection string
	Objects                      int
	Members                      []matrixCell
}

func (d *dashboard) typesView(s *snapshot, _ *http.Request) (string, any, int) {
	rows := make([]typeRow, 0, len(s.typeConfigs))
	for _, ftc := range s.typeConfigs {
		tt := ftc.Spec.TargetType
		row := typeRow{Name: ftc.Name, Target: tt.Kind + " (" + tt.GroupVersionString() + ")",
			Federated: ftc.Spec.FederatedType.Kind, Propagation: string(ftc.Spec.Propagation),
			Controller: orNone(string(ftc.Status.PropagationController)), Collection: "Disabled",
			Objects: s.counts[ftc.Spec.FederatedType.Kind]}
		if ftc.StatusCollectionEnabled() {
			row.Collection = "Enabled"
		}
		row.PropagationClass = cellOK
		if !ftc.PropagationEnabled() {
			row.PropagationClass = cellNotPlaced
		}
		served := map[string]corev1beta1.TargetTypeStatus{}
		for _, c := range ftc.Status.TargetTypeClusterStatus {
			served[c.ClusterName] = c.Status
		}
		for _, c := range s.clusters {
			cell := matrixCell{Cluster: c.Name, Text: "?", Class: cellPending, Title: c.Name + " not checked yet"}
			switch served[c.Name] {
			case corev1beta1.TargetTypePresent:
				cell.Text, cell.Class, cell.Title = "serves", cellOK, c.Name+" serves "+tt.Kind
			case corev1beta1.TargetTypeNotPresent:
				cell.Text, cell.Class, cell.Title = "missing", cellFailed, c.Name+" does not serve "+tt.Kind
			}
			row.Members = append(row.Members, cell)
		}
		rows = append(rows, row)
	}
	return "Federated types", rows, http.StatusOK
}
