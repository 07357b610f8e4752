package kubefedctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
)

const dashboardLong = `Serve a read-only web view of the federation: its member clusters, every
federated object in every member as a matrix of status colours, each
object's placement, per-cluster status and messages, overrides, remote and
aggregated status, events and replica split, and the federated types and
the members that serve them. Pages follow changes live.

It reads the host cluster with your kubeconfig's credentials, as kubectl
does: it adds no privilege and runs nothing in the cluster. It listens on
127.0.0.1 only, unless --address says otherwise, and answers only requests
addressed to that name (against DNS rebinding). On a wildcard address
(0.0.0.0, [::] or :PORT) it answers any name of the machine, and the
token in the printed URL is all that keeps others out.`

const dashboardExample = `  # Open http://127.0.0.1:8001 in a browser
  kubefedctl dashboard --host-cluster-context host

  # Only what one namespace holds (for users who may read only it)
  kubefedctl dashboard -n demo --address 127.0.0.1:9000`

type dashboardOptions struct {
	g         *globalOptions
	address   string
	namespace string
}

func newDashboardCommand(g *globalOptions, streams IOStreams) *cobra.Command {
	o := &dashboardOptions{g: g, address: "127.0.0.1:8001"}
	cmd := &cobra.Command{
		Use:     "dashboard",
		Short:   "Serve a read-only web view of the federation on 127.0.0.1",
		Long:    dashboardLong,
		Example: dashboardExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), streams)
		},
	}
	cmd.Flags().StringVar(&o.address, "address", o.address, "host:port to listen on; a port of 0 picks a free one")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "show only the federated objects of this namespace; all namespaces when empty")
	return cmd
}

func (o *dashboardOptions) run(ctx context.Context, streams IOStreams) error {
	host, err := connectHost(o.g, streams)
	if err != nil {
		return err
	}
	dyn := host.watcher
	if dyn == nil {
		dyn = host.dynamic
	}
	d := newDashboard(dyn, host.kube, o.g.kubefedNamespace, o.namespace)
	ln, err := net.Listen("tcp", o.address)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.address, err)
	}
	if ip, ok := ln.Addr().(*net.TCPAddr); ok && !ip.IP.IsLoopback() {
		fmt.Fprintf(streams.ErrOut, "Warning: %s is reachable from other machines, over plain HTTP; the token in the URL is all that keeps them out.\n", ln.Addr())
		if ip.IP.IsUnspecified() {
			fmt.Fprintln(streams.ErrOut, "Any name or address of this machine may replace the host in the URL.")
		}
	}
	token, err := newDashboardToken()
	if err != nil {
		return err
	}
	d.start(ctx)
	srv := &http.Server{
		Handler:           d.handler(ln.Addr().String(), token),
		ReadHeaderTimeout: 10 * time.Second,
		// Live streams end with the command.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	fmt.Fprintf(streams.Out, "Serving the dashboard of %s on %s (Ctrl-C stops it)\n", host.context, dashboardURL(ln.Addr(), token))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

// newDashboardToken is the secret of one dashboard run: other users of the
// machine can reach 127.0.0.1 too, and must not read the federation with
// the caller's credentials.
func newDashboardToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the dashboard's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// dashboardURL is the URL to open, with the run's token. A wildcard
// address is no host a browser can open: the machine's name stands in for
// it, which this machine resolves and others may.
func dashboardURL(addr net.Addr, token string) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		host, port = addr.String(), ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/", RawQuery: url.Values{"token": {token}}.Encode()}
	return u.String()
}

// Resources the dashboard watches besides the federated types.
var (
	kubeFedClustersGVR = corev1beta1.GroupVersion.WithResource("kubefedclusters")
	typeConfigsGVR     = corev1beta1.GroupVersion.WithResource("federatedtypeconfigs")
	preferencesGVR     = schedulingv1alpha1.GroupVersion.WithResource("replicaschedulingpreferences")
)

