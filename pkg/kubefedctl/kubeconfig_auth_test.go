package kubefedctl

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A member answers the token check with what its API server would: 401
// for a token it does not authenticate, and otherwise whatever the request
// meets after authentication. Only the 401 means the token is not
// accepted; a member before Kubernetes 1.28, without the v1
// SelfSubjectReview API, answers 404 and has accepted it.
func TestATokenIsAcceptedUnlessTheMemberAnswersUnauthorized(t *testing.T) {
	for _, tc := range []struct {
		code     int
		reason   string
		accepted bool
	}{
		{http.StatusCreated, "", true},
		{http.StatusForbidden, "Forbidden", true},
		{http.StatusNotFound, "NotFound", true},
		{http.StatusMethodNotAllowed, "MethodNotAllowed", true},
		{http.StatusUnauthorized, "Unauthorized", false},
	} {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			var gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth = r.Header.Get("Authorization")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				if tc.code == http.StatusCreated {
					fmt.Fprint(w, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","status":{"userInfo":{"username":"system:serviceaccount:kube-federation-system:m"}}}`)
					return
				}
				fmt.Fprintf(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":%q,"code":%d}`, tc.reason, tc.code)
			}))
			defer srv.Close()
			c := &cluster{context: "member1", authenticate: func(ctx context.Context, token []byte) error {
				return authenticateWith(ctx, &rest.Config{Host: srv.URL, BearerToken: "the user's own"}, token)
			}}
			accepted, err := tokenAccepted(context.Background(), c, []byte("new-token"))
			if err != nil {
				t.Fatalf("%d: %v", tc.code, err)
			}
			if accepted != tc.accepted {
				t.Errorf("answered %d: accepted %v, want %v", tc.code, accepted, tc.accepted)
			}
			if gotAuth != "Bearer new-token" {
				t.Errorf("the check sent %q, want the new token alone", gotAuth)
			}
		})
	}
	// Anything else is an error that names the cluster.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := &cluster{context: "member1", authenticate: func(ctx context.Context, token []byte) error {
		return authenticateWith(ctx, &rest.Config{Host: srv.URL}, token)
	}}
	if _, err := tokenAccepted(context.Background(), c, []byte("t")); err == nil || !strings.Contains(err.Error(), `"member1"`) {
		t.Errorf("a 500 answer: %v, want an error naming the cluster", err)
	}
}
