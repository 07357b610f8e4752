package kubefedctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// defaultTokenWait is how long join waits for the token controller, as
// KubeFed did; it usually answers within a second.
const defaultTokenWait = 30 * time.Second

// desiredTokenSecret asks the member's token controller for a long-lived
// token of the registration's ServiceAccount. Since Kubernetes 1.24 no such
// Secret is created automatically; creating it explicitly works on every
// version, so join does not look at the member's version.
func desiredTokenSecret(r registration) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.tokenSecretName(),
			Namespace:   r.namespace,
			Labels:      r.labels(),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: r.serviceAccountName()},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	}
}

// tokenSecretUsable reports whether an existing token Secret still belongs
// to the ServiceAccount: the token controller deletes, rather than fixes, a
// token Secret whose ServiceAccount was recreated, and its token would no
// longer authenticate.
func tokenSecretUsable(secret *corev1.Secret, sa *corev1.ServiceAccount, r registration) bool {
	if secret.Type != corev1.SecretTypeServiceAccountToken || sa == nil ||
		secret.Annotations[corev1.ServiceAccountNameKey] != r.serviceAccountName() {
		return false
	}
	uid := secret.Annotations[corev1.ServiceAccountUIDKey]
	return uid == "" || uid == string(sa.UID)
}

// errTokenSecretDeleted is returned when the Secret disappears while join
// waits for its token.
var errTokenSecretDeleted = errors.New("the Secret was deleted while waiting for its token; the token controller deletes token Secrets whose ServiceAccount is missing or was recreated, so re-run join")

// waitForToken polls the token Secret until the token controller has
// written a token into it, until deadline; total is the whole wait the user
// allowed, for the error message.
func waitForToken(ctx context.Context, c *cluster, ref objectRef, deadline time.Time, total, interval time.Duration) (*corev1.Secret, error) {
	var secret *corev1.Secret
	err := wait.PollUntilContextTimeout(ctx, interval, max(time.Until(deadline), time.Millisecond), true, func(ctx context.Context) (bool, error) {
		s, err := c.kube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, errTokenSecretDeleted
		case err != nil:
			return false, err
		}
		secret = s
		return len(s.Data[tokenKey]) > 0, nil
	})
	switch {
	case err == nil:
		return secret, nil
	case wait.Interrupted(err) && ctx.Err() == nil:
		return nil, fmt.Errorf("timed out after %s waiting for the token controller of cluster %q to write a token into %s: "+
			"check that kube-controller-manager runs there with its service account token controller (--service-account-private-key-file), "+
			"or raise --token-wait; the objects created so far are reused by a re-run of join and removed by unjoin",
			total, c.context, ref)
	default:
		return nil, fmt.Errorf("wait for the token of %s in %s: %w", ref, c.context, err)
	}
}

// tokenAccepted reports whether the member authenticates token. Only an
// Unauthorized answer means no; other failures are errors.
func tokenAccepted(ctx context.Context, c *cluster, token []byte) (bool, error) {
	if c.authenticate == nil {
		return true, nil
	}
	err := c.authenticate(ctx, token)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsUnauthorized(err):
		return false, nil
	default:
		return false, fmt.Errorf("check the new token against cluster %q: %w", c.context, err)
	}
}
