package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Component names one of the processes that make up a cluster.
type Component string

const (
	// Etcd is the cluster's etcd member.
	Etcd Component = "etcd"
	// APIServer is the cluster's kube-apiserver.
	APIServer Component = "kube-apiserver"
	// ControllerManager is the cluster's kube-controller-manager.
	ControllerManager Component = "kube-controller-manager"
	// Scheduler is the cluster's kube-scheduler, run when it has nodes.
	Scheduler Component = "kube-scheduler"
	// Kwok simulates the cluster's nodes and their pods' kubelets.
	Kwok Component = "kwok"
)

// components lists the components in start order; they stop in reverse.
// A cluster without nodes runs only the first three (Cluster.components).
var components = []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok}

const (
	// stopGrace is how long a component gets to exit after SIGTERM before it
	// is killed; kube-apiserver usually needs well under a second.
	stopGrace = 5 * time.Second
	// killWait bounds the wait after SIGKILL, which only fails to end a
	// process stuck in uninterruptible sleep.
	killWait = 5 * time.Second
	// pollInterval paces every readiness and liveness poll.
	pollInterval = 100 * time.Millisecond
	// logTailLines is how much of a failing component's log an error quotes.
	logTailLines = 20
	// logWindow bounds how much of a log is read to quote or search it.
	logWindow = 64 << 10
)

// pidRecord identifies a process beyond its pid, so that a pid that the
// kernel recycled for an unrelated process is never signalled.
type pidRecord struct {
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat (clock ticks after boot).
	StartTime uint64 `json:"startTime"`
	// Exe is the resolved path of the binary the process runs.
	Exe string `json:"exe"`
}

// process is one running (or finished) component.
type process struct {
	component Component
	logPath   string
	pidPath   string
	rec       pidRecord
	// logStart is the size of the log file before this process's first
	// line: the log is appended to across restarts and retries.
	logStart int64
	// done is closed once the process has exited; it is non-nil only for
	// children of this process, which can be waited for. Processes adopted
	// from pid files are polled through /proc instead.
	done chan struct{}
}

// spawnSpec is everything needed to start a component.
type spawnSpec struct {
	component Component
	binary    string
	args      []string
	dir       string
	logPath   string
	pidPath   string
	detached  bool
	// env is added to the environment the component inherits.
	env []string
}

// spawn starts a component with its output appended to its log file and
// records its pid file.
func spawn(s spawnSpec) (*process, error) {
	exe, err := filepath.EvalSymlinks(s.binary)
	if err != nil {
		return nil, fmt.Errorf("resolving %s binary %s: %w", s.component, s.binary, err)
	}
	exe, err = filepath.Abs(exe)
	if err != nil {
		return nil, fmt.Errorf("resolving %s binary %s: %w", s.component, s.binary, err)
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", s.component, err)
	}
	// The child writes straight into the file, so no goroutine of ours has
	// to copy output, and a detached child never writes into a dead pipe.
	defer logFile.Close()
	var logStart int64
	if fi, err := logFile.Stat(); err == nil {
		logStart = fi.Size()
	}
	fmt.Fprintf(logFile, "\n==== localcluster: starting %s at %s ====\n", s.component, time.Now().Format(time.RFC3339))

	cmd := exec.Command(exe, s.args...)
	cmd.Dir = s.dir
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(s.detached)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (log %s): %w", s.component, s.logPath, err)
	}
	p := &process{
		component: s.component,
		logPath:   s.logPath,
		logStart:  logStart,
		pidPath:   s.pidPath,
		rec:       pidRecord{PID: cmd.Process.Pid, Exe: exe},
		done:      make(chan struct{}),
	}
	go func() {
		// Reaping keeps the child from lingering as a zombie and is how
		// exited() learns about a crash.
		_ = cmd.Wait()
		close(p.done)
	}()
	st, err := readProcStat(p.rec.PID)
	if err != nil {
		// Only a process already reaped has no stat: it died at once (a
		// bad flag, a taken port), and the reaper is about to say so. The
		// caller's readiness wait then sees the exit and quotes the log.
		select {
		case <-p.done:
			return p, nil
		case <-time.After(time.Second):
		}
		_ = syscall.Kill(-p.rec.PID, syscall.SIGKILL)
		<-p.done
		return nil, fmt.Errorf("reading start time of %s (pid %d): %w", s.component, p.rec.PID, err)
	}
	p.rec.StartTime = st.startTime
	if err := writePIDFile(s.pidPath, p.rec); err != nil {
		_ = p.stop()
		return nil, err
	}
	return p, nil
}

// sysProcAttr puts each component in its own process group so that a
// terminal's Ctrl-C does not reach it and a stop can signal the whole group.
func sysProcAttr(detached bool) *syscall.SysProcAttr {
	if detached {
		// A new session also drops the controlling terminal, so the
		// processes outlive the shell that ran the CLI.
		return &syscall.SysProcAttr{Setsid: true}
	}
	// Pdeathsig is delivered when the thread that forked the child exits;
	// Go only retires threads when a goroutine that locked its thread
	// exits, which no caller of this package is expected to do around
	// Start.
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func writePIDFile(path string, rec pidRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding pid file %s: %w", path, err)
	}
	return writeFileAtomic(path, append(data, '\n'), 0o644)
}

