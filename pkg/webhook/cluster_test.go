package webhook

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const ns = corev1beta1.DefaultKubeFedNamespace

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func secret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Data:       map[string][]byte{"token": []byte("not-for-the-webhook")},
	}
}

func kubeFedCluster(secretName string) *corev1beta1.KubeFedCluster {
	return &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member1"},
		Spec: corev1beta1.KubeFedClusterSpec{
			APIEndpoint: "https://127.0.0.1:6443",
			SecretRef:   corev1beta1.LocalSecretReference{Name: secretName},
		},
	}
}

// missingSecret is the warning for a Secret name that does not exist.
func missingSecret(name string) admission.Warnings {
	return admission.Warnings{`spec.secretRef.name: no Secret "` + name + `" in namespace "kube-federation-system"; ` +
		`the KubeFedCluster is admitted and reports Ready=False (malformed cluster config) until the Secret, with the member's token, exists`}
}

func TestKubeFedClusterSecret(t *testing.T) {
	forbidden := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "member1-creds", errors.New("RBAC denied"))
	}}
	for _, tc := range []struct {
		name         string
		old          *corev1beta1.KubeFedCluster // nil: create
		cluster      *corev1beta1.KubeFedCluster
		secrets      []client.Object
		funcs        *interceptor.Funcs
		wantWarnings admission.Warnings
	}{
		{
			name:    "create with the Secret",
			cluster: kubeFedCluster("member1-creds"),
			secrets: []client.Object{secret(ns, "member1-creds")},
		},
		{
			// A SealedSecret's or ExternalSecret's Secret may come later.
			name:         "create before the Secret exists",
			cluster:      kubeFedCluster("member1-creds"),
			wantWarnings: missingSecret("member1-creds"),
		},
		{
			name:         "create with the Secret in another namespace only",
			cluster:      kubeFedCluster("member1-creds"),
			secrets:      []client.Object{secret("default", "member1-creds")},
			wantWarnings: missingSecret("member1-creds"),
		},
		{
			name:         "create when the Secret cannot be read",
			cluster:      kubeFedCluster("member1-creds"),
			funcs:        &forbidden,
			wantWarnings: admission.Warnings{`spec.secretRef.name was not checked: get Secret kube-federation-system/member1-creds: secrets "member1-creds" is forbidden: RBAC denied`},
		},
		{
			name: "update that keeps a Secret deleted since",
			old:  kubeFedCluster("member1-creds"),
			cluster: func() *corev1beta1.KubeFedCluster {
				c := kubeFedCluster("member1-creds")
				c.Labels = map[string]string{"region": "eu"}
				return c
			}(),
		},
		{
			name: "finalizer removal after the Secret was deleted",
			old: func() *corev1beta1.KubeFedCluster {
				c := kubeFedCluster("member1-creds")
				c.DeletionTimestamp, c.Finalizers = &metav1.Time{}, []string{"example.com/cleanup"}
				return c
			}(),
			cluster: func() *corev1beta1.KubeFedCluster {
				c := kubeFedCluster("member1-creds")
				c.DeletionTimestamp = &metav1.Time{}
				return c
			}(),
		},
		{
			name:    "update to another Secret that exists",
			old:     kubeFedCluster("member1-creds"),
			cluster: kubeFedCluster("member1-rotated"),
			secrets: []client.Object{secret(ns, "member1-rotated")},
		},
		{
			name:         "update to another Secret that does not exist",
			old:          kubeFedCluster("member1-creds"),
			cluster:      kubeFedCluster("member1-rotated"),
			secrets:      []client.Object{secret(ns, "member1-creds")},
			wantWarnings: missingSecret("member1-rotated"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.secrets...)
			if tc.funcs != nil {
				b = b.WithInterceptorFuncs(*tc.funcs)
			}
			v := &KubeFedClusterValidator{Reader: b.Build()}
			var warnings admission.Warnings
			var err error
			if tc.old == nil {
				warnings, err = v.ValidateCreate(context.Background(), tc.cluster)
			} else {
				warnings, err = v.ValidateUpdate(context.Background(), tc.old, tc.cluster)
			}
			if err != nil {
				t.Errorf("denied: %v", err)
			}
			if !slices.Equal(warnings, tc.wantWarnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.wantWarnings)
			}
		})
	}
}
