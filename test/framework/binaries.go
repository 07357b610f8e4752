package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubefed-io/kubefed/test/localcluster"
)

// ControllerManager is a running bin/controller-manager process.
type ControllerManager struct {
	cmd        *exec.Cmd
	done       chan struct{}
	LogPath    string
	MetricsURL string
	HealthURL  string
}

// FreeLoopbackAddr is an address for a process to listen on, outside the
// ports the kernel gives clients (localcluster.FreeLoopbackPorts).
func FreeLoopbackAddr() (string, error) {
	ports, err := localcluster.FreeLoopbackPorts(1)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// StartControllerManager runs bin/controller-manager against the host with
// its log in dir, and waits until its health endpoint answers.
func (f *Framework) StartControllerManager(ctx context.Context, dir string, extraArgs ...string) (*ControllerManager, error) {
	return StartControllerManager(ctx, f.Bin("controller-manager"), f.Kubeconfig, f.Host.Name, dir, extraArgs...)
}

// StartControllerManager runs a controller-manager binary against the
// kubeconfig context of a host cluster with its log in dir, and waits
// until its health endpoint answers; the benchmark uses it too.
func StartControllerManager(ctx context.Context, binary, kubeconfig, hostContext, dir string, extraArgs ...string) (*ControllerManager, error) {
	return startManager(ctx, binary, nil, kubeconfig, hostContext, dir, extraArgs)
}

// StartAgent runs `controller-manager agent` for a Pull-mode member against
// the kubeconfig context of that member, its log in dir, and waits until
// its health endpoint answers; extraArgs name the cluster and the host
// kubeconfig.
func StartAgent(ctx context.Context, binary, kubeconfig, memberContext, dir string, extraArgs ...string) (*ControllerManager, error) {
	return startManager(ctx, binary, []string{"agent"}, kubeconfig, memberContext, dir, extraArgs)
}

func startManager(ctx context.Context, binary string, command []string, kubeconfig, kubeContext, dir string, extraArgs []string) (*ControllerManager, error) {
	metrics, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	health, err := FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, fmt.Sprintf("controller-manager-%d.log", time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append(append(command,
		"--kubeconfig", kubeconfig, "--context", kubeContext,
		"--metrics-addr", metrics, "--health-addr", health,
	), extraArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The controller-manager dies with the test process, even a killed one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start controller-manager: %w", err)
	}
	cm := &ControllerManager{cmd: cmd, done: make(chan struct{}), LogPath: logPath,
		MetricsURL: "http://" + metrics + "/metrics", HealthURL: "http://" + health + "/healthz"}
	go func() { _ = cmd.Wait(); close(cm.done) }()

	err = poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		select {
		case <-cm.done:
			return false, errors.New("controller-manager exited")
		default:
		}
		resp, err := http.Get(cm.HealthURL)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		_ = cm.Stop()
		return nil, fmt.Errorf("controller-manager not healthy (log %s): %w\n%s", logPath, err, tail(logPath, 30))
	}
	return cm, nil
}

// Stop terminates the controller-manager and waits for it to exit.
func (cm *ControllerManager) Stop() error {
	if cm == nil || cm.cmd.Process == nil {
		return nil
	}
	select {
	case <-cm.done:
		return nil
	default:
	}
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cm.done:
	case <-time.After(20 * time.Second):
		_ = cm.cmd.Process.Kill()
		<-cm.done
	}
	return nil
}

// Kill ends the controller-manager as a crash would, without releasing
// its leader Lease, and waits for it to exit.
func (cm *ControllerManager) Kill() error {
	if cm == nil || cm.cmd.Process == nil {
		return nil
	}
	_ = cm.cmd.Process.Kill()
	<-cm.done
	return nil
}

// Pid is the process's id.
func (cm *ControllerManager) Pid() int { return cm.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (cm *ControllerManager) Exited() bool {
	select {
	case <-cm.done:
		return true
	default:
		return false
	}
}

// Metrics returns the controller-manager's Prometheus text exposition.
func (cm *ControllerManager) Metrics() (string, error) {
	resp, err := http.Get(cm.MetricsURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return b.String(), err
}

// Kubefedctl runs bin/kubefedctl with the federation's kubeconfig and
// returns stdout and stderr.
func (f *Framework) Kubefedctl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	full := append([]string{"--kubeconfig", f.Kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, f.Bin("kubefedctl"), full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubefedctl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), err
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// ReadFile returns a file's content, or "" when it cannot be read.
func ReadFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}
