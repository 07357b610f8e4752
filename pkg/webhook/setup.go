package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// The paths the handlers are served at; the chart's
// ValidatingWebhookConfiguration names the same.
const (
	FederatedTypeConfigPath = "/validate-core-kubefed-io-v1beta1-federatedtypeconfig"
	KubeFedClusterPath      = "/validate-core-kubefed-io-v1beta1-kubefedcluster"
)

// SetupWithManager registers the handlers on the manager's webhook server,
// which the manager then starts, and makes readiness wait for it. Kinds are
// resolved with the manager's dynamic RESTMapper; Secrets are read past the
// cache.
func SetupWithManager(mgr manager.Manager) error {
	server := mgr.GetWebhookServer()
	server.Register(FederatedTypeConfigPath, federatedTypeConfigWebhook(mgr.GetScheme(), mgr.GetRESTMapper()))
	server.Register(KubeFedClusterPath, kubeFedClusterWebhook(mgr.GetScheme(), mgr.GetAPIReader()))
	// A Service routes calls only to ready replicas.
	if err := mgr.AddReadyzCheck("webhook", server.StartedChecker()); err != nil {
		return fmt.Errorf("add the webhook server's readiness check: %w", err)
	}
	return nil
}

func federatedTypeConfigWebhook(scheme *runtime.Scheme, mapper meta.RESTMapper) *admission.Webhook {
	return admission.WithValidator[*corev1beta1.FederatedTypeConfig](scheme, &FederatedTypeConfigValidator{Mapper: mapper})
}

func kubeFedClusterWebhook(scheme *runtime.Scheme, reader client.Reader) *admission.Webhook {
	return admission.WithValidator[*corev1beta1.KubeFedCluster](scheme, &KubeFedClusterValidator{Reader: reader})
}