// dashboard holds the watch-backed picture of the federation the pages are
// rendered from.
type dashboard struct {
	dyn       dynamic.Interface
	kube      kubernetes.Interface
	kubefedNS string
	// namespace limits the federated objects shown; "" for all.
	namespace string

	clusters, typeConfigs, preferences *source

	// rebuildEvery is the least time between two snapshot builds.
	rebuildEvery time.Duration

	mu sync.Mutex
	// ctx is the context the sources run in; nil until start.
	ctx context.Context
	// types are the sources of the federated types, by GVR: started as
	// their FederatedTypeConfigs appear, stopped as they go.
	types map[schema.GroupVersionResource]*source

	// events caches the events of object pages for eventsTTL.
	eventsMu sync.Mutex
	events   map[dashKey]cachedEvents

	// version counts changes; pages and the live stream follow it.
	version atomic.Uint64
	subsMu  sync.Mutex
	subs    map[chan struct{}]struct{}

	snapMu sync.Mutex
	snap   *snapshot
}

func newDashboard(dyn dynamic.Interface, kube kubernetes.Interface, kubefedNS, namespace string) *dashboard {
	d := &dashboard{
		dyn:          dyn,
		kube:         kube,
		kubefedNS:    kubefedNS,
		namespace:    namespace,
		rebuildEvery: liveInterval,
		types:        map[schema.GroupVersionResource]*source{},
		events:       map[dashKey]cachedEvents{},
		subs:         map[chan struct{}]struct{}{},
	}
	d.clusters = d.newSource(kubeFedClustersGVR, kubefedNS, "KubeFedClusters"+inNamespace(kubefedNS))
	d.typeConfigs = d.newSource(typeConfigsGVR, kubefedNS, "FederatedTypeConfigs"+inNamespace(kubefedNS))
	d.preferences = d.newSource(preferencesGVR, namespace, "ReplicaSchedulingPreferences"+inNamespace(namespace))
	_, _ = d.typeConfigs.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.syncTypes() },
		UpdateFunc: func(_, _ any) { d.syncTypes() },
		DeleteFunc: func(any) { d.syncTypes() },
	})
	return d
}

func inNamespace(namespace string) string {
	if namespace == "" {
		return ""
	}
	return fmt.Sprintf(" in namespace %q", namespace)
}

// source is one watched resource: its informer, and why the host cannot
// be read now, if it cannot.
type source struct {
	// what names the resource in the pages' notes.
	what string
	inf  toolscache.SharedIndexInformer
	// stop ends the informer; nil until it runs.
	stop context.CancelFunc
	// changed tells the pages that the source's failure came or went.
	changed func()

	mu sync.Mutex
	// failure is the last list or watch error, and since when the host
	// has failed; an established watch clears it.
	failure string
	since   time.Time
}

// newSource returns the source of gvr in namespace ("" for all), whose
// every change is a new version. Its list and watch calls go through the
// source, which sees them succeed or fail.
func (d *dashboard) newSource(gvr schema.GroupVersionResource, namespace, what string) *source {
	s := &source{what: what, changed: d.changed}
	res := d.dyn.Resource(gvr).Namespace(namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := res.List(ctx, opts)
			if err != nil {
				s.failed("list", err)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := res.Watch(ctx, opts)
			if err != nil {
				s.failed("watch", err)
			} else {
				s.recovered()
			}
			return w, err
		},
	}
	s.inf = toolscache.NewSharedIndexInformerWithOptions(toolscache.ToListWatcherWithWatchListSemantics(lw, d.dyn),
		&unstructured.Unstructured{}, toolscache.SharedIndexInformerOptions{ObjectDescription: gvr.String()})
	_ = s.inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	// What ends an established watch reaches the informer's handler only.
	// The failed list or watch call before it is already recorded, in the
	// host's own words rather than the reflector's wrapping.
	_ = s.inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		s.mu.Lock()
		recorded := s.failure != ""
		s.mu.Unlock()
		if !recorded {
			s.failed("watch", err)
		}
	})
	_, _ = s.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.changed() },
		UpdateFunc: func(_, _ any) { d.changed() },
		DeleteFunc: func(any) { d.changed() },
	})
	return s
}

