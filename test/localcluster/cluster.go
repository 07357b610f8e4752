package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	adminUser    = "admin"
	adminUID     = "localcluster-admin"
	mastersGroup = "system:masters"

	// serviceCIDR only feeds ClusterIP allocation: nothing routes to it.
	serviceCIDR = "10.0.0.0/24"
	// serviceAccountIssuer is the in-cluster default, so tokens look like
	// those of a real cluster.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

	// etcdQuotaBytes caps the database far above what tests write, while
	// keeping a runaway test from filling the disk.
	etcdQuotaBytes = 512 << 20

	// probeTimeout bounds one readiness probe, so a hung server costs one
	// probe rather than the whole start timeout.
	probeTimeout = 2 * time.Second
	// portRetries is how often a cluster is restarted on fresh ports when
	// another process took one of its ports between allocation and bind.
	portRetries = 3
)

// kubernetesServiceIP is the first address of serviceCIDR, which the
// apiserver gives the "kubernetes" Service.
var kubernetesServiceIP = net.IPv4(10, 0, 0, 1)

// controllers are the kube-controller-manager controllers a federation
// test relies on. Controllers that need nodes, cloud providers or cluster
// signing certificates are left out, as is everything else, to keep memory
// and log noise down.
var controllers = []string{
	"serviceaccount-token-controller",
	"serviceaccount-controller",
	"namespace-controller",
	"garbage-collector-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"deployment-controller",
	"replicaset-controller",
	"job-controller",
}

// nodeControllers are added for a cluster with simulated nodes: the node
// lifecycle controller takes the not-ready taint the apiserver puts on a
// new Node off once kwok reports it Ready (and puts it back, with
// unreachable, if kwok stops); the workload controllers roll out what
// federated workloads need. The taint eviction controller stays off, so a
// stopped member apiserver never evicts pods.
var nodeControllers = []string{
	"node-lifecycle-controller",
	"daemonset-controller",
	"statefulset-controller",
	"cronjob-controller",
	"endpointslice-controller",
}

// podCIDR is the pool kwok gives pod IPs from; nothing routes to it.
const podCIDR = "10.244.0.0/16"

// errPortInUse marks a start that failed because a port we picked was
// taken by someone else in the meantime.
var errPortInUse = errors.New("a port was taken by another process")

// Cluster is one Kubernetes control plane of a federation.
type Cluster struct {
	// Name is the cluster's name, also its kubeconfig context.
	Name string
	// Context is the kubeconfig context for this cluster.
	Context string
	// Server is the kube-apiserver URL, https://127.0.0.1:PORT.
	Server string
	// CAData is the PEM CA bundle that verifies Server.
	CAData []byte
	// Token is a bearer token in group system:masters; never log it.
	Token string
	// Dir holds this cluster's data, certificates, pid files and logs.
	Dir string

	ports     clusterPorts
	nodes     NodeOptions
	binDir    string
	caPath    string
	detached  bool
	extraArgs map[Component][]string

	mu    sync.Mutex
	procs map[Component]*process
}

// RESTConfig returns an admin client configuration that verifies the
// apiserver against the federation CA.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:        c.Server,
		BearerToken: c.Token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: append([]byte(nil), c.CAData...),
		},
		// Tests create objects in bursts; client-go's default of 5 QPS
		// would make them wait on the client instead of the server.
		QPS:   50,
		Burst: 100,
	}
}

// LogPath returns the log file of one of the cluster's components.
func (c *Cluster) LogPath(comp Component) string {
	return filepath.Join(c.Dir, string(comp)+".log")
}

func (c *Cluster) pidPath(comp Component) string {
	return filepath.Join(c.Dir, string(comp)+".pid")
}

// PIDs returns the pid of each component that is running now.
func (c *Cluster) PIDs() map[Component]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[Component]int{}
	for comp, p := range c.procs {
		if p.running() {
			out[comp] = p.rec.PID
		}
	}
	return out
}

