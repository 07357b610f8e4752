package typeconfig

import (
	"context"
	"sort"
	"sync"

	"github.com/go-logr/logr"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// RecordingRunner is a TypeRunner that records which types run, with the
// spec they were started with, and logs each start and stop. It stands in
// for the propagation engine where only the lifecycle matters.
type RecordingRunner struct {
	Log logr.Logger

	mu      sync.Mutex
	running map[string]corev1beta1.FederatedTypeConfigSpec
	starts  map[string]int
}

// StartType records the type as running.
func (r *RecordingRunner) StartType(_ context.Context, ftc *corev1beta1.FederatedTypeConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[string]corev1beta1.FederatedTypeConfigSpec{}
		r.starts = map[string]int{}
	}
	r.running[ftc.Name] = *ftc.Spec.DeepCopy()
	r.starts[ftc.Name]++
	r.Log.Info("type started", "federatedTypeConfig", ftc.Name, "targetVersion", ftc.Spec.TargetType.Version)
	return nil
}

// StopType records the type as stopped.
func (r *RecordingRunner) StopType(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, name)
	r.Log.Info("type stopped", "federatedTypeConfig", name)
}

// Running lists the running types, sorted.
func (r *RecordingRunner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.running))
	for n := range r.running {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Spec is the spec a running type was started with.
func (r *RecordingRunner) Spec(name string) (corev1beta1.FederatedTypeConfigSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.running[name]
	return s, ok
}

// Starts counts how often a type was started.
func (r *RecordingRunner) Starts(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts[name]
}