// failed records a list or watch error. A watch that expired or ended is
// renewed by the informer, and the end of the run is no failure.
func (s *source) failed(op string, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) ||
		apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	msg := fmt.Sprintf("Cannot %s %s: %v", op, s.what, err)
	s.mu.Lock()
	if s.failure == "" {
		s.since = time.Now()
	}
	news := s.failure != msg
	s.failure = msg
	s.mu.Unlock()
	if news {
		s.changed()
	}
}

// recovered clears the failure: the source is watched again.
func (s *source) recovered() {
	s.mu.Lock()
	had := s.failure != ""
	s.failure = ""
	s.mu.Unlock()
	if had {
		s.changed()
	}
}

// problem is the source's failure as the pages say it; "" when there is
// none.
func (s *source) problem() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == "" {
		return ""
	}
	msg := s.failure + " (since " + s.since.Format("15:04:05") + ")"
	if s.inf.HasSynced() {
		msg += "; shown as last read"
	}
	return msg
}

// run starts the source in d.ctx, and a new version once it has synced:
// a first list that is empty calls no handler, and pages must still stop
// waiting for it. d.mu is held.
func (d *dashboard) run(s *source) {
	ctx, cancel := context.WithCancel(d.ctx)
	s.stop = cancel
	go s.inf.RunWithContext(ctx)
	go func() {
		select {
		case <-s.inf.HasSyncedChecker().Done():
			d.changed()
		case <-ctx.Done():
		}
	}()
}

// syncTypes watches the federated types the FederatedTypeConfigs name, and
// stops watching those they no longer name (deleted, or another version).
func (d *dashboard) syncTypes() {
	wanted := map[schema.GroupVersionResource]bool{}
	for _, obj := range d.typeConfigs.inf.GetStore().List() {
		ftc, err := typeConfigOf(obj)
		if err != nil {
			continue
		}
		fed := ftc.Spec.FederatedType
		if fed.PluralName == "" || fed.Version == "" {
			continue
		}
		// A cluster-scoped type is listed across namespaces only when all of
		// them are shown.
		if !fed.Namespaced() && d.namespace != "" {
			continue
		}
		wanted[gvrOf(fed)] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for gvr, s := range d.types {
		if !wanted[gvr] {
			if s.stop != nil {
				s.stop()
			}
			delete(d.types, gvr)
		}
	}
	for gvr := range wanted {
		if _, ok := d.types[gvr]; ok {
			continue
		}
		s := d.newSource(gvr, d.namespace, gvr.GroupResource().String()+inNamespace(d.namespace))
		d.types[gvr] = s
		if d.ctx != nil {
			d.run(s)
		}
	}
}

// start runs the sources until ctx ends.
func (d *dashboard) start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = ctx
	for _, s := range []*source{d.clusters, d.typeConfigs, d.preferences} {
		d.run(s)
	}
	for _, s := range d.types {
		d.run(s)
	}
}

// changed records a change and wakes the live streams.
func (d *dashboard) changed() {
	d.version.Add(1)
	d.subsMu.Lock()
	defer d.subsMu.Unlock()
	for ch := range d.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// subscribe returns a channel that is signalled after changes, and the
// function that ends the subscription.
func (d *dashboard) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	d.subsMu.Lock()
	d.subs[ch] = struct{}{}
	d.subsMu.Unlock()
	return ch, func() {
		d.subsMu.Lock()
		delete(d.subs, ch)
		d.subsMu.Unlock()
	}
}

// snapshot is the federation at one version, as the pages show it.
type snapshot struct {
	version uint64
	built   time.Time
	// synced is false while a source has neither been read nor failed.
	synced      bool
	clusters    []corev1beta1.KubeFedCluster
	typeConfigs []corev1beta1.FederatedTypeConfig
	preferences []schedulingv1alpha1.ReplicaSchedulingPreference
	report      statusReport
	// objects are the federated objects by kind, namespace and name.
	objects map[dashKey]*unstructured.Unstructured
	// counts are the number of objects of each federated kind.
	counts map[string]int
	// hostErrors say which sources the host does not let be read.
	hostErrors []string
	// problems are the report's objects whose status could not be read.
	problems []string
}

