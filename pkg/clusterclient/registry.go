package clusterclient

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/metrics"
)

// Registry caches the clients of every member cluster, keyed by the
// KubeFedCluster's name, and rebuilds them when the cluster's spec or its
// Secret changes. It is safe for concurrent use.
type Registry struct {
	opts ConfigOptions

	mu      sync.RWMutex
	entries map[string]*Clients
	// generation numbers every build, so that holders of Clients can tell a
	// rebuild from the set they hold.
	generation uint64
	// listeners hear of clusters whose clients were rebuilt or dropped.
	listeners []func(cluster string)
}

// OnChange makes f hear of every cluster whose clients are rebuilt (a
// rotated token, a new endpoint) or dropped, on a goroutine of its own,
// after the change: holders of the old clients, such as informers, learn
// that they are stale without waiting for a readiness change, which a
// member that stayed reachable never has.
func (r *Registry) OnChange(f func(cluster string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, f)
}

// changedLocked tells the listeners of a change to name's clients.
func (r *Registry) changedLocked(name string) {
	for _, f := range r.listeners {
		go f(name)
	}
}

// NewRegistry returns an empty Registry whose clients use o.
func NewRegistry(o ConfigOptions) *Registry {
	return &Registry{opts: o.withDefaults(), entries: map[string]*Clients{}}
}

// Ensure returns the clients of cluster, built from cluster and secret (nil
// when the referenced Secret does not exist). The cached clients are
// returned while neither has changed in a way that affects the connection;
// otherwise new ones replace them. When the configuration is malformed the
// cached clients are dropped, so that nobody keeps using credentials the
// user has withdrawn, and a *ConfigError is returned.
func (r *Registry) Ensure(cluster *fedv1b1.KubeFedCluster, secret *corev1.Secret) (*Clients, error) {
	sum := connectionHash(cluster, secret)

	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.entries[cluster.Name]; ok && c.hash == sum {
		return c, nil
	}

	start := time.Now()
	c, err := r.build(cluster, secret, sum)
	if err != nil {
		r.removeLocked(cluster.Name)
		return nil, err
	}
	metrics.ClusterClientConnectionDuration.Observe(time.Since(start).Seconds())
	r.removeLocked(cluster.Name)
	r.entries[cluster.Name] = c
	r.changedLocked(cluster.Name)
	return c, nil
}

func (r *Registry) build(cluster *fedv1b1.KubeFedCluster, secret *corev1.Secret, sum [sha256.Size]byte) (*Clients, error) {
	cfg, err := RESTConfig(cluster, secret, r.opts)
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client of cluster %s: %w", cluster.Name, err)
	}
	r.generation++
	return &Clients{
		name:       cluster.Name,
		config:     cfg,
		httpClient: httpClient,
		hash:       sum,
		generation: r.generation,
	}, nil
}

// SetLocal makes cfg the named cluster's clients, for the agent of a
// Pull-mode member, which reaches its own cluster with the credentials it
// runs with rather than a KubeFedCluster's Secret. The registry's rate
// limits, timeout and user agent apply.
func (r *Registry) SetLocal(name string, cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.Timeout = r.opts.QPS, r.opts.Burst, r.opts.Timeout
	if r.opts.UserAgent != "" {
		cfg.UserAgent = r.opts.UserAgent
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client of cluster %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(name)
	r.generation++
	c := &Clients{name: name, config: cfg, httpClient: httpClient, generation: r.generation}
	r.entries[name] = c
	r.changedLocked(name)
	return c, nil
}

// Get returns the clients last built for the named cluster, if any.
func (r *Registry) Get(name string) (*Clients, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.entries[name]
	return c, ok
}

// Names returns the names of the clusters that have clients, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Remove drops the named cluster's clients. Holders of them may still use
// them; their idle connections are closed.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(name)
}

func (r *Registry) removeLocked(name string) {
	if c, ok := r.entries[name]; ok {
		delete(r.entries, name)
		utilnet.CloseIdleConnectionsFor(c.httpClient.Transport)
		r.changedLocked(name)
	}
}

