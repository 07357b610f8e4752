package controllermanager

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// A term whose controllers all end without error, or that has none (every
// singleton's feature gate off), lasts as long as the Lease: ending at once
// would leave the Lease held by a replica that no longer says it leads,
// and the leader's writes undone.
func TestATermWithoutControllersLastsAsLongAsTheLease(t *testing.T) {
	kube := kubefake.NewClientset()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "default", LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "replica-a"})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	s := &singletons{lock: lock, identity: "replica-a", log: logr.Discard(),
		setup: func(m manager.Manager) error {
			return m.Add(manager.RunnableFunc(func(context.Context) error {
				close(ended)
				return nil
			}))
		}}
	term, end := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.term(term) }()
	<-ended
	// Its one controller ended at once; the term goes on.
	select {
	case err := <-done:
		t.Fatalf("a term whose controllers ended went before its Lease: %v", err)
	case <-time.After(time.Second):
	}
	if !s.Leading() {
		t.Fatal("the term's replica does not say it leads")
	}
	end()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.Leading() {
		t.Error("still leading after the term ended")
	}
}