// StopAPIServer stops only this cluster's kube-apiserver, leaving etcd and
// kube-controller-manager running, to simulate an unreachable member.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.procs[APIServer]
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.stop(); err != nil {
		return fmt.Errorf("cluster %s: stopping kube-apiserver: %w", c.Name, err)
	}
	c.mu.Lock()
	delete(c.procs, APIServer)
	c.mu.Unlock()
	return nil
}

// PauseAPIServer stops this cluster's kube-apiserver with SIGSTOP: its
// port still accepts connections, but nothing answers them, as with a hung
// or overloaded member. ResumeAPIServer lets it go on.
func (c *Cluster) PauseAPIServer() error { return c.signalAPIServer(syscall.SIGSTOP) }

// ResumeAPIServer continues a kube-apiserver that PauseAPIServer stopped.
func (c *Cluster) ResumeAPIServer() error { return c.signalAPIServer(syscall.SIGCONT) }

func (c *Cluster) signalAPIServer(sig syscall.Signal) error {
	c.mu.Lock()
	p := c.procs[APIServer]
	c.mu.Unlock()
	if p == nil || !p.running() {
		return fmt.Errorf("cluster %s: kube-apiserver is not running", c.Name)
	}
	if err := p.signal(sig); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return nil
}

// StartAPIServer starts this cluster's kube-apiserver again on the same
// port and waits until /readyz succeeds; it is a no-op if it is running.
// A running kube-controller-manager (and kube-scheduler and kwok) is
// restarted with it, as on a control plane node that comes back: left
// alone, their informers would reconnect only after their backoff (up to a
// minute after a long outage), and until then the controller manager would
// issue tokens for deleted ServiceAccounts and leave namespaces
// terminating, which is not what the tests are about.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p := c.procs[APIServer]
	c.mu.Unlock()
	if p != nil && p.running() {
		return nil
	}
	if err := c.startComponent(ctx, APIServer); err != nil {
		return err
	}
	for _, comp := range c.components()[2:] {
		c.mu.Lock()
		dep := c.procs[comp]
		c.mu.Unlock()
		if dep == nil || !dep.running() {
			continue
		}
		if err := dep.stop(); err != nil {
			return fmt.Errorf("cluster %s: restarting %s: %w", c.Name, comp, err)
		}
		if err := c.startComponent(ctx, comp); err != nil {
			return err
		}
	}
	return nil
}

// components are the cluster's components in start order: the scheduler
// and kwok only with nodes.
func (c *Cluster) components() []Component {
	if c.nodes.Count > 0 {
		return components
	}
	return components[:3]
}