type dashKey struct{ kind, namespace, name string }

// current is a snapshot that holds every change made before the call. A
// snapshot is built at most once per rebuildEvery however many pages ask,
// so that a federation that changes all the time costs one build per
// interval, not one per open page and change. One built before all the
// sources were read is never reused: a source whose first list is empty
// becomes read without a change.
func (d *dashboard) current() *snapshot {
	v := d.version.Load()
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	if d.snap != nil && d.snap.synced && d.snap.version >= v {
		return d.snap
	}
	if d.snap != nil {
		time.Sleep(time.Until(d.snap.built.Add(d.rebuildEvery)))
	}
	d.snap = d.build(d.version.Load())
	return d.snap
}

func (d *dashboard) build(v uint64) *snapshot {
	s := &snapshot{version: v, built: time.Now(), synced: true, objects: map[dashKey]*unstructured.Unstructured{}, counts: map[string]int{}}
	for _, src := range []*source{d.clusters, d.typeConfigs, d.preferences} {
		s.note(src)
	}
	for _, obj := range d.clusters.inf.GetStore().List() {
		var c corev1beta1.KubeFedCluster
		if err := fromUnstructured(obj, &c); err == nil {
			s.clusters = append(s.clusters, c)
		}
	}
	known := map[schema.GroupVersionResource]bool{}
	for _, obj := range d.typeConfigs.inf.GetStore().List() {
		ftc, err := typeConfigOf(obj)
		if err != nil {
			continue
		}
		s.typeConfigs = append(s.typeConfigs, *ftc)
		known[gvrOf(ftc.Spec.FederatedType)] = true
	}
	sort.Slice(s.typeConfigs, func(i, j int) bool { return s.typeConfigs[i].Name < s.typeConfigs[j].Name })
	for _, obj := range d.preferences.inf.GetStore().List() {
		var p schedulingv1alpha1.ReplicaSchedulingPreference
		if err := fromUnstructured(obj, &p); err == nil {
			s.preferences = append(s.preferences, p)
		}
	}

	d.mu.Lock()
	gvrs := make([]schema.GroupVersionResource, 0, len(d.types))
	for gvr := range d.types {
		// A type whose FederatedTypeConfig went away is no longer shown.
		if known[gvr] {
			gvrs = append(gvrs, gvr)
		}
	}
	sort.Slice(gvrs, func(i, j int) bool { return gvrs[i].String() < gvrs[j].String() })
	sources := make([]*source, 0, len(gvrs))
	for _, gvr := range gvrs {
		sources = append(sources, d.types[gvr])
	}
	d.mu.Unlock()
	var objects []unstructured.Unstructured
	for _, src := range sources {
		// Unreadable, perhaps for good: said, not waited for.
		s.note(src)
		for _, obj := range src.inf.GetStore().List() {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			objects = append(objects, *u)
			s.objects[dashKey{u.GetKind(), u.GetNamespace(), u.GetName()}] = u
			s.counts[u.GetKind()]++
		}
	}
	// An object whose status cannot be read is shown without it rather
	// than hiding the whole federation.
	report, err := buildStatusReport(s.clusters, objects)
	if err != nil {
		// One pass finds every such object; one more build shows the rest.
		for i := range objects {
			u := &objects[i]
			if _, err := buildStatusReport(nil, objects[i:i+1]); err != nil {
				s.problems = append(s.problems, fmt.Sprintf("%s %s/%s is shown without its status: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err))
				stripped := u.DeepCopy()
				delete(stripped.Object, "status")
				objects[i] = *stripped
			}
		}
		report, _ = buildStatusReport(s.clusters, objects)
	}
	s.report = report
	return s
}

// note adds what keeps src from being read, or waits for it while it is
// being read for the first time.
func (s *snapshot) note(src *source) {
	if msg := src.problem(); msg != "" {
		s.hostErrors = append(s.hostErrors, msg)
	} else if !src.inf.HasSynced() {
		s.synced = false
	}
}

func typeConfigOf(obj any) (*corev1beta1.FederatedTypeConfig, error) {
	ftc := &corev1beta1.FederatedTypeConfig{}
	return ftc, fromUnstructured(obj, ftc)
}

func fromUnstructured(obj any, into any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("not an unstructured object: %T", obj)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// preferenceFor is the ReplicaSchedulingPreference that schedules an
// object, or nil.
func (s *snapshot) preferenceFor(kind, namespace, name string) *schedulingv1alpha1.ReplicaSchedulingPreference {
	for i := range s.preferences {
		p := &s.preferences[i]
		if p.Namespace == namespace && p.Name == name && p.Spec.TargetKind == kind {
			return p
		}
	}
	return nil
}

// namespaces are the namespaces that hold federated objects, sorted.
func (s *snapshot) namespaces() []string {
	seen := map[string]bool{}
	for k := range s.objects {
		if k.namespace != "" {
			seen[k.namespace] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// kinds are the federated kinds of the enabled types, sorted.
func (s *snapshot) kinds() []string {
	seen := map[string]bool{}
	for _, ftc := range s.typeConfigs {
		seen[ftc.Spec.FederatedType.Kind] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// eventsTTL is how long an object page's events are reused: a page that
// is refreshed on every change must not list events every 300 ms.
const eventsTTL = 3 * time.Second

type cachedEvents struct {
	rows []eventRow
	err  error
	at   time.Time
}

// eventsOf lists the recent events of a host object, newest first, at
// most once per eventsTTL.
func (d *dashboard) eventsOf(ctx context.Context, kind, namespace, name string) ([]eventRow, error) {
	key := dashKey{kind, namespace, name}
	d.eventsMu.Lock()
	c, ok := d.events[key]
	d.eventsMu.Unlock()
	if ok && time.Since(c.at) < eventsTTL {
		return slices.Clone(c.rows), c.err
	}
	rows, err := d.listEvents(ctx, kind, namespace, name)
	d.eventsMu.Lock()
	for k, old := range d.events {
		if time.Since(old.at) >= eventsTTL {
			delete(d.events, k)
		}
	}
	// A request that went away is no answer for the next viewer.
	if ctx.Err() == nil {
		d.events[key] = cachedEvents{rows: rows, err: err, at: time.Now()}
	}
	d.eventsMu.Unlock()
	return slices.Clone(rows), err
}

func (d *dashboard) listEvents(ctx context.Context, kind, namespace, name string) ([]eventRow, error) {
	if namespace == "" {
		// Events of cluster-scoped objects are recorded in default.
		namespace = metav1.NamespaceDefault
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := d.kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
	})
	if err != nil {
		return nil, err
	}
	rows := make([]eventRow, 0, len(list.Items))
	for _, e := range list.Items {
		when := e.LastTimestamp.Time
		if when.IsZero() {
			when = e.EventTime.Time
		}
		if when.IsZero() {
			when = e.CreationTimestamp.Time
		}
		rows = append(rows, eventRow{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), when: when})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].when.After(rows[j].when) })
	if len(rows) > 20 {
		rows = rows[:20]
	}
	return rows, nil
}

// eventRow is one event on an object's page.
type eventRow struct {
	Type, Reason, Message string
	Count                 int32
	Age                   string
	when                  time.Time
}

// allowedHost reports whether a request's Host names the address served:
// a page of another site that resolves its own name to 127.0.0.1 (DNS
// rebinding) must not read the federation with the user's credentials.
// Served on a wildcard address, the dashboard is meant to be reached by
// any of the machine's names; the token, in a cookie that the browser
// keeps for the name it was given under, is the guard then.
func allowedHost(requestHost, served string) bool {
	host := requestHost
	if h, _, err := net.SplitHostPort(requestHost); err == nil {
		host = h
	}
	servedHost, _, err := net.SplitHostPort(served)
	if err != nil {
		servedHost = served
	}
	if ip := net.ParseIP(servedHost); servedHost == "" || ip != nil && ip.IsUnspecified() {
		return true
	}
	host = strings.Trim(host, "[]")
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return host == servedHost
}
