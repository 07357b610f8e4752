package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

const (
	// stateFileName records the federation layout for Load and the CLI's
	// status command; it is written only once every cluster is up.
	stateFileName = "localcluster.json"
	// markerFileName marks WorkDir as ours, so that a later Start may wipe
	// it; it is written first so even a start that died half way counts.
	markerFileName = ".localcluster"
	lockFileName   = ".lock"
	pkiDirName     = "pki"
	kubeconfigName = "kubeconfig"
	stateVersion   = 1
)

// Federation is a host cluster and its member clusters.
type Federation struct {
	// Clusters are in the order of Options.Clusters; the first is the host.
	Clusters []*Cluster
	// KubeconfigPath has one context per cluster, named after it, with
	// the host as current context.
	KubeconfigPath string
	// WorkDir is the directory everything lives in.
	WorkDir string

	stopOnce sync.Once
	stopErr  error
}

// state is the on-disk description of a federation.
type state struct {
	Version   int                    `json:"version"`
	Detached  bool                   `json:"detached"`
	BinDir    string                 `json:"binDir"`
	ExtraArgs map[Component][]string `json:"extraArgs,omitempty"`
	Clusters  []clusterState         `json:"clusters"`
}

type clusterState struct {
	Name  string       `json:"name"`
	Ports clusterPorts `json:"ports"`
	Nodes NodeOptions  `json:"nodes,omitzero"`
}

// Start launches every cluster in parallel and returns once each
// kube-apiserver is ready and each kube-controller-manager has created the
// "default" ServiceAccount. On any error everything it started is stopped.
// ctx bounds the start only: cancelling it later does not stop the clusters.
func Start(ctx context.Context, o Options) (_ *Federation, retErr error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()

	unlock, err := prepareWorkDir(o.WorkDir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	f, err := newFederation(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			if stopErr := f.Stop(); stopErr != nil {
				retErr = errors.Join(retErr, fmt.Errorf("cleaning up after the failed start: %w", stopErr))
			}
		}
	}()

	errs := make([]error, len(f.Clusters))
	var wg sync.WaitGroup
	for i, c := range f.Clusters {
		wg.Go(func() {
			t0 := time.Now()
			fmt.Fprintf(o.Out, "localcluster: starting cluster %s (logs in %s)\n", c.Name, c.Dir)
			if errs[i] = c.start(ctx); errs[i] == nil {
				fmt.Fprintf(o.Out, "localcluster: cluster %s ready at %s after %s\n", c.Name, c.Server, time.Since(t0).Round(100*time.Millisecond))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("localcluster: starting federation in %s: %w", o.WorkDir, err)
	}

	// Ports may have changed on a retry, so the kubeconfig and state are
	// written only once every cluster is up.
	if err := f.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := f.writeState(o); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "localcluster: %d cluster(s) ready in %s; kubeconfig %s\n", len(f.Clusters), time.Since(begin).Round(100*time.Millisecond), f.KubeconfigPath)
	return f, nil
}

// newFederation generates all credentials and configuration files and
// allocates ports; it starts no process.
func newFederation(o Options) (*Federation, error) {
	now := time.Now()
	pkiDir := filepath.Join(o.WorkDir, pkiDirName)
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, fmt.Errorf("localcluster: creating %s: %w", pkiDir, err)
	}
	ca, err := newAuthority("localcluster-ca", now)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	caPath := filepath.Join(pkiDir, "ca.crt")
	if err := writeFiles(map[string][]byte{caPath: ca.certPEM, filepath.Join(pkiDir, "ca.key"): ca.keyPEM}); err != nil {
		return nil, err
	}
	ports, err := allocatePorts(len(o.Clusters))
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}

	f := &Federation{WorkDir: o.WorkDir, KubeconfigPath: filepath.Join(o.WorkDir, kubeconfigName)}
	for i, name := range o.Clusters {
		c := &Cluster{
			Name:      name,
			Context:   name,
			CAData:    ca.certPEM,
			Dir:       filepath.Join(o.WorkDir, name),
			binDir:    o.BinDir,
			caPath:    caPath,
			detached:  o.Detach,
			extraArgs: o.ExtraArgs,
			procs:     map[Component]*process{},
		}
		if i > 0 {
			c.nodes = o.nodesOf(name).forCluster(name)
		}
		c.setPorts(ports[i])
		if err := c.writeCredentials(ca, now); err != nil {
			return nil, err
		}
		f.Clusters = append(f.Clusters, c)
	}
	return f, nil
}

