package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// modulePath identifies this repository's go.mod when looking for bin/.
const modulePath = "github.com/kubefed-io/kubefed"

// BinDirEnv overrides where the cluster binaries are looked up.
const BinDirEnv = "KUBEFED_BIN_DIR"

// DefaultStartTimeout bounds Start when Options.StartTimeout is zero; a
// cold start of three clusters on two cores takes well under a minute.
const DefaultStartTimeout = 3 * time.Minute

// Options configures Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. The
	// default is $KUBEFED_BIN_DIR, else bin/ at the root of this module,
	// found by walking up from the working directory.
	BinDir string
	// WorkDir receives data directories, certificates, logs, pid files and
	// the kubeconfig; it is created if missing.
	WorkDir string
	// Clusters names the clusters; the first is the host. Each name must be
	// a DNS label, as it becomes a kubeconfig context and a directory.
	Clusters []string
	// Detach lets the processes outlive the caller (for the CLI); otherwise
	// they are killed when the calling process dies.
	Detach bool
	// Out receives progress messages; nil discards them.
	Out io.Writer
	// StartTimeout bounds the whole start; zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// ExtraArgs are appended to a component's command line; a repeated
	// flag overrides the default because the last occurrence wins.
	ExtraArgs map[Component][]string
	// Nodes are the simulated nodes of every cluster but the host. With
	// Count > 0 a member also runs kube-scheduler and kwok, and pods are
	// scheduled and become Ready as on a real cluster.
	Nodes NodeOptions
	// MemberNodes replaces Nodes for the members it names, for members of
	// different sizes; a name that is not a member is an error.
	MemberNodes map[string]NodeOptions
}

// nodesOf are the node options of member name, before defaults.
func (o Options) nodesOf(name string) NodeOptions {
	if n, ok := o.MemberNodes[name]; ok {
		return n
	}
	return o.Nodes
}

// anyNodes tells whether some member has nodes, and so needs the scheduler
// and kwok binaries.
func (o Options) anyNodes() bool {
	for _, name := range o.Clusters[1:] {
		if o.nodesOf(name).Count > 0 {
			return true
		}
	}
	return false
}

// NodeOptions describes the simulated nodes of a member cluster.
type NodeOptions struct {
	// Count is the number of nodes; 0 runs no scheduler and no kwok.
	Count int `json:"count,omitempty"`
	// CPU, Memory and Pods are each node's capacity; defaults 2, 4Gi, 110.
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	Pods   int    `json:"pods,omitempty"`
	// Region is the nodes' topology.kubernetes.io/region label; the
	// default is "region-<cluster>".
	Region string `json:"region,omitempty"`
	// Zones are spread over the nodes (topology.kubernetes.io/zone); the
	// default is "<region>-a" and "<region>-b".
	Zones []string `json:"zones,omitempty"`
}

// forCluster fills in the defaults for cluster name.
func (n NodeOptions) forCluster(name string) NodeOptions {
	if n.Count <= 0 {
		return NodeOptions{}
	}
	if n.CPU == "" {
		n.CPU = "2"
	}
	if n.Memory == "" {
		n.Memory = "4Gi"
	}
	if n.Pods <= 0 {
		n.Pods = 110
	}
	if n.Region == "" {
		n.Region = "region-" + name
	}
	if len(n.Zones) == 0 {
		n.Zones = []string{n.Region + "-a", n.Region + "-b"}
	}
	return n
}

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	if o.WorkDir == "" {
		return o, errors.New("localcluster: Options.WorkDir is required")
	}
	dir, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return o, fmt.Errorf("localcluster: resolving work dir %s: %w", o.WorkDir, err)
	}
	o.WorkDir = dir
	if len(o.Clusters) == 0 {
		return o, errors.New("localcluster: Options.Clusters needs at least the host cluster")
	}
	seen := map[string]bool{}
	for _, name := range o.Clusters {
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return o, fmt.Errorf("localcluster: invalid cluster name %q: %s", name, strings.Join(errs, "; "))
		}
		if name == pkiDirName {
			return o, fmt.Errorf("localcluster: cluster name %q is reserved", name)
		}
		if seen[name] {
			return o, fmt.Errorf("localcluster: duplicate cluster name %q", name)
		}
		seen[name] = true
	}
	if o.BinDir == "" {
		o.BinDir, err = DefaultBinDir()
		if err != nil {
			return o, err
		}
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("localcluster: resolving bin dir: %w", err)
	}
	for name := range o.MemberNodes {
		if !seen[name] || name == o.Clusters[0] {
			return o, fmt.Errorf("localcluster: Options.MemberNodes names %q, which is not a member cluster", name)
		}
	}
	for _, name := range o.Clusters[1:] {
		n := o.nodesOf(name)
		if n.Count < 0 {
			return o, fmt.Errorf("localcluster: cluster %s: node count must not be negative, got %d", name, n.Count)
		}
		for _, q := range []string{n.CPU, n.Memory} {
			if _, err := resource.ParseQuantity(q); q != "" && err != nil {
				return o, fmt.Errorf("localcluster: cluster %s: node capacity %q: %w", name, q, err)
			}
		}
	}
	if err := checkBinaries(o.BinDir, o.anyNodes()); err != nil {
		return o, err
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	// Clusters start in parallel and all report progress.
	o.Out = &lockedWriter{w: o.Out}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	return o, nil
}

