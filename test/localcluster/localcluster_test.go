//go:build integration

package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const wantGitVersion = "v1.37.2"

// testWriter forwards progress messages to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func startFederation(t *testing.T, o Options) *Federation {
	t.Helper()
	if o.WorkDir == "" {
		o.WorkDir = t.TempDir()
	}
	o.Out = testWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	fed, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	t.Logf("%d cluster(s) started in %s", len(fed.Clusters), time.Since(begin).Round(time.Millisecond))
	logRSS(t, fed)
	return fed
}

// logRSS records the resident memory of every process, to keep an eye on
// what a federation costs on a small CI machine.
func logRSS(t *testing.T, fed *Federation) {
	t.Helper()
	for _, c := range fed.Clusters {
		var parts []string
		var total int
		for _, comp := range components {
			pid, ok := c.PIDs()[comp]
			if !ok {
				continue
			}
			kb := rssKB(pid)
			total += kb
			parts = append(parts, fmt.Sprintf("%s %d MiB", comp, kb/1024))
		}
		t.Logf("cluster %s RSS: %s; total %d MiB", c.Name, strings.Join(parts, ", "), total/1024)
	}
}

func rssKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); n == 1 {
			return kb
		}
	}
	return 0
}

func clientFor(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatalf("client for %s: %v", c.Name, err)
	}
	return cs
}

// eventually polls cond every 200ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if last = cond(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allPIDs returns every pid the federation runs now.
func allPIDs(fed *Federation) map[int]string {
	out := map[int]string{}
	for _, c := range fed.Clusters {
		for comp, pid := range c.PIDs() {
			out[pid] = c.Name + "/" + string(comp)
		}
	}
	return out
}

