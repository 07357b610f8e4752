package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubefed-io/kubefed/test/framework"
)

// startControllerManager starts the controller-manager under test; its pid
// is where the bench reads CPU and memory from /proc.
func startControllerManager(ctx context.Context, e *env) (*framework.ControllerManager, error) {
	cm, err := framework.StartControllerManager(ctx, e.cmBin, e.fed.KubeconfigPath, e.host.name, filepath.Join(e.workDir, "controller-manager"), strings.Fields(e.o.cmArgs)...)
	if err != nil {
		return nil, err
	}
	logf("controller-manager pid %d, log %s", cm.Pid(), cm.LogPath)
	return cm, nil
}

// queueState sums a workqueue metric over the named queues.
func queueState(metrics, metric string, queues ...string) float64 {
	total := 0.0
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		for _, q := range queues {
			if strings.Contains(line, `name="`+q+`"`) {
				fields := strings.Fields(line)
				v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
				if err == nil {
					total += v
				}
			}
		}
	}
	return total
}

// clockTicks is USER_HZ, which Linux fixes at 100 on every architecture
// Go supports; /proc reports CPU time in it.
const clockTicks = 100

// processCPU returns the user+system CPU seconds a process used so far.
func processCPU(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// processMemory returns a line of /proc/<pid>/status in bytes, e.g. VmRSS.
func processMemory(pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// machineCPU returns the busy and total jiffies of all CPUs.
func machineCPU() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	for i, f := range fields[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		// idle and iowait are the 4th and 5th columns.
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total
}

// cost is what the controller-manager spent during one scenario.
type cost struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// PeakAnonMiB is the largest anonymous part of the RSS sampled (heap,
	// stacks): the RSS less the binary's file-backed pages, which
	// processes of one binary on a node share and the kernel can reclaim.
	PeakAnonMiB float64 `json:"peakAnonMiB,omitempty"`
	// MachineBusy is the fraction of all the machine's CPUs in use, by
	// every process (clusters, bench and controller-manager).
	MachineBusy float64 `json:"machineBusy"`
	// ByProcess is the CPU seconds of the clusters' processes and the
	// bench, to tell where the machine's time went.
	ByProcess map[string]float64 `json:"cpuSecondsByProcess"`
}

// costMeter follows the controller-manager's CPU and memory through a
// scenario, across a restart too.
type costMeter struct {
	pidOf func() int
	stopC chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	pid     int
	base    float64 // CPU of pid when it was first seen
	last    float64 // CPU of pid at the latest sample
	earlier float64 // CPU of processes that already ended
	peak    int64
	anon    int64
	busy0   float64
	total0  float64
}

func newCostMeter(pidOf func() int) *costMeter {
	m := &costMeter{pidOf: pidOf, stopC: make(chan struct{})}
	m.pid = pidOf()
	m.base, _ = processCPU(m.pid)
	m.last = m.base
	// Reset the kernel's peak-RSS mark, so VmHWM covers this scenario only.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", m.pid), []byte("5"), 0)
	m.busy0, m.total0 = machineCPU()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stopC:
				return
			case <-t.C:
				m.sample()
			}
		}
	}()
	return m
}

func (m *costMeter) sample() {
	pid := m.pidOf()
	cpu, err := processCPU(pid)
	rss := processMemory(pid, "VmRSS")
	anon := processMemory(pid, "RssAnon")
	m.mu.Lock()
	defer m.mu.Unlock()
	if pid != m.pid {
		// A new process started during the scenario: all its CPU counts.
		m.earlier += m.last - m.base
		m.pid, m.base, m.last = pid, 0, 0
	}
	if err == nil {
		m.last = cpu
	}
	m.peak = max(m.peak, rss)
	m.anon = max(m.anon, anon)
}

func (m *costMeter) end() cost {
	m.sample()
	close(m.stopC)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	peak := max(m.peak, processMemory(m.pid, "VmHWM"))
	busy, total := machineCPU()
	c := cost{
		CPUSeconds:  m.earlier + m.last - m.base,
		PeakRSSMiB:  float64(peak) / (1 << 20),
		PeakAnonMiB: float64(m.anon) / (1 << 20),
	}
	if total > m.total0 {
		c.MachineBusy = (busy - m.busy0) / (total - m.total0)
	}
	return c
}

// clusterCPU returns the CPU seconds so far of each cluster component,
// members summed per component, and of the bench itself.
func (e *env) clusterCPU() map[string]float64 {
	out := map[string]float64{}
	for _, c := range e.fed.Clusters {
		group := "members"
		if c == e.host.local {
			group = "host"
		}
		for comp, pid := range c.PIDs() {
			if cpu, err := processCPU(pid); err == nil {
				out[group+"/"+string(comp)] += cpu
			}
		}
	}
	if cpu, err := processCPU(os.Getpid()); err == nil {
		out["bench"] = cpu
	}
	return out
}
