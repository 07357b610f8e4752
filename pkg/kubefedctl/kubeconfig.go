package kubefedctl

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/version"
)

// cluster is one kubeconfig context with the clients kubefedctl needs.
type cluster struct {
	// context is the kubeconfig context name; output names clusters by it.
	context string
	// server is the API server URL the kubeconfig gives for the context.
	server string
	// caData is the PEM bundle the kubeconfig trusts for server, if any.
	caData []byte
	// serverName is the kubeconfig's tls-server-name for the context: the
	// name server's certificate is verified against, if not its host.
	serverName string
	// insecure is set when the kubeconfig skips TLS verification.
	insecure bool
	// proxyURL is the kubeconfig's proxy-url for the context, if any.
	proxyURL string

	kube kubernetes.Interface
	// metadata lists arbitrary resources, to tell whether a namespace
	// holds anything join did not create.
	metadata metadata.Interface
	// fed reads and writes the core.kubefed.io objects and the
	// CustomResourceDefinitions of the host.
	fed client.Client
	// dynamic reads and writes objects of any type: the targets that
	// federate reads and the Federated<T> objects it creates.
	dynamic dynamic.Interface
	// watcher is dynamic without --request-timeout, for watches that last
	// (the dashboard); nil means dynamic.
	watcher dynamic.Interface
	// namespace is the context's default namespace, "" when it sets none.
	namespace string
	// authenticate sends one request to the cluster with token as the only
	// credential; it fails with an Unauthorized error when the cluster
	// does not accept the token.
	authenticate func(ctx context.Context, token []byte) error
}

// clusterConnector resolves kubeconfig contexts into clusters.
type clusterConnector interface {
	// currentContext returns the kubeconfig's current context.
	currentContext() (string, error)
	// connect returns the cluster of a context; it sends no request.
	connect(contextName string) (*cluster, error)
}

// kubeconfigConnector reads contexts with kubectl's loading rules:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config.
type kubeconfigConnector struct {
	g        *globalOptions
	warnings io.Writer

	loadOnce sync.Once
	rules    *clientcmd.ClientConfigLoadingRules
	raw      *clientcmdapi.Config
	loadErr  error

	mu       sync.Mutex
	clusters map[string]*cluster
}

func newKubeconfigConnector(g *globalOptions, streams IOStreams) clusterConnector {
	return &kubeconfigConnector{g: g, warnings: streams.ErrOut, clusters: map[string]*cluster{}}
}

func (k *kubeconfigConnector) load() (*clientcmdapi.Config, error) {
	k.loadOnce.Do(func() {
		k.rules = clientcmd.NewDefaultClientConfigLoadingRules()
		k.rules.ExplicitPath = k.g.kubeconfig
		raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(k.rules, &clientcmd.ConfigOverrides{}).RawConfig()
		if err != nil {
			k.loadErr = fmt.Errorf("load kubeconfig: %w", err)
			return
		}
		k.raw = &raw
	})
	return k.raw, k.loadErr
}

func (k *kubeconfigConnector) currentContext() (string, error) {
	raw, err := k.load()
	if err != nil {
		return "", err
	}
	if raw.CurrentContext == "" {
		return "", fmt.Errorf("the kubeconfig has no current context; pass --host-cluster-context")
	}
	return raw.CurrentContext, nil
}

func (k *kubeconfigConnector) connect(contextName string) (*cluster, error) {
	raw, err := k.load()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.clusters[contextName]; ok {
		return c, nil
	}
	kctx, ok := raw.Contexts[contextName]
	if !ok {
		return nil, fmt.Errorf("context %q not found in the kubeconfig", contextName)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, &clientcmd.ConfigOverrides{}, k.rules).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	cfg.Timeout = k.g.requestTimeout
	cfg.UserAgent = "kubefedctl/" + version.Version
	// Listing every resource type of a namespace before deleting it takes
	// dozens of requests; client-go's default 5 QPS would stall on them.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.WarningHandler = rest.NewWarningWriter(k.warnings, rest.WarningWriterOptions{Deduplicate: true})

	tls := rest.CopyConfig(cfg)
	if err := rest.LoadTLSFiles(tls); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: read TLS files: %w", contextName, err)
	}
	c := &cluster{
		context:    contextName,
		server:     cfg.Host,
		caData:     tls.CAData,
		serverName: cfg.ServerName,
		insecure:   cfg.Insecure,
		namespace:  kctx.Namespace,
	}
	if kc, ok := raw.Clusters[kctx.Cluster]; ok {
		c.proxyURL = kc.ProxyURL
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	// The metadata client only looks for leftovers in a namespace; the
	// deprecation warnings of every resource type it lists are noise there.
	metaCfg := rest.CopyConfig(cfg)
	metaCfg.WarningHandler = rest.NoWarnings{}
	if c.metadata, err = metadata.NewForConfig(metaCfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	// A request timeout would cut every watch short.
	watchCfg := rest.CopyConfig(cfg)
	watchCfg.Timeout = 0
	if c.watcher, err = dynamic.NewForConfig(watchCfg); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	// Errors reach kubefedctl as return values; the client's own log would
	// only make controller-runtime complain that no logger was set.
	quiet := logr.New(ctrllog.NullLogSink{})
	if c.fed, err = client.New(cfg, client.Options{Scheme: newScheme(), Log: quiet}); err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", contextName, err)
	}
	c.authenticate = func(ctx context.Context, token []byte) error {
		return authenticateWith(ctx, cfg, token)
	}
	k.clusters[contextName] = c
	return c, nil
}

// authenticateWith asks the server who the bearer of token is, trusting the
// server as cfg does but sending no other credential. The API server
// authenticates a request before it looks at what it asks for, so any
// answer but 401 Unauthorized proves the token authenticated: being
// forbidden to ask, and a server without the v1 SelfSubjectReview API
// (Kubernetes before 1.28) answering 404 or 405, too.
func authenticateWith(ctx context.Context, cfg *rest.Config, token []byte) error {
	tc := rest.AnonymousClientConfig(cfg)
	tc.BearerToken = string(token)
	kube, err := kubernetes.NewForConfig(tc)
	if err != nil {
		return err
	}
	_, err = kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return nil
	}
	return err
}

// newScheme knows the built-in types, CustomResourceDefinitions and the
// core.kubefed.io API.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// These only fail on a programming error (a type registered twice).
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
