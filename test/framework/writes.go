package framework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// Writes records every change a cluster's API server made to the
// ConfigMaps of one namespace whose names start with a prefix, from the
// moment WatchWrites returns: what a test's copies went through, and
// nothing else the cluster writes (a request counter counts every
// ConfigMap of the cluster, the control plane's own included).
type Writes struct {
	cluster   *Cluster
	namespace string
	prefix    string

	mu     sync.Mutex
	events map[watch.EventType]map[string]int
	// sentinels are the ConfigMaps Settle made, not counted.
	sentinels map[string]bool
	err       error
}

// WatchWrites starts recording the changes to the ConfigMaps named
// prefix* in namespace of c, until ctx ends. A watch the server closes is
// opened again from the last change seen, so none is missed; one that
// cannot be is an error of Counts.
func WatchWrites(ctx context.Context, c *Cluster, namespace, prefix string) (*Writes, error) {
	cms := c.Kube.CoreV1().ConfigMaps(namespace)
	list, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("list ConfigMaps of %s in %s: %w", namespace, c.Name, err)
	}
	rv := list.ResourceVersion
	open := func() (watch.Interface, error) {
		return cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	w, err := open()
	if err != nil {
		return nil, fmt.Errorf("watch ConfigMaps of %s in %s: %w", namespace, c.Name, err)
	}
	writes := &Writes{cluster: c, namespace: namespace, prefix: prefix,
		events: map[watch.EventType]map[string]int{}, sentinels: map[string]bool{}}
	go func() {
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					writes.fail(fmt.Errorf("watch of ConfigMaps of %s in %s: %v", namespace, c.Name, ev.Object))
					w.Stop()
					return
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok {
					continue
				}
				rv = cm.ResourceVersion
				if ev.Type == watch.Bookmark || !strings.HasPrefix(cm.Name, prefix) {
					continue
				}
				writes.mu.Lock()
				if writes.events[ev.Type] == nil {
					writes.events[ev.Type] = map[string]int{}
				}
				writes.events[ev.Type][cm.Name]++
				writes.mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			if w, err = open(); err != nil {
				writes.fail(fmt.Errorf("watch ConfigMaps of %s in %s again: %w", namespace, c.Name, err))
				return
			}
		}
	}()
	return writes, nil
}

func (w *Writes) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Counts is how many times each ConfigMap was added, modified and deleted
// so far, or why the record has a gap. Call Settle first for a record of
// everything done before.
func (w *Writes) Counts() (added, modified, deleted map[string]int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	counts := func(t watch.EventType) map[string]int {
		m := maps.Clone(w.events[t])
		maps.DeleteFunc(m, func(name string, _ int) bool { return w.sentinels[name] })
		return m
	}
	return counts(watch.Added), counts(watch.Modified), counts(watch.Deleted), w.err
}

// Settle returns once the record holds every change made before it was
// called: the watch delivers changes in order, and Settle makes one of
// its own, a ConfigMap Counts leaves out, and waits to see it.
func (w *Writes) Settle(ctx context.Context) error {
	cms := w.cluster.Kube.CoreV1().ConfigMaps(w.namespace)
	sentinel, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.prefix + "settle-" + utilrand.String(5)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create a ConfigMap in %s of %s: %w", w.namespace, w.cluster.Name, err)
	}
	w.mu.Lock()
	w.sentinels[sentinel.Name] = true
	w.mu.Unlock()
	defer func() { _ = cms.Delete(context.WithoutCancel(ctx), sentinel.Name, metav1.DeleteOptions{}) }()
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.events[watch.Added][sentinel.Name] > 0, w.err
	})
}

// Names are the ConfigMaps of counts in order, each with its count when
// more than one: a failure's message.
func Names(counts map[string]int) string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if counts[name] > 1 {
			name = fmt.Sprintf("%s×%d", name, counts[name])
		}
		names = append(names, name)
	}
	return strings.Join(names, " ")
}