// writeCredentials creates the cluster's directory with its serving
// certificates, ServiceAccount key pair, token file and the controller
// manager's kubeconfig.
func (c *Cluster) writeCredentials(ca *authority, now time.Time) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("localcluster: creating %s: %w", c.Dir, err)
	}
	apiCert, err := ca.apiServerServingCert(c.Name, now)
	if err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	kcmCert, err := ca.servingCert("kube-controller-manager-"+c.Name, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, now)
	if err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	schedCert, err := ca.servingCert("kube-scheduler-"+c.Name, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, now)
	if err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	saKey, err := newServiceAccountKey()
	if err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	if c.Token, err = newToken(); err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	err = writeFiles(map[string][]byte{
		filepath.Join(c.Dir, "apiserver.crt"):          apiCert.certPEM,
		filepath.Join(c.Dir, "apiserver.key"):          apiCert.keyPEM,
		filepath.Join(c.Dir, "controller-manager.crt"): kcmCert.certPEM,
		filepath.Join(c.Dir, "controller-manager.key"): kcmCert.keyPEM,
		filepath.Join(c.Dir, "scheduler.crt"):          schedCert.certPEM,
		filepath.Join(c.Dir, "scheduler.key"):          schedCert.keyPEM,
		filepath.Join(c.Dir, "sa.pub"):                 saKey.certPEM,
		filepath.Join(c.Dir, "sa.key"):                 saKey.keyPEM,
		filepath.Join(c.Dir, "tokens.csv"):             tokenFile(c.Token),
	})
	if err != nil {
		return err
	}
	return c.writeComponentKubeconfig()
}

// writeComponentKubeconfig writes the kubeconfig the cluster's own
// components (controller manager, scheduler, kwok) reach its apiserver
// with: a single context, as the controller manager has no flag to pick
// one. It is written again whenever the apiserver moves to another port.
func (c *Cluster) writeComponentKubeconfig() error {
	kcm := buildKubeconfig([]kubeconfigEntry{c.kubeconfigEntry()}, c.Name)
	if err := writeKubeconfig(filepath.Join(c.Dir, "controller-manager.kubeconfig"), kcm); err != nil {
		return fmt.Errorf("localcluster: cluster %s: %w", c.Name, err)
	}
	return nil
}

func (c *Cluster) kubeconfigEntry() kubeconfigEntry {
	return kubeconfigEntry{Name: c.Context, Server: c.Server, CAData: c.CAData, Token: c.Token}
}

func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("localcluster: writing %s: %w", path, err)
		}
	}
	return nil
}