// DefaultBinDir returns $KUBEFED_BIN_DIR, or bin/ at the root of the
// kubefed module containing the working directory.
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localcluster: finding bin dir: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		// Nested modules (hack/tools/*) have their own go.mod, so match on
		// the module path rather than stopping at the first go.mod.
		if isKubefedModule(filepath.Join(dir, "go.mod")) {
			return filepath.Join(dir, "bin"), nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return "", fmt.Errorf("localcluster: no go.mod of module %s above %s; set Options.BinDir or $%s", modulePath, wd, BinDirEnv)
}

func isKubefedModule(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}

// checkBinaries fails early, with the fix, instead of letting a missing
// binary surface as a confusing exec error in one of several goroutines.
func checkBinaries(binDir string, nodes bool) error {
	var missing []string
	need := components[:3]
	if nodes {
		need = components
	}
	for _, c := range need {
		fi, err := os.Stat(filepath.Join(binDir, string(c)))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, string(c))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("localcluster: %s missing or not executable in %s; build them with hack/build-cluster-tools.sh or point $%s elsewhere",
			strings.Join(missing, ", "), binDir, BinDirEnv)
	}
	return nil
}

// clusterPorts are the loopback TCP ports one cluster listens on.
type clusterPorts struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler,omitempty"`
	Kwok              int `json:"kwok,omitempty"`
}

// FreeLoopbackPorts returns n distinct loopback ports that were free a
// moment ago, for processes that take a port on their command line. They
// come from below the kernel's ephemeral range: a port the kernel picked
// for us (":0") is also one it picks for any client's outgoing connection,
// and on a busy machine such a connection took a cluster's port between
// the pick and the apiserver's bind. All listeners are held until every
// port is known, so the ports of one call never collide with each other;
// another process can still take one before our child binds it, which
// Start handles by retrying with new ports.
func FreeLoopbackPorts(n int) ([]int, error) {
	lo, hi := listenPortRange()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0"
		if hi > lo && tries < 50*n {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo+1))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue // taken: try another
			}
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// listenPortRange is where FreeLoopbackPorts looks: from 10000 to just
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range). It is
// empty (hi < lo) if that range starts too low to leave room, and then the
// kernel picks.
func listenPortRange() (lo, hi int) {
	lo, hi = 10000, 32767
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	if f := strings.Fields(string(data)); len(f) == 2 {
		if first, err := strconv.Atoi(f[0]); err == nil {
			hi = first - 1
		}
	}
	if hi-lo < 1000 {
		return lo, lo - 1
	}
	return lo, hi
}

// allocatePorts returns a fresh, mutually distinct port set per cluster.
func allocatePorts(clusters int) ([]clusterPorts, error) {
	const perCluster = 6
	ports, err := FreeLoopbackPorts(perCluster * clusters)
	if err != nil {
		return nil, err
	}
	out := make([]clusterPorts, clusters)
	for i := range out {
		p := ports[perCluster*i:]
		out[i] = clusterPorts{EtcdClient: p[0], EtcdPeer: p[1], APIServer: p[2], ControllerManager: p[3], Scheduler: p[4], Kwok: p[5]}
	}
	return out, nil
}

// lockedWriter serialises writes so that callers may pass any io.Writer,
// such as a bytes.Buffer, as Options.Out.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