func (c *Cluster) componentArgs(comp Component) []string {
	loop := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	var args []string
	switch comp {
	case Etcd:
		client := "http://" + loop(c.ports.EtcdClient)
		peer := "http://" + loop(c.ports.EtcdPeer)
		args = []string{
			"--name=" + c.Name,
			"--data-dir=" + filepath.Join(c.Dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + c.Name + "=" + peer,
			"--initial-cluster-state=new",
			"--initial-cluster-token=localcluster-" + c.Name,
			"--quota-backend-bytes=" + strconv.Itoa(etcdQuotaBytes),
			// Fewer raft entries kept in memory between snapshots.
			"--snapshot-count=5000",
			// Test data is disposable; fsync dominates etcd latency on
			// shared CI disks.
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}
	case APIServer:
		args = []string{
			"--etcd-servers=http://" + loop(c.ports.EtcdClient),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.APIServer),
			"--tls-cert-file=" + filepath.Join(c.Dir, "apiserver.crt"),
			"--tls-private-key-file=" + filepath.Join(c.Dir, "apiserver.key"),
			"--client-ca-file=" + c.caPath,
			"--token-auth-file=" + filepath.Join(c.Dir, "tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-cluster-ip-range=" + serviceCIDR,
			"--endpoint-reconciler-type=none",
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + filepath.Join(c.Dir, "sa.pub"),
			"--service-account-signing-key-file=" + filepath.Join(c.Dir, "sa.key"),
			// APF runs its own goroutines and caches; one test client per
			// cluster does not need fair queuing.
			"--enable-priority-and-fairness=false",
			"--profiling=false",
			// On SIGTERM, close open watches after this grace period
			// instead of waiting out the 60s request timeout for them.
			"--shutdown-watch-termination-grace-period=1s",
		}
	case ControllerManager:
		args = []string{
			"--kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.ControllerManager),
			"--tls-cert-file=" + filepath.Join(c.Dir, "controller-manager.crt"),
			"--tls-private-key-file=" + filepath.Join(c.Dir, "controller-manager.key"),
			"--service-account-private-key-file=" + filepath.Join(c.Dir, "sa.key"),
			"--root-ca-file=" + c.caPath,
			"--use-service-account-credentials=false",
			"--leader-elect=false",
			"--controllers=" + strings.Join(c.controllers(), ","),
			"--cluster-name=" + c.Name,
			// The namespace controller and the garbage collector issue
			// many requests per deleted namespace; the default of 20 QPS
			// makes deletion in tests needlessly slow.
			"--kube-api-qps=100",
			"--kube-api-burst=200",
			"--profiling=false",
		}
	case Scheduler:
		args = []string{
			"--kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.Scheduler),
			"--tls-cert-file=" + filepath.Join(c.Dir, "scheduler.crt"),
			"--tls-private-key-file=" + filepath.Join(c.Dir, "scheduler.key"),
			"--leader-elect=false",
			"--profiling=false",
		}
	case Kwok:
		args = []string{
			"--kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
			"--config=" + filepath.Join(c.binDir, "kwok-stages.yaml"),
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--cidr=" + podCIDR,
			"--server-address=" + loop(c.ports.Kwok),
		}
	}
	return append(args, c.extraArgs[comp]...)
}

// controllers are the kube-controller-manager controllers this cluster runs.
func (c *Cluster) controllers() []string {
	if c.nodes.Count > 0 {
		return append(append([]string(nil), controllers...), nodeControllers...)
	}
	return controllers
}

// startComponent spawns one component and waits until it is ready.
func (c *Cluster) startComponent(ctx context.Context, comp Component) error {
	p, err := spawn(spawnSpec{
		component: comp,
		binary:    filepath.Join(c.binDir, string(comp)),
		args:      c.componentArgs(comp),
		dir:       c.Dir,
		logPath:   c.LogPath(comp),
		pidPath:   c.pidPath(comp),
		detached:  c.detached,
		// kwok reads $KWOK_WORKDIR/kwok.yaml (else ~/.kwok/kwok.yaml) first.
		env: map[Component][]string{Kwok: {"KWOK_WORKDIR=" + c.Dir}}[comp],
	})
	if err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	c.mu.Lock()
	c.procs[comp] = p
	c.mu.Unlock()

	switch comp {
	case Etcd:
		return c.waitUntil(ctx, p, "etcd /health", c.etcdHealthy)
	case APIServer:
		return c.waitUntil(ctx, p, "kube-apiserver /readyz", c.apiServerReady)
	case ControllerManager:
		// The ServiceAccount controller creates "default" in every
		// namespace, so its existence proves the controller manager is
		// connected and running controllers.
		return c.waitUntil(ctx, p, `the "default" ServiceAccount`, c.defaultServiceAccountExists)
	case Scheduler:
		return c.waitUntil(ctx, p, "kube-scheduler /readyz", c.schedulerReady)
	case Kwok:
		if err := c.waitUntil(ctx, p, "kwok /healthz", c.kwokHealthy); err != nil {
			return err
		}
		if err := c.ensureNodes(ctx); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		return c.waitUntil(ctx, p, fmt.Sprintf("%d nodes Ready and schedulable", c.nodes.Count), c.nodesReady)
	}
	return nil
}

// waitUntil polls check until it succeeds, the process dies or ctx ends.
func (c *Cluster) waitUntil(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		last := check(probeCtx)
		cancel()
		if last == nil {
			return nil
		}
		if !p.running() {
			err := fmt.Errorf("exited while waiting for %s", what)
			// Only this process's own lines: an earlier attempt's bind
			// failure, still in the log, is not this one's.
			if strings.Contains(p.ownLog(), "address already in use") {
				err = fmt.Errorf("%w: %w", err, errPortInUse)
			}
			return p.failure(c.Name, err)
		}
		select {
		case <-ctx.Done():
			return p.failure(c.Name, fmt.Errorf("waiting for %s: %w (last probe: %v)", what, ctx.Err(), last))
		case <-p.exited():
		case <-ticker.C:
		}
	}
}

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	return probeHTTP(ctx, http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(c.ports.EtcdClient)+"/health",
		func(body string) bool { return strings.Contains(body, `"health":"true"`) })
}

