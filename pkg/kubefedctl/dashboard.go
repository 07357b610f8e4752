package kubefedctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
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
addressed to that name (against DNS rebinding).`

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
	fmt.Fprintf(streams.Out, "Serving the dashboard of %s on http://%s/?token=%s (Ctrl-C stops it)\n", host.context, ln.Addr(), token)
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

// Resources the dashboard watches besides the federated types.
var (
	kubeFedClustersGVR = corev1beta1.GroupVersion.WithResource("kubefedclusters")
	typeConfigsGVR     = corev1beta1.GroupVersion.WithResource("federatedtypeconfigs")
	preferencesGVR     = schedulingv1alpha1.GroupVersion.WithResource("replicaschedulingpreferences")
)

// dashboard holds the watch-backed picture of the federation the pages are
// rendered from.
type dashboard struct {
	kube      kubernetes.Interface
	kubefedNS string
	// namespace limits the federated objects shown; "" for all.
	namespace string

	// control watches the KubeFed namespace, objects the namespace shown.
	control, objects                   dynamicinformer.DynamicSharedInformerFactory
	clusters, typeConfigs, preferences toolscache.SharedIndexInformer

	stop <-chan struct{}
	mu   sync.Mutex
	// types are the informers of the federated types, by GVR; started as
	// their FederatedTypeConfigs appear. typeErrors are their last list or
	// watch errors, such as a federated CRD that is not installed.
	types      map[schema.GroupVersionResource]toolscache.SharedIndexInformer
	typeErrors map[schema.GroupVersionResource]string

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
		kube:       kube,
		kubefedNS:  kubefedNS,
		namespace:  namespace,
		control:    dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, kubefedNS, nil),
		objects:    dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil),
		types:      map[schema.GroupVersionResource]toolscache.SharedIndexInformer{},
		typeErrors: map[schema.GroupVersionResource]string{},
		events:     map[dashKey]cachedEvents{},
		subs:       map[chan struct{}]struct{}{},
	}
	d.clusters = d.watch(d.control, kubeFedClustersGVR)
	d.typeConfigs = d.watch(d.control, typeConfigsGVR)
	d.preferences = d.watch(d.objects, preferencesGVR)
	_, _ = d.typeConfigs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    d.watchType,
		UpdateFunc: func(_, obj any) { d.watchType(obj) },
	})
	return d
}

// watch returns the informer of gvr, whose every change is a new version.
func (d *dashboard) watch(f dynamicinformer.DynamicSharedInformerFactory, gvr schema.GroupVersionResource) toolscache.SharedIndexInformer {
	inf := f.ForResource(gvr).Informer()
	_ = inf.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.changed() },
		UpdateFunc: func(_, _ any) { d.changed() },
		DeleteFunc: func(any) { d.changed() },
	})
	return inf
}

// watchType starts watching the federated type of a FederatedTypeConfig.
func (d *dashboard) watchType(obj any) {
	ftc, err := typeConfigOf(obj)
	if err != nil {
		return
	}
	fed := ftc.Spec.FederatedType
	if fed.PluralName == "" || fed.Version == "" {
		return
	}
	// A cluster-scoped type is listed across namespaces only when all of
	// them are shown.
	if !fed.Namespaced() && d.namespace != "" {
		return
	}
	gvr := gvrOf(fed)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.types[gvr]; ok {
		return
	}
	inf := d.watch(d.objects, gvr)
	_ = inf.SetWatchErrorHandler(func(_ *toolscache.Reflector, err error) {
		d.mu.Lock()
		d.typeErrors[gvr] = err.Error()
		d.mu.Unlock()
		d.changed()
	})
	d.types[gvr] = inf
	if d.stop != nil {
		d.objects.Start(d.stop)
	}
}

// start runs the informers until ctx ends.
func (d *dashboard) start(ctx context.Context) {
	d.mu.Lock()
	d.stop = ctx.Done()
	d.mu.Unlock()
	d.control.Start(ctx.Done())
	d.objects.Start(ctx.Done())
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
	version     uint64
	synced      bool
	clusters    []corev1beta1.KubeFedCluster
	typeConfigs []corev1beta1.FederatedTypeConfig
	preferences []schedulingv1alpha1.ReplicaSchedulingPreference
	report      statusReport
	// objects are the federated objects by kind, namespace and name.
	objects map[dashKey]*unstructured.Unstructured
	// counts are the number of objects of each federated kind.
	counts map[string]int
	// problems are the report's objects whose status could not be read.
	problems []string
}

type dashKey struct{ kind, namespace, name string }

// current is the snapshot of the latest version, built at most once per
// version however many pages ask.
func (d *dashboard) current() *snapshot {
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	v := d.version.Load()
	if d.snap != nil && d.snap.version == v {
		return d.snap
	}
	d.snap = d.build(v)
	return d.snap
}

func (d *dashboard) build(v uint64) *snapshot {
	s := &snapshot{version: v, objects: map[dashKey]*unstructured.Unstructured{}, counts: map[string]int{}}
	s.synced = d.clusters.HasSynced() && d.typeConfigs.HasSynced()
	for _, obj := range d.clusters.GetStore().List() {
		var c corev1beta1.KubeFedCluster
		if err := fromUnstructured(obj, &c); err == nil {
			s.clusters = append(s.clusters, c)
		}
	}
	known := map[schema.GroupVersionResource]bool{}
	for _, obj := range d.typeConfigs.GetStore().List() {
		ftc, err := typeConfigOf(obj)
		if err != nil {
			continue
		}
		s.typeConfigs = append(s.typeConfigs, *ftc)
		known[gvrOf(ftc.Spec.FederatedType)] = true
	}
	sort.Slice(s.typeConfigs, func(i, j int) bool { return s.typeConfigs[i].Name < s.typeConfigs[j].Name })
	for _, obj := range d.preferences.GetStore().List() {
		var p schedulingv1alpha1.ReplicaSchedulingPreference
		if err := fromUnstructured(obj, &p); err == nil {
			s.preferences = append(s.preferences, p)
		}
	}

	d.mu.Lock()
	informers := make([]toolscache.SharedIndexInformer, 0, len(d.types))
	for gvr, inf := range d.types {
		// A type whose FederatedTypeConfig went away is no longer shown.
		if !known[gvr] {
			continue
		}
		informers = append(informers, inf)
		if inf.HasSynced() {
			continue
		}
		if msg := d.typeErrors[gvr]; msg != "" {
			// Unreadable, perhaps for good: said, not waited for.
			s.problems = append(s.problems, fmt.Sprintf("%s cannot be read: %s", gvr.Resource, msg))
			continue
		}
		s.synced = false
	}
	d.mu.Unlock()
	var objects []unstructured.Unstructured
	for _, inf := range informers {
		for _, obj := range inf.GetStore().List() {
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
	d.events[key] = cachedEvents{rows: rows, err: err, at: time.Now()}
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
func allowedHost(requestHost, served string) bool {
	host := requestHost
	if h, _, err := net.SplitHostPort(requestHost); err == nil {
		host = h
	}
	servedHost, _, err := net.SplitHostPort(served)
	if err != nil {
		servedHost = served
	}
	host = strings.Trim(host, "[]")
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return host == servedHost && servedHost != "" && servedHost != "0.0.0.0" && servedHost != "::"
}
