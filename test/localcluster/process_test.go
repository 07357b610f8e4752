package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func spawnSleep(t *testing.T, dir string, detached bool) *process {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := spawn(spawnSpec{
		component: Etcd,
		binary:    sleep,
		args:      []string{"300"},
		dir:       dir,
		logPath:   filepath.Join(dir, "etcd.log"),
		pidPath:   filepath.Join(dir, "etcd.pid"),
		detached:  detached,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

func TestSpawnWritesPIDFileAndStopViaAdoption(t *testing.T) {
	for _, detached := range []bool{false, true} {
		dir := t.TempDir()
		p := spawnSleep(t, dir, detached)
		if !p.running() {
			t.Fatal("process not running after spawn")
		}
		st, err := readProcStat(p.rec.PID)
		if err != nil {
			t.Fatal(err)
		}
		if st.pgid != p.rec.PID {
			t.Errorf("detached=%v: pgid %d, want own group %d", detached, st.pgid, p.rec.PID)
		}
		if self, err := readProcStat(os.Getpid()); err == nil {
			if newSession := st.sid == p.rec.PID; newSession != detached || (!detached && st.sid != self.sid) {
				t.Errorf("detached=%v: session %d (ours %d, child %d)", detached, st.sid, self.sid, p.rec.PID)
			}
		}
		adopted, err := adopt(Etcd, p.pidPath, p.logPath)
		if err != nil {
			t.Fatal(err)
		}
		if adopted.rec != p.rec || !adopted.running() {
			t.Fatalf("adopted record %+v does not match %+v or is not running", adopted.rec, p.rec)
		}
		if err := adopted.stop(); err != nil {
			t.Fatal(err)
		}
		if !p.waitGone(time.Second) {
			t.Error("process still running after stop")
		}
		if _, err := os.Stat(p.pidPath); !os.IsNotExist(err) {
			t.Errorf("pid file not removed: %v", err)
		}
		if !strings.Contains(logTail(p.logPath, 5), "starting etcd") {
			t.Error("log file lacks the start banner")
		}
	}
}

// TestOwnLogIsThisProcesssLinesOnly: a component's log is appended to
// across attempts, and what an earlier attempt wrote there (a bind failure
// that made the start retry) is not what the current one failed on.
func TestOwnLogIsThisProcesssLinesOnly(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh binary")
	}
	dir := t.TempDir()
	run := func(line string) *process {
		t.Helper()
		p, err := spawn(spawnSpec{
			component: APIServer,
			binary:    sh,
			args:      []string{"-c", "echo " + line},
			dir:       dir,
			logPath:   filepath.Join(dir, "kube-apiserver.log"),
			pidPath:   filepath.Join(dir, "kube-apiserver.pid"),
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited():
		case <-time.After(10 * time.Second):
			t.Fatal("sh did not exit")
		}
		return p
	}
	if got := run("bind: address already in use").ownLog(); !strings.Contains(got, "address already in use") {
		t.Errorf("first process's own log: %q", got)
	}
	second := run("connection refused")
	if got := second.ownLog(); strings.Contains(got, "address already in use") || !strings.Contains(got, "connection refused") {
		t.Errorf("second process's own log: %q", got)
	}
	if tail := logTail(second.logPath, logTailLines); !strings.Contains(tail, "address already in use") {
		t.Errorf("the quoted tail lost the earlier attempt: %q", tail)
	}
}

func TestStopSkipsRecycledPID(t *testing.T) {
	dir := t.TempDir()
	p := spawnSleep(t, dir, false)
	forged := *p
	forged.done = nil
	forged.rec.StartTime++ // as if the pid now belonged to a newer process
	if forged.running() {
		t.Fatal("a process with another start time counts as ours")
	}
	if err := forged.stop(); err != nil {
		t.Fatal(err)
	}
	if !p.running() {
		t.Fatal("stop signalled a process whose start time did not match")
	}
	forged = *p
	forged.done = nil
	forged.rec.Exe = "/usr/bin/not-our-binary"
	if forged.running() {
		t.Fatal("a process running another binary counts as ours")
	}
}

func TestPrepareWorkDir(t *testing.T) {
	t.Run("foreign content is refused", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "precious.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := prepareWorkDir(dir); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("got %v, want a refusal", err)
		}
	})
	t.Run("stale run is wiped", func(t *testing.T) {
		dir := t.TempDir()
		unlock, err := prepareWorkDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		if err := os.MkdirAll(filepath.Join(dir, "host"), 0o755); err != nil {
			t.Fatal(err)
		}
		dead := pidRecord{PID: 2147483, StartTime: 1, Exe: "/nonexistent"}
		if err := writePIDFile(filepath.Join(dir, "host", "etcd.pid"), dead); err != nil {
			t.Fatal(err)
		}
		unlock, err = prepareWorkDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		if _, err := os.Stat(filepath.Join(dir, "host")); !os.IsNotExist(err) {
			t.Errorf("stale cluster dir not wiped: %v", err)
		}
	})
	t.Run("live run is refused", func(t *testing.T) {
		dir := t.TempDir()
		unlock, err := prepareWorkDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		hostDir := filepath.Join(dir, "host")
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			t.Fatal(err)
		}
		spawnSleep(t, hostDir, false)
		if _, err := prepareWorkDir(dir); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Fatalf("got %v, want an already-running error", err)
		}
	})
	t.Run("concurrent start is refused", func(t *testing.T) {
		dir := t.TempDir()
		unlock, err := prepareWorkDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		if _, err := prepareWorkDir(dir); err == nil || !strings.Contains(err.Error(), "in progress") {
			t.Fatalf("got %v, want an in-progress error", err)
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	bin := t.TempDir()
	for _, c := range components {
		if err := os.WriteFile(filepath.Join(bin, string(c)), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := Options{BinDir: bin, WorkDir: t.TempDir(), Clusters: []string{"host", "member1"}}
	if _, err := base.withDefaults(); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"no work dir":    func(o *Options) { o.WorkDir = "" },
		"no clusters":    func(o *Options) { o.Clusters = nil },
		"bad name":       func(o *Options) { o.Clusters = []string{"Host_1"} },
		"duplicate":      func(o *Options) { o.Clusters = []string{"a", "a"} },
		"reserved name":  func(o *Options) { o.Clusters = []string{"pki"} },
		"missing binary": func(o *Options) { o.BinDir = t.TempDir() },
		"nodes for the host": func(o *Options) {
			o.MemberNodes = map[string]NodeOptions{"host": {Count: 1}}
		},
		"nodes for no member": func(o *Options) {
			o.MemberNodes = map[string]NodeOptions{"member2": {Count: 1}}
		},
		"negative member nodes": func(o *Options) {
			o.MemberNodes = map[string]NodeOptions{"member1": {Count: -1}}
		},
		"bad member capacity": func(o *Options) {
			o.MemberNodes = map[string]NodeOptions{"member1": {Count: 1, CPU: "two"}}
		},
		"member nodes without their binaries": func(o *Options) {
			o.BinDir = t.TempDir()
			for _, c := range components[:3] {
				if err := os.WriteFile(filepath.Join(o.BinDir, string(c)), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			o.MemberNodes = map[string]NodeOptions{"member1": {Count: 1}}
		},
	} {
		o := base
		mutate(&o)
		if _, err := o.withDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAllocatePortsDistinct(t *testing.T) {
	sets, err := allocatePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := listenPortRange()
	seen := map[int]bool{}
	for _, s := range sets {
		for _, p := range []int{s.EtcdClient, s.EtcdPeer, s.APIServer, s.ControllerManager, s.Scheduler, s.Kwok} {
			if p == 0 || seen[p] {
				t.Fatalf("port %d zero or repeated in %+v", p, sets)
			}
			seen[p] = true
			// Outside the ports the kernel gives clients' connections,
			// where this machine has room for it.
			if hi >= lo && (p < lo || p > hi) {
				t.Errorf("port %d outside %d-%d", p, lo, hi)
			}
		}
	}
}
