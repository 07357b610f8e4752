package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func request(t *testing.T, op admissionv1.Operation, obj, old runtime.Object) admission.Request {
	t.Helper()
	raw := func(o runtime.Object) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: data}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Object: raw(obj), OldObject: raw(old),
	}}
}

// TestWebhookResponses proves what the API server receives through
// controller-runtime's admission plumbing: a denial is an Invalid (422)
// status carrying the message, a warning reaches the client with an
// admitted object, and the raw objects decode into the validators' types.
func TestWebhookResponses(t *testing.T) {
	s := scheme(t)
	typeConfigs := federatedTypeConfigWebhook(s, hostTypes())
	clusters := kubeFedClusterWebhook(s, fake.NewClientBuilder().WithScheme(s).Build())
	unreachable := federatedTypeConfigWebhook(s, discoveryDown{hostTypes()})
	for _, tc := range []struct {
		name        string
		webhook     *admission.Webhook
		req         admission.Request
		wantAllowed bool
		wantMessage string
		wantWarning bool
	}{
		{
			name:        "valid FederatedTypeConfig",
			webhook:     typeConfigs,
			req:         request(t, admissionv1.Create, typeConfig("configmaps"), nil),
			wantAllowed: true,
		},
		{
			name:        "FederatedTypeConfig of a type not served yet",
			webhook:     typeConfigs,
			req:         request(t, admissionv1.Create, typeConfig("configmaps", widgets), nil),
			wantAllowed: true,
			wantWarning: true,
		},
		{
			name:    "FederatedTypeConfig of a served type in another scope",
			webhook: typeConfigs,
			req: request(t, admissionv1.Create, typeConfig("namespaces", func(f *corev1beta1.FederatedTypeConfig) {
				f.Spec.TargetType.Scope = corev1beta1.NamespaceScope
			}), nil),
			wantMessage: `FederatedTypeConfig.core.kubefed.io "namespaces" is invalid: ` +
				`spec.targetType.scope: Invalid value: "Namespaced": v1, Kind=Namespace is Cluster`,
		},
		{
			name:        "update judged on its change",
			webhook:     typeConfigs,
			req:         request(t, admissionv1.Update, typeConfig("configmaps", widgets), typeConfig("configmaps", widgets)),
			wantAllowed: true,
		},
		{
			name:        "discovery down",
			webhook:     unreachable,
			req:         request(t, admissionv1.Create, typeConfig("configmaps"), nil),
			wantAllowed: true,
			wantWarning: true,
		},
		{
			name:        "KubeFedCluster without its Secret yet",
			webhook:     clusters,
			req:         request(t, admissionv1.Create, kubeFedCluster("member1-creds"), nil),
			wantAllowed: true,
			wantWarning: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.webhook.Handle(context.Background(), tc.req)
			if resp.Allowed != tc.wantAllowed {
				t.Fatalf("allowed %v, want %v: %+v", resp.Allowed, tc.wantAllowed, resp.Result)
			}
			if !tc.wantAllowed {
				if resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Reason != metav1.StatusReasonInvalid || resp.Result.Message != tc.wantMessage {
					t.Errorf("result %d %s %q\nwant 422 Invalid %q", resp.Result.Code, resp.Result.Reason, resp.Result.Message, tc.wantMessage)
				}
			}
			if got := len(resp.Warnings) > 0; got != tc.wantWarning {
				t.Errorf("warnings %q", resp.Warnings)
			}
		})
	}
}
