package sync

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
