package sync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

// A create answered with a server error may have been made: the next try
// reads the copy first. One the API server refused was not.
func TestMayHaveCommitted(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 0), true},
		{apierrors.NewServiceUnavailable("unavailable"), true},
		{fmt.Errorf("wrapped: %w", apierrors.NewInternalError(errors.New("x"))), true},
		{apierrors.NewAlreadyExists(cm, "x"), false},
		{apierrors.NewForbidden(cm, "x", errors.New("no")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewBadRequest("bad"), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false},
	} {
		if got := mayHaveCommitted(c.err); got != c.want {
			t.Errorf("mayHaveCommitted(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A failure that says when to try again backs off while it lasts (a member
// refusing every create would otherwise get each object's create every
// second); an outcome that did not fail is tried again when it says, and
// ends the backoff.
func TestFailuresThatSayWhenStillBackOff(t *testing.T) {
	d := &clusterDispatcher{failures: workqueue.NewTypedItemExponentialFailureRateLimiter[dispatchItem](100*time.Millisecond, time.Minute)}
	item := dispatchItem{typeConfig: "deployments.apps", key: "ns/web"}
	refused := outcome{status: typesv1beta1.CreationFailed, requeue: time.Second}
	var last time.Duration
	for range 8 {
		last = d.retryAfter(item, refused)
		if last < time.Second {
			t.Fatalf("retried after %s, sooner than the outcome asks", last)
		}
	}
	if last <= time.Second {
		t.Fatalf("after 8 failures the retry is still %s: no backoff", last)
	}
	if got := d.retryAfter(item, outcome{requeue: 200 * time.Millisecond}); got != 200*time.Millisecond {
		t.Fatalf("an outcome that did not fail: retried after %s", got)
	}
	if got := d.retryAfter(item, refused); got != time.Second {
		t.Fatalf("a new failure after a success: retried after %s, want the outcome's 1s", got)
	}
}