// connectionHash digests everything RESTConfig reads, so that a change to
// any of it, and only that, rebuilds the clients. The token enters the digest
// but never leaves this function.
func connectionHash(cluster *fedv1b1.KubeFedCluster, secret *corev1.Secret) [sha256.Size]byte {
	h := sha256.New()
	field := func(h hash.Hash, b []byte) {
		// Length-prefixed, so that moving bytes between fields changes the sum.
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	spec := cluster.Spec
	field(h, []byte(cluster.Namespace))
	field(h, []byte(spec.APIEndpoint))
	field(h, spec.CABundle)
	field(h, []byte(spec.SecretRef.Name))
	field(h, []byte(spec.ProxyURL))
	for _, v := range spec.DisabledTLSValidations {
		field(h, []byte(v))
	}
	if secret == nil {
		field(h, []byte("no secret"))
	} else {
		field(h, []byte("secret"))
		field(h, secret.Data[TokenKey])
		field(h, secret.Data[CAKey])
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// Clients reach one member cluster with one version of its configuration.
// The typed, dynamic and discovery clients share one HTTP client and are
// built on first use.
type Clients struct {
	name       string
	config     *rest.Config
	httpClient *http.Client
	hash       [sha256.Size]byte
	generation uint64

	kubeOnce sync.Once
	kube     kubernetes.Interface
	kubeErr  error

	dynamicOnce sync.Once
	dynamic     dynamic.Interface
	dynamicErr  error

	discoveryOnce sync.Once
	discovery     discovery.DiscoveryInterface
	discoveryErr  error
}

// ClusterName is the name of the KubeFedCluster the clients reach.
func (c *Clients) ClusterName() string { return c.name }

// Generation increases with every build in a Registry; a holder whose
// Generation differs from that of the Registry's Get holds stale clients.
func (c *Clients) Generation() uint64 { return c.generation }

// Host is the member's kube-apiserver URL.
func (c *Clients) Host() string { return c.config.Host }

// Config returns a copy of the rest.Config the clients were built from.
func (c *Clients) Config() *rest.Config { return rest.CopyConfig(c.config) }

// HTTPClient returns the authenticated HTTP client shared by all clients.
// It is not rate limited, which suits health probes that must not queue
// behind other controllers' requests.
func (c *Clients) HTTPClient() *http.Client { return c.httpClient }

// Kubernetes returns the typed clientset.
func (c *Clients) Kubernetes() (kubernetes.Interface, error) {
	c.kubeOnce.Do(func() {
		c.kube, c.kubeErr = kubernetes.NewForConfigAndClient(c.config, c.httpClient)
		if c.kubeErr != nil {
			c.kubeErr = fmt.Errorf("building the clientset of cluster %s: %w", c.name, c.kubeErr)
		}
	})
	return c.kube, c.kubeErr
}

// Dynamic returns the dynamic client.
func (c *Clients) Dynamic() (dynamic.Interface, error) {
	c.dynamicOnce.Do(func() {
		c.dynamic, c.dynamicErr = dynamic.NewForConfigAndClient(c.config, c.httpClient)
		if c.dynamicErr != nil {
			c.dynamicErr = fmt.Errorf("building the dynamic client of cluster %s: %w", c.name, c.dynamicErr)
		}
	})
	return c.dynamic, c.dynamicErr
}

// Discovery returns an uncached discovery client; wrap it in a cache where
// discovery results are read often.
func (c *Clients) Discovery() (discovery.DiscoveryInterface, error) {
	c.discoveryOnce.Do(func() {
		d, err := discovery.NewDiscoveryClientForConfigAndClient(c.config, c.httpClient)
		if err != nil {
			c.discoveryErr = fmt.Errorf("building the discovery client of cluster %s: %w", c.name, err)
			return
		}
		c.discovery = d
	})
	return c.discovery, c.discoveryErr
}