// probeHTTP GETs url and succeeds on a 200 whose body healthy accepts.
func probeHTTP(ctx context.Context, client *http.Client, url string, healthy func(body string) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	body := strings.TrimSpace(string(raw))
	if resp.StatusCode != http.StatusOK || !healthy(body) {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}

func (c *Cluster) probeClient() (*kubernetes.Clientset, error) {
	cfg := c.RESTConfig()
	cfg.Timeout = probeTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building client for cluster %s: %w", c.Name, err)
	}
	return cs, nil
}

// ReadyzError returns nil if the apiserver answers /readyz with "ok", and
// the reason otherwise.
func (c *Cluster) ReadyzError(ctx context.Context) error {
	return c.apiServerReady(ctx)
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	cs, err := c.probeClient()
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w", err)
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("/readyz: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *Cluster) defaultServiceAccountExists(ctx context.Context) error {
	cs, err := c.probeClient()
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return errors.New(`ServiceAccount default/default does not exist yet`)
	}
	return err
}

// start brings up etcd, kube-apiserver and kube-controller-manager in
// order, retrying on fresh ports if another process stole one.
func (c *Cluster) start(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := c.startOnce(ctx)
		if err == nil {
			return nil
		}
		if stopErr := c.stop(); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		if !errors.Is(err, errPortInUse) || attempt >= portRetries || ctx.Err() != nil {
			return err
		}
		ports, perr := allocatePorts(1)
		if perr != nil {
			return errors.Join(err, perr)
		}
		// etcd recorded its peer URL in the data dir on first boot.
		if rmErr := os.RemoveAll(filepath.Join(c.Dir, "etcd")); rmErr != nil {
			return errors.Join(err, fmt.Errorf("clearing etcd data for a retry: %w", rmErr))
		}
		c.setPorts(ports[0])
		// The controller manager must follow the apiserver to its new
		// port: with the old kubeconfig it dialled a port nobody served.
		if werr := c.writeComponentKubeconfig(); werr != nil {
			return errors.Join(err, werr)
		}
	}
}

func (c *Cluster) startOnce(ctx context.Context) error {
	for _, comp := range c.components() {
		if err := c.startComponent(ctx, comp); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) setPorts(p clusterPorts) {
	c.ports = p
	c.Server = "https://127.0.0.1:" + strconv.Itoa(p.APIServer)
}

// stop stops the cluster's components in reverse start order, so the
// controller manager does not log a burst of errors against a dead server.
func (c *Cluster) stop() error {
	var errs []error
	for i := len(components) - 1; i >= 0; i-- {
		comp := components[i]
		c.mu.Lock()
		p := c.procs[comp]
		c.mu.Unlock()
		if p == nil {
			continue
		}
		if err := p.stop(); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: stopping %s: %w", c.Name, comp, err))
			continue
		}
		c.mu.Lock()
		delete(c.procs, comp)
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}
