package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// latency summarizes durations in milliseconds.
type latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50ms"`
	P90   float64 `json:"p90ms"`
	P99   float64 `json:"p99ms"`
	Max   float64 `json:"maxms"`
}

func summarize(ds []time.Duration) *latency {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		// Nearest rank: the smallest value at or above p of the samples.
		i := int(float64(len(ds))*p+0.999999) - 1
		i = min(max(i, 0), len(ds)-1)
		return float64(ds[i].Microseconds()) / 1000
	}
	return &latency{Count: len(ds), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: float64(ds[len(ds)-1].Microseconds()) / 1000}
}

// stageSplit is the latency of some copies before and after the engine
// took their federated object up.
type stageSplit struct {
	Copies    int      `json:"copies"`
	ToPlanned *latency `json:"sendToFinalizer"`
	ToMember  *latency `json:"finalizerToMember"`
}

// result is one scenario's measurements.
type result struct {
	Scenario string `json:"scenario"`
	// Objects are the objects written per wave: federated objects on the
	// host, or objects per member in the physical-limit scenarios.
	Objects  int `json:"objects"`
	Clusters int `json:"clusters"`
	// RequestedRate is the fixed send rate in objects/s; 0 is as fast as possible.
	RequestedRate float64 `json:"requestedRate"`
	SendRate      float64 `json:"sendRate"`
	// Seconds runs from the first write sent to the last effect seen.
	Seconds float64 `json:"seconds"`
	// Throughput is objects×clusters whose effect was seen, per second.
	Throughput float64  `json:"objectsClustersPerSecond"`
	RatioLimit float64  `json:"ratioToLimit,omitempty"`
	PerCluster *latency `json:"latencyPerCluster,omitempty"`
	// ByCluster is each member's share: its copies per second, from the
	// wave's first write to its last copy, and their latency.
	ByCluster   map[string]*clusterResult `json:"byCluster,omitempty"`
	AllClusters *latency                  `json:"latencyAllClusters,omitempty"`
	Released    *latency                  `json:"latencyFinalizerReleased,omitempty"`
	// SlowestStages splits the slowest tenth of copies' latency where the
	// engine's finalizer appeared on the host; P99BySecond is the p99 of
	// copies by the second of the wave their object was sent in.
	SlowestStages *stageSplit `json:"slowestStages,omitempty"`
	P99BySecond   []float64   `json:"p99BySecondSent,omitempty"`
	Incomplete    int         `json:"incomplete"`
	Errors        int         `json:"errors"`
	// MemberWrites are the writes of copies (deployments, configmaps,
	// namespaces; not status) each member's apiserver served.
	MemberWrites map[string]int `json:"memberWrites"`
	// HostWrites are the controller-manager's writes of federated
	// objects, status included; the bench's own writes are subtracted.
	HostWrites int `json:"hostWrites"`
	HostEvents int `json:"hostEvents"`
	// HostOther are the host's writes of other resources but Leases.
	HostOther int `json:"hostOtherWrites"`
	// HostCost is the engine's host writes per federated object.
	HostCost *hostWrites    `json:"hostWritesPerObject,omitempty"`
	Counters map[string]int `json:"counters"`
	Cost     cost           `json:"cost"`
	// Replicas are the cost of each controller-manager replica when
	// several share the members; Cost is the first one's.
	Replicas []cost `json:"replicas,omitempty"`
	// Duplicates are the copies created more than once (scale-out with a
	// replica killed).
	Duplicates *int     `json:"duplicatedCreates,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// clusterResult is one member's share of a wave.
type clusterResult struct {
	Throughput float64  `json:"objectsPerSecond"`
	Latency    *latency `json:"latency,omitempty"`
}

// hostWrites are the engine's host writes per federated object of a wave:
// of the objects themselves (finalizers; the bench's own writes are not
// counted), of their status, and events; and the share of status writes
// refused with a 409 conflict.
type hostWrites struct {
	PerObject       float64 `json:"total"`
	Spec            float64 `json:"object"`
	Status          float64 `json:"status"`
	Events          float64 `json:"events"`
	StatusConflicts float64 `json:"statusConflicts"`
}

type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel"`
	MemoryGiB string `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	Date      string `json:"date"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = fmt.Sprintf("%.1f", kb/(1<<20))
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

type report struct {
	Machine           machine           `json:"machine"`
	Options           map[string]string `json:"options"`
	ControllerManager string            `json:"controllerManager"`
	Results           []*result         `json:"results"`
	// Ratios are the headline ratios, each printed on a line of its own.
	Ratios []ratio `json:"ratios,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// ratio is one headline number: ours over the limit or the reference run.
type ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

func (o options) summary() map[string]string {
	return map[string]string{
		"members": fmt.Sprint(o.members), "n": fmt.Sprint(o.n), "rate": fmt.Sprint(o.rate),
		"workers": fmt.Sprint(o.workers), "syncWorkers": fmt.Sprint(o.syncWorkers),
		"statusCollection": fmt.Sprint(o.statusCollection), "nodes": fmt.Sprint(o.nodes), "idle": o.idle.String(), "isolationN": fmt.Sprint(o.isolationN),
		"flipN": fmt.Sprint(o.flipN), "flipMode": o.flipMode, "flipDown": o.flipDown.String(),
	}
}

func (r *report) add(res *result) { r.Results = append(r.Results, res) }

// complete reports whether the wave saw every effect it expected and no
// write of it failed.
func (res *result) complete() bool { return res.Incomplete == 0 && res.Errors == 0 }

func (r *report) find(scenario string) *result {
	for _, res := range r.Results {
		if res.Scenario == scenario {
			return res
		}
	}
	return nil
}

// limitOf pairs each propagation scenario with its physical limit.
var limitOf = map[string]string{
	scenarioCreateMax: scenarioLimitCreate,
	scenarioUpdate:    scenarioLimitUpdate,
	scenarioDelete:    scenarioLimitDelete,
}

// ratioNames name the ratios to the physical limit in the ratio lines.
var ratioNames = map[string]string{scenarioCreateMax: "create", scenarioUpdate: "update", scenarioDelete: "delete"}

// finish computes the ratios to the physical limit, of waves that saw
// every effect they expected on both sides: a wave whose copies did not
// all arrive ends at the last one seen, and its throughput would not be
// the wave's.
func (r *report) finish() {
	for _, ours := range []string{scenarioCreateMax, scenarioUpdate, scenarioDelete} {
		a, b := r.find(ours), r.find(limitOf[ours])
		if a != nil && b != nil && b.Throughput > 0 && a.complete() && b.complete() {
			a.RatioLimit = a.Throughput / b.Throughput
			r.Ratios = append(r.Ratios, ratio{Name: ratioNames[ours], Value: a.RatioLimit})
		}
	}
}

func ms(l *latency, pick func(*latency) float64) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", pick(l))
}

// processColumns order the CPU-by-process table.
var processColumns = []string{"controller-manager", "host/kube-apiserver", "host/etcd", "host/kube-controller-manager",
	"members/kube-apiserver", "members/etcd", "members/kube-controller-manager", "bench"}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nmachine: %d CPUs (%s), %s GiB, kernel %s, %s\n", r.Machine.CPUs, r.Machine.CPUModel, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.Go)
	nodes := r.Options["nodes"]
	if nodes == "" {
		nodes = "0" // a run from before -nodes
	}
	fmt.Fprintf(w, "run: members=%s nodes/member=%s n=%s rate=%s/s workers=%s syncWorkers=%s statusCollection=%s\n",
		r.Options["members"], nodes, r.Options["n"], r.Options["rate"], r.Options["workers"], r.Options["syncWorkers"], r.Options["statusCollection"])
	if r.ControllerManager != "" {
		fmt.Fprintf(w, "controller-manager: %s\n", r.ControllerManager)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tobj×cl\tsec\tobj×cl/s\tvs limit\tp50 ms\tp90 ms\tp99 ms\tmax ms\tall-members p99\tmember writes\thost writes\tCPU s\tpeak RSS MiB\tmachine busy\t")
	for _, res := range r.Results {
		ratio := "-"
		if res.RatioLimit > 0 {
			ratio = fmt.Sprintf("%.2f", res.RatioLimit)
		}
		tput := "-"
		if res.Throughput > 0 {
			tput = fmt.Sprintf("%.0f", res.Throughput)
		}
		memberWrites := 0
		for _, n := range res.MemberWrites {
			memberWrites += n
		}
		pick := func(f func(*latency) float64) string { return ms(res.PerCluster, f) }
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%.0f\t%.0f%%\t\n",
			res.Scenario, res.Objects*res.Clusters, res.Seconds, tput, ratio,
			pick(func(l *latency) float64 { return l.P50 }), pick(func(l *latency) float64 { return l.P90 }),
			pick(func(l *latency) float64 { return l.P99 }), pick(func(l *latency) float64 { return l.Max }),
			ms(res.AllClusters, func(l *latency) float64 { return l.P99 }),
			memberWrites, res.HostWrites, res.Cost.CPUSeconds, res.Cost.PeakRSSMiB, 100*res.Cost.MachineBusy)
	}
	_ = tw.Flush()

	fmt.Fprintln(w, "\nCPU seconds by process (members summed):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\t")
	for _, p := range processColumns {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintln(tw)
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t", res.Scenario)
		for _, p := range processColumns {
			fmt.Fprintf(tw, "%.1f\t", res.Cost.ByProcess[p])
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	for _, res := range r.Results {
		if len(res.Replicas) > 0 {
			var parts []string
			for i, c := range res.Replicas {
				parts = append(parts, fmt.Sprintf("replica %d: CPU %.1fs, peak RSS %.0f MiB (%.0f anonymous)", i, c.CPUSeconds, c.PeakRSSMiB, c.PeakAnonMiB))
			}
			fmt.Fprintf(w, "%s: %s\n", res.Scenario, strings.Join(parts, "; "))
		}
		for _, n := range res.Notes {
			fmt.Fprintf(w, "%s: %s\n", res.Scenario, n)
		}
		if res.Incomplete > 0 || res.Errors > 0 {
			fmt.Fprintf(w, "%s: %d expected effects not seen, %d failed writes\n", res.Scenario, res.Incomplete, res.Errors)
		}
	}
	fmt.Fprintln(w, "\nhost writes per federated object (object, status, events; status writes refused with 409):")
	for _, res := range r.Results {
		if c := res.HostCost; c != nil && res.Objects > 0 && !strings.HasPrefix(res.Scenario, "limit") && !strings.HasPrefix(res.Scenario, "steady") {
			fmt.Fprintf(w, "cost: %s %.2f (%.2f, %.2f, %.2f; conflicts %.1f%%)\n", res.Scenario, c.PerObject, c.Spec, c.Status, c.Events, 100*c.StatusConflicts)
		}
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w)
	}
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "ratio to limit: %s %.2f\n", q.Name, q.Value)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "\nthe run stopped early: %s\n", r.Error)
	}
}

func (r *report) writeJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