func (f *Federation) writeKubeconfig() error {
	entries := make([]kubeconfigEntry, 0, len(f.Clusters))
	for _, c := range f.Clusters {
		entries = append(entries, c.kubeconfigEntry())
	}
	if err := writeKubeconfig(f.KubeconfigPath, buildKubeconfig(entries, f.Clusters[0].Context)); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

func (f *Federation) writeState(o Options) error {
	st := state{Version: stateVersion, Detached: o.Detach, BinDir: o.BinDir, ExtraArgs: o.ExtraArgs}
	for _, c := range f.Clusters {
		st.Clusters = append(st.Clusters, clusterState{Name: c.Name, Ports: c.ports, Nodes: c.nodes})
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("localcluster: encoding state: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(f.WorkDir, stateFileName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	return nil
}

// Cluster returns the cluster with the given name, or nil.
func (f *Federation) Cluster(name string) *Cluster {
	for _, c := range f.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Host returns the host cluster.
func (f *Federation) Host() *Cluster {
	return f.Clusters[0]
}

// Members returns the member clusters, i.e. all but the host.
func (f *Federation) Members() []*Cluster {
	return f.Clusters[1:]
}

// Stop stops every process of every cluster (SIGTERM, then SIGKILL after a
// few seconds) and waits for them to exit. Calling it again is harmless.
func (f *Federation) Stop() error {
	f.stopOnce.Do(func() {
		errs := make([]error, len(f.Clusters))
		var wg sync.WaitGroup
		for i, c := range f.Clusters {
			wg.Go(func() { errs[i] = c.stop() })
		}
		wg.Wait()
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

// Load attaches to a federation that an earlier Start recorded in dir,
// possibly from another process (a detached federation started by the
// CLI). Its processes are adopted from their pid files and can be stopped;
// StartAPIServer starts a detached kube-apiserver.
func Load(dir string) (*Federation, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: resolving %s: %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, stateFileName))
	if err != nil {
		return nil, fmt.Errorf("localcluster: no federation recorded in %s: %w", dir, err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("localcluster: parsing %s: %w", filepath.Join(dir, stateFileName), err)
	}
	if st.Version != stateVersion || len(st.Clusters) == 0 {
		return nil, fmt.Errorf("localcluster: %s has unsupported version %d or no clusters", filepath.Join(dir, stateFileName), st.Version)
	}
	f := &Federation{WorkDir: dir, KubeconfigPath: filepath.Join(dir, kubeconfigName)}
	kcfg, err := clientcmd.LoadFromFile(f.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("localcluster: loading %s: %w", f.KubeconfigPath, err)
	}
	caPath := filepath.Join(dir, pkiDirName, "ca.crt")
	caData, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("localcluster: reading CA: %w", err)
	}
	for _, cs := range st.Clusters {
		c := &Cluster{
			Name:      cs.Name,
			Context:   cs.Name,
			CAData:    caData,
			Dir:       filepath.Join(dir, cs.Name),
			binDir:    st.BinDir,
			caPath:    caPath,
			detached:  true,
			extraArgs: st.ExtraArgs,
			procs:     map[Component]*process{},
		}
		c.setPorts(cs.Ports)
		c.nodes = cs.Nodes
		if user, ok := kcfg.AuthInfos[cs.Name]; ok {
			c.Token = user.Token
		}
		for _, comp := range components {
			p, err := adopt(comp, c.pidPath(comp), c.LogPath(comp))
			if err == nil {
				c.procs[comp] = p
			}
		}
		f.Clusters = append(f.Clusters, c)
	}
	return f, nil
}

// StopFromDir stops the processes of a federation started into dir,
// typically a detached one. It works from the pid files alone, so it also
// cleans up after a start that died half way. Each pid is signalled only
// if it still runs the binary with the start time recorded for it.
func StopFromDir(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("localcluster: resolving %s: %w", dir, err)
	}
	byCluster, err := recordedProcesses(dir)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, procs := range byCluster {
		wg.Go(func() {
			// Reverse start order: an apiserver with the controller
			// manager's watches still open, or without its etcd, is slow
			// to shut down.
			for i := len(procs) - 1; i >= 0; i-- {
				if err := procs[i].stop(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("localcluster: %w", err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// recordedProcesses adopts every pid file under dir/*/, grouped by cluster
// directory and in start order.
func recordedProcesses(dir string) (map[string][]*process, error) {
	out := map[string][]*process{}
	for _, comp := range components {
		paths, err := filepath.Glob(filepath.Join(dir, "*", string(comp)+".pid"))
		if err != nil {
			return nil, fmt.Errorf("localcluster: listing pid files in %s: %w", dir, err)
		}
		for _, path := range paths {
			p, err := adopt(comp, path, filepath.Join(filepath.Dir(path), string(comp)+".log"))
			if err != nil {
				// A torn or foreign pid file identifies nothing we may kill.
				continue
			}
			clusterDir := filepath.Dir(path)
			out[clusterDir] = append(out[clusterDir], p)
		}
	}
	return out, nil
}

// prepareWorkDir locks dir against a concurrent Start, refuses a dir with a
// live federation or foreign content, and wipes what a dead run left.
func prepareWorkDir(dir string) (_ func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: creating work dir: %w", err)
	}
	lockPath := filepath.Join(dir, lockFileName)
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcluster: opening %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("localcluster: another start is in progress in %s", dir)
	}
	unlock := func() { _ = lock.Close() } // closing releases the flock
	defer func() {
		if err != nil {
			unlock()
		}
	}()

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: reading work dir: %w", err)
	}
	var foreign bool
	var ours bool
	for _, e := range entries {
		switch e.Name() {
		case lockFileName:
		case markerFileName:
			ours = true
		default:
			foreign = true
		}
	}
	if foreign && !ours {
		return nil, fmt.Errorf("localcluster: %s is not empty and was not created by localcluster; refusing to wipe it", dir)
	}
	if ours {
		byCluster, err := recordedProcesses(dir)
		if err != nil {
			return nil, err
		}
		for _, p := range slices.Concat(slices.Collect(maps.Values(byCluster))...) {
			if p.running() {
				return nil, fmt.Errorf("localcluster: a federation is already running in %s (%s pid %d); stop it first with `go run ./hack/localcluster down --dir %s` or StopFromDir",
					dir, p.component, p.rec.PID, dir)
			}
		}
		for _, e := range entries {
			if e.Name() == lockFileName {
				continue
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("localcluster: wiping stale %s: %w", filepath.Join(dir, e.Name()), err)
			}
		}
	}
	marker := []byte("created by github.com/kubefed-io/kubefed/test/localcluster (pid " + strconv.Itoa(os.Getpid()) + ")\n")
	if err := os.WriteFile(filepath.Join(dir, markerFileName), marker, 0o644); err != nil {
		return nil, fmt.Errorf("localcluster: writing marker: %w", err)
	}
	return unlock, nil
}

// ProcessStatus describes one component process.
type ProcessStatus struct {
	Component Component
	PID       int
	Running   bool
	LogPath   string
}

// ClusterStatus describes one cluster of a federation.
type ClusterStatus struct {
	Name      string
	Server    string
	Processes []ProcessStatus
	// ReadyErr is nil when kube-apiserver answers /readyz with "ok".
	ReadyErr error
}

// Status reports which processes run and whether each apiserver is ready.
func (f *Federation) Status(ctx context.Context) []ClusterStatus {
	out := make([]ClusterStatus, len(f.Clusters))
	var wg sync.WaitGroup
	for i, c := range f.Clusters {
		wg.Go(func() {
			st := ClusterStatus{Name: c.Name, Server: c.Server}
			c.mu.Lock()
			for _, comp := range c.components() {
				ps := ProcessStatus{Component: comp, LogPath: c.LogPath(comp)}
				if p := c.procs[comp]; p != nil {
					ps.PID = p.rec.PID
					ps.Running = p.running()
				}
				st.Processes = append(st.Processes, ps)
			}
			c.mu.Unlock()
			probeCtx, cancel := context.WithTimeout(ctx, probeTimeout)
			st.ReadyErr = c.apiServerReady(probeCtx)
			cancel()
			out[i] = st
		})
	}
	wg.Wait()
	return out
}