func readPIDFile(path string) (pidRecord, error) {
	var rec pidRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return rec, fmt.Errorf("reading pid file: %w", err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("parsing pid file %s: %w", path, err)
	}
	if rec.PID <= 1 {
		return rec, fmt.Errorf("pid file %s holds invalid pid %d", path, rec.PID)
	}
	return rec, nil
}

// adopt returns a process for a pid file written by an earlier run, which
// may have been another OS process.
func adopt(component Component, pidPath, logPath string) (*process, error) {
	rec, err := readPIDFile(pidPath)
	if err != nil {
		return nil, err
	}
	return &process{component: component, logPath: logPath, pidPath: pidPath, rec: rec}, nil
}

// procStat is the part of /proc/<pid>/stat this package needs.
type procStat struct {
	state     byte
	pgid      int
	sid       int
	startTime uint64
}

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may contain spaces and parentheses, so
	// parse from the last closing parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return procStat{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+2:]))
	// fields[0] is field 3 (state), so field N is fields[N-3].
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	pgid, err := strconv.Atoi(fields[5-3])
	if err != nil {
		return procStat{}, fmt.Errorf("parsing pgid in /proc/%d/stat: %w", pid, err)
	}
	sid, err := strconv.Atoi(fields[6-3])
	if err != nil {
		return procStat{}, fmt.Errorf("parsing session id in /proc/%d/stat: %w", pid, err)
	}
	start, err := strconv.ParseUint(fields[22-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parsing start time in /proc/%d/stat: %w", pid, err)
	}
	return procStat{state: fields[0][0], pgid: pgid, sid: sid, startTime: start}, nil
}

// running reports whether the recorded process still exists, has not exited
// (zombies count as exited) and is still the binary we started.
func (p *process) running() bool {
	if p.done != nil {
		select {
		case <-p.done:
			return false
		default:
		}
	}
	return p.owned() == nil
}

// owned checks that the pid still belongs to the process we started: same
// start time and same executable.
func (p *process) owned() error {
	st, err := readProcStat(p.rec.PID)
	if err != nil {
		return fmt.Errorf("pid %d is gone: %w", p.rec.PID, err)
	}
	if st.state == 'Z' || st.state == 'X' {
		return fmt.Errorf("pid %d has exited", p.rec.PID)
	}
	if st.startTime != p.rec.StartTime {
		return fmt.Errorf("pid %d was reused by another process", p.rec.PID)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.rec.PID))
	if err != nil {
		return fmt.Errorf("reading executable of pid %d: %w", p.rec.PID, err)
	}
	// A rebuilt binary replaces the file the process was started from.
	exe = strings.TrimSuffix(exe, " (deleted)")
	if exe != p.rec.Exe {
		return fmt.Errorf("pid %d runs %s, not %s", p.rec.PID, exe, p.rec.Exe)
	}
	return nil
}

// exited returns a channel closed when a child exits, or nil for an adopted
// process, whose exit can only be polled.
func (p *process) exited() <-chan struct{} {
	return p.done
}

// waitGone waits up to d for the process to exit.
func (p *process) waitGone(d time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for {
		if !p.running() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval / 2)
	}
}

// signal sends sig to the process group the component leads, or only to
// the process if it somehow is not a group leader.
func (p *process) signal(sig syscall.Signal) error {
	target := p.rec.PID
	if st, err := readProcStat(p.rec.PID); err == nil && st.pgid == p.rec.PID {
		target = -p.rec.PID
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending %v to %s (pid %d): %w", sig, p.component, p.rec.PID, err)
	}
	return nil
}

// stop ends the process with SIGTERM, then SIGKILL after stopGrace, waits
// for it to exit and removes its pid file. Stopping a process that is no
// longer ours is a no-op, so a recycled pid is never signalled.
func (p *process) stop() error {
	if p.running() {
		if err := p.signal(syscall.SIGTERM); err != nil {
			return err
		}
		if !p.waitGone(stopGrace) {
			// Re-check ownership: the pid must not have been recycled
			// between the two signals.
			if p.running() {
				if err := p.signal(syscall.SIGKILL); err != nil {
					return err
				}
			}
			if !p.waitGone(killWait) {
				return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.component, p.rec.PID)
			}
		}
	}
	if err := os.Remove(p.pidPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pid file: %w", err)
	}
	return nil
}

// logTail returns the last n lines of a log file, for quoting in errors.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logWindow {
		if _, err := f.Seek(-logWindow, io.SeekEnd); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ownLog returns what this process wrote to its log (the last 64 KiB of
// it at most), not what earlier processes of the component wrote there.
func (p *process) ownLog() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	from := p.logStart
	if fi, err := f.Stat(); err == nil && fi.Size()-from > logWindow {
		from = fi.Size() - logWindow
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	return string(data)
}

// failure builds an error that names the component's log and quotes its
// last lines, which nearly always hold the reason.
func (p *process) failure(clusterName string, err error) error {
	tail := logTail(p.logPath, logTailLines)
	if tail == "" {
		return fmt.Errorf("cluster %s: %s: %w (log: %s)", clusterName, p.component, err, p.logPath)
	}
	return fmt.Errorf("cluster %s: %s: %w (log: %s); last lines:\n%s", clusterName, p.component, err, p.logPath, indent(tail))
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
