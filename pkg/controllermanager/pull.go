package controllermanager

import (
	"context"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// pullMembers knows which KubeFedClusters of the KubeFed namespace are in
// Pull mode, from the manager's cache; the engine asks on every dispatch,
// so it answers from a map, not a cache read.
type pullMembers struct {
	namespace string
	mu        sync.RWMutex
	pulled    map[string]bool
	// changed hears of a member that moved between Push and Pull, or of
	// a Pull-mode member deleted, after the change is visible here.
	changed func(cluster string)
}

// onChange sets who hears of members moving between Push and Pull.
func (p *pullMembers) onChange(f func(cluster string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.changed = f
}

// newPullMembers follows the KubeFedClusters of namespace in cache.
func newPullMembers(ctx context.Context, cache ctrlcache.Cache, namespace string) (*pullMembers, error) {
	p := &pullMembers{namespace: namespace, pulled: map[string]bool{}}
	inf, err := cache.GetInformer(ctx, &corev1beta1.KubeFedCluster{})
	if err != nil {
		return nil, fmt.Errorf("watch KubeFedClusters: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    p.observe,
		UpdateFunc: func(_, obj any) { p.observe(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if c, ok := obj.(*corev1beta1.KubeFedCluster); ok && c.Namespace == p.namespace {
				p.mu.Lock()
				was := p.pulled[c.Name]
				delete(p.pulled, c.Name)
				changed := p.changed
				p.mu.Unlock()
				// The engine may have planned for the deletion while the
				// member still showed as pulled here (its own handler of
				// the same event runs in any order with this one).
				if changed != nil && was {
					changed(c.Name)
				}
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watch KubeFedClusters: %w", err)
	}
	return p, nil
}

func (p *pullMembers) observe(obj any) {
	c, ok := obj.(*corev1beta1.KubeFedCluster)
	if !ok || c.Namespace != p.namespace {
		return
	}
	p.mu.Lock()
	was := p.pulled[c.Name]
	if c.PullMode() {
		p.pulled[c.Name] = true
	} else {
		delete(p.pulled, c.Name)
	}
	changed := p.changed
	p.mu.Unlock()
	if changed != nil && was != c.PullMode() {
		changed(c.Name)
	}
}

// Pulled implements syncctl.PullMembers.
func (p *pullMembers) Pulled(cluster string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.pulled[cluster]
}

// Any implements syncctl.PullMembers.
func (p *pullMembers) Any() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.pulled) > 0
}