// assertGone fails unless none of pids exists any more (zombies included:
// Stop must also have reaped its children).
func assertGone(t *testing.T, pids map[int]string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for pid, what := range pids {
		for {
			err := syscall.Kill(pid, 0)
			if errors.Is(err, syscall.ESRCH) {
				break
			}
			if st, serr := readProcStat(pid); serr == nil && st.state == 'Z' && !isChild(pid) {
				// An orphan reparented to a pid 1 that does not reap;
				// the process itself is dead.
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s (pid %d) still exists", what, pid)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func isChild(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[i+2:]))
	return len(fields) > 1 && fields[1] == fmt.Sprint(os.Getpid())
}

func TestFederation(t *testing.T) {
	dir := t.TempDir()
	fed := startFederation(t, Options{WorkDir: dir, Clusters: []string{"host", "member1"}})
	host, member := fed.Cluster("host"), fed.Cluster("member1")
	if host == nil || member == nil || fed.Host() != host {
		t.Fatalf("clusters not found by name: %+v", fed.Clusters)
	}
	pids := allPIDs(fed)
	if len(pids) != 6 {
		t.Fatalf("want 6 processes, got %v", pids)
	}

	t.Run("version", func(t *testing.T) {
		for _, c := range fed.Clusters {
			v, err := clientFor(t, c).Discovery().ServerVersion()
			if err != nil {
				t.Fatalf("%s: /version: %v", c.Name, err)
			}
			if v.GitVersion != wantGitVersion {
				t.Errorf("%s: gitVersion %q, want %q", c.Name, v.GitVersion, wantGitVersion)
			}
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		cfg, err := clientcmd.LoadFromFile(fed.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.CurrentContext != "host" {
			t.Errorf("current-context %q, want host", cfg.CurrentContext)
		}
		for _, c := range fed.Clusters {
			rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, c.Context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
			if err != nil {
				t.Fatalf("context %s: %v", c.Context, err)
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
				t.Errorf("context %s: %v", c.Context, err)
			}
		}
	})

	t.Run("second start into the same dir is refused", func(t *testing.T) {
		_, err := Start(context.Background(), Options{WorkDir: dir, Clusters: []string{"host"}})
		if err == nil || !strings.Contains(err.Error(), "already running") {
			t.Fatalf("got %v, want an already-running error", err)
		}
		if got := allPIDs(fed); len(got) != len(pids) {
			t.Fatalf("the refused start disturbed the federation: %v", got)
		}
	})

	t.Run("serviceaccount token secret is populated", func(t *testing.T) {
		cs := clientFor(t, member)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:        "default-token-test",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"},
			},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		if _, err := cs.CoreV1().Secrets("default").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "token populated", func(ctx context.Context) error {
			s, err := cs.CoreV1().Secrets("default").Get(ctx, secret.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
				return errors.New("token key still empty")
			}
			if len(s.Data[corev1.ServiceAccountRootCAKey]) == 0 {
				return errors.New("ca.crt key still empty")
			}
			return nil
		})
	})

	t.Run("namespace deletion completes", func(t *testing.T) {
		cs := clientFor(t, member)
		ctx := context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "localcluster-delete-me"}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content"}, Data: map[string]string{"k": "v"}}
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "namespace gone", func(ctx context.Context) error {
			got, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("namespace still present in phase %s", got.Status.Phase)
		})
		t.Logf("namespace deleted in %s", time.Since(begin).Round(time.Millisecond))
	})

	t.Run("apiserver outage and recovery", func(t *testing.T) {
		server := member.Server
		before := member.PIDs()
		stopBegin := time.Now()
		if err := member.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-apiserver stopped in %s", time.Since(stopBegin).Round(time.Millisecond))
		if _, running := member.PIDs()[APIServer]; running {
			t.Fatal("kube-apiserver still running after StopAPIServer")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := member.ReadyzError(ctx); err == nil {
			t.Fatal("/readyz succeeded while the apiserver is stopped")
		}
		after := member.PIDs()
		for _, comp := range []Component{Etcd, ControllerManager} {
			if after[comp] != before[comp] {
				t.Errorf("%s changed from pid %d to %d during the outage", comp, before[comp], after[comp])
			}
		}
		if err := host.ReadyzError(ctx); err != nil {
			t.Errorf("host affected by the member outage: %v", err)
		}

		begin := time.Now()
		startCtx, cancelStart := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancelStart()
		if err := member.StartAPIServer(startCtx); err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-apiserver restarted in %s", time.Since(begin).Round(time.Millisecond))
		if member.Server != server {
			t.Errorf("server moved from %s to %s", server, member.Server)
		}
		if err := member.ReadyzError(startCtx); err != nil {
			t.Fatalf("/readyz after restart: %v", err)
		}
		if _, err := clientFor(t, member).CoreV1().ServiceAccounts("default").Get(startCtx, "default", metav1.GetOptions{}); err != nil {
			t.Errorf("data lost across the restart: %v", err)
		}
		pids[member.PIDs()[APIServer]] = "member1/kube-apiserver (restarted)"
	})

	stopBegin := time.Now()
	if err := fed.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("federation stopped in %s", time.Since(stopBegin).Round(time.Millisecond))
	assertGone(t, pids, 0)
	for _, c := range fed.Clusters {
		if left, _ := filepath.Glob(filepath.Join(c.Dir, "*.pid")); len(left) > 0 {
			t.Errorf("pid files left after Stop: %v", left)
		}
	}
}

// TestDetachedStopFromDir covers the CLI's path: a detached federation is
// inspected and stopped by a caller that only knows its directory.
func TestDetachedStopFromDir(t *testing.T) {
	dir := t.TempDir()
	fed := startFederation(t, Options{WorkDir: dir, Clusters: []string{"host"}, Detach: true})
	pids := allPIDs(fed)
	for pid := range pids {
		st, err := readProcStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.sid != pid || st.pgid != pid {
			t.Errorf("pid %d: session %d, group %d; want its own session", pid, st.sid, st.pgid)
		}
	}

	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range loaded.Status(context.Background()) {
		if st.ReadyErr != nil {
			t.Errorf("%s not ready: %v", st.Name, st.ReadyErr)
		}
		for _, p := range st.Processes {
			if !p.Running {
				t.Errorf("%s/%s not running per Status", st.Name, p.Component)
			}
		}
	}
	if loaded.Host().Token != fed.Host().Token {
		t.Error("Load did not recover the admin token from the kubeconfig")
	}
	if _, err := clientFor(t, loaded.Host()).Discovery().ServerVersion(); err != nil {
		t.Errorf("client from loaded federation: %v", err)
	}

	// An outage driven from the loaded federation: the apiserver is an
	// adopted process to stop, and its replacement must be detached too.
	if err := loaded.Host().StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := loaded.Host().StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	newPID := loaded.Host().PIDs()[APIServer]
	if st, err := readProcStat(newPID); err != nil || st.sid != newPID {
		t.Errorf("restarted kube-apiserver (pid %d) not in its own session: %+v, %v", newPID, st, err)
	}
	pids[newPID] = "host/kube-apiserver (restarted)"

	stopBegin := time.Now()
	if err := StopFromDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("StopFromDir took %s", time.Since(stopBegin).Round(time.Millisecond))
	// StopFromDir returns once the processes are dead; as they are still
	// children of this test, they linger as zombies until fed reaps them.
	assertGone(t, pids, 5*time.Second)
	for _, st := range loaded.Status(context.Background()) {
		if st.ReadyErr == nil {
			t.Errorf("%s still ready after StopFromDir", st.Name)
		}
	}
}

// TestStartMovesToFreshPortsWhenOneIsTaken: another process binds the
// port a cluster's apiserver was given before the apiserver does (on a busy
// machine a client's connection can hold any ephemeral port). The start
// retries on fresh ports, and the controller manager follows the apiserver
// there: the start waits for the "default" ServiceAccount, which only a
// controller manager that reached the apiserver creates (with the kubeconfig
// of the first ports it dialled a port nobody served, and the start failed).
func TestStartMovesToFreshPortsWhenOneIsTaken(t *testing.T) {
	o, err := Options{WorkDir: t.TempDir(), Clusters: []string{"host"}, Out: testWriter{t}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := prepareWorkDir(o.WorkDir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	fed, err := newFederation(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	c := fed.Host()
	taken := c.ports.APIServer
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken))
	if err != nil {
		t.Fatalf("taking the apiserver's port: %v", err)
	}
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.start(ctx); err != nil {
		t.Fatalf("start with port %d taken: %v", taken, err)
	}
	if c.ports.APIServer == taken {
		t.Fatalf("the apiserver serves on the taken port %d", taken)
	}
	if log, _ := os.ReadFile(c.LogPath(APIServer)); !strings.Contains(string(log), "address already in use") {
		t.Errorf("the first apiserver did not fail on the taken port; its log:\n%s", log)
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(c.Dir, "controller-manager.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if entry := cfg.Clusters[c.Context]; entry == nil || entry.Server != c.Server {
		t.Errorf("the controller manager's kubeconfig has %+v, the apiserver serves at %s", entry, c.Server)
	}
	if _, err := clientFor(t, c).CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the default ServiceAccount: %v", err)
	}
}

// TestChildrenDieWithTestBinary kills a process that started a federation
// and checks that Pdeathsig takes every cluster process with it.
func TestChildrenDieWithTestBinary(t *testing.T) {
	if dir := os.Getenv("LOCALCLUSTER_HELPER_DIR"); dir != "" {
		runHelper(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "LOCALCLUSTER_HELPER_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = StopFromDir(dir) // in case the test failed half way
	}()
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		if sc.Text() == "HELPER READY" {
			ready = true
			break
		}
		if strings.HasPrefix(sc.Text(), "HELPER FAILED") {
			t.Fatal(sc.Text())
		}
	}
	if !ready {
		t.Fatal("helper exited before the federation was ready")
	}
	byCluster, err := recordedProcesses(dir)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]string{}
	for _, p := range byCluster[filepath.Join(dir, "host")] {
		if !p.running() {
			t.Fatalf("%s (pid %d) not running before the kill", p.component, p.rec.PID)
		}
		pids[p.rec.PID] = string(p.component)
	}
	if len(pids) != 3 {
		t.Fatalf("want 3 processes, got %v", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertGone(t, pids, 10*time.Second)
}

func runHelper(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := Start(ctx, Options{WorkDir: dir, Clusters: []string{"host"}}); err != nil {
		fmt.Printf("HELPER FAILED %s\n", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	fmt.Println("HELPER READY")
	time.Sleep(10 * time.Minute) // until the parent kills us
	os.Exit(1)
}
