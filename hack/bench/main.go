// Command bench measures propagation on real local clusters: how fast and
// at what cost federated objects reach every member, and how that compares
// with the physical limit of writing the same objects straight into the
// members with the same client settings. It is a program, not a timed test,
// so that anyone can rerun it and compare the table with docs/performance.md.
//
// It starts a host and -members member clusters (test/localcluster), installs
// the CRDs and the default FederatedTypeConfigs, creates a KubeFedConfig with
// the tuning given on the command line, starts bin/controller-manager and
// joins the members, then runs the scenarios in order:
//
//	create (rate)   N FederatedDeployments and N FederatedConfigMaps at -rate objects/s
//	update          one template field of all 2N, as fast as possible
//	override        one cluster's override of all 2N; only that cluster may be written
//	steady          writes during -idle with nothing to do, then across a controller restart
//	delete          all 2N, until gone from every member and their finalizers released
//	create (max)    2N new objects as fast as possible
//	limit create, limit update, limit delete
//	                the same objects written straight into every member with the
//	                member client settings of the controller-manager
//	isolation       three waves of -isolation-n objects each as fast as possible:
//	                every member healthy, the last member behind a proxy adding
//	                1 s to every request, and the last member's apiserver stopped
//	                with SIGSTOP, -isolation-rounds times (default 3); throughput
//	                and p99 to the other members as a ratio to the healthy
//	                waves, of the medians over the rounds
//	pull            two waves of -isolation-n objects each as fast as possible:
//	                every member in push mode, then the last member joined in
//	                pull mode with its agent running (a local process): the
//	                pull member's throughput and p99 beside the push members'
//	                and the limit's, and the host writes pull mode adds
//	flip            -flip-n objects on the last member alone; then a wave of
//	                -isolation-n objects at -rate to the others, once as is and
//	                once while the last member turns NotReady and Ready again:
//	                p99 to the others as a ratio to the wave without the flip;
//	                -flip-mode pause flips it with SIGSTOP/SIGCONT instead of
//	                a restart of its kube-apiserver, -flip-mode hold by holding
//	                everything on a proxy the member is reached through (its
//	                processes run on: the control plane's share of the flip
//	                alone); a flip shorter than
//	                -unavailable-delay (default 60s) re-plans none of the
//	                member's objects, a longer one all of them, twice
//	scale-out       a wave of -scale-n objects with the controller-manager,
//	                updated, then, deleted and replaced by 3 replicas with
//	                --scale-out, the same wave again (updated too), and one
//	                during which a replica is killed: peak RSS per replica and
//	                throughput as ratios to one replica's, time to converge and
//	                copies created twice
//
// Presence in the members is observed with watches (informers) on every
// member, never by polling; latency runs from the moment the bench sends a
// write to the moment a member's watch shows its effect.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// options are the command-line settings of one run.
type options struct {
	members          int
	nodes            int
	nodeCPU          string
	nodeMemory       string
	n                int
	rate             float64
	workers          int
	syncWorkers      int
	statusCollection bool
	finalizerPolicy  bool
	idle             time.Duration
	waveTimeout      time.Duration
	out              string
	workDir          string
	keep             bool
	controllerMgr    string
	cmArgs           string
	apiserverArgs    string
	scenarios        map[string]bool
	isolationN       int
	scaleN           int
	peers            bool
	flipN            int
	flipMode         string
	flipPairs        int
	flipDown         time.Duration
	isolationRounds  int
	unavailableDelay time.Duration
}

// scenarioFlags are the names -scenarios accepts, in the order they run.
// update, override, steady and delete work on the objects of create-rate.
var scenarioFlags = []string{"create-rate", "update", "override", "steady", "delete", "create-max", "limit", "isolation", "pull", "flip", "scale-out"}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.members, "members", 3, "member clusters to start (1-10); the host is not joined")
	fs.IntVar(&o.nodes, "nodes", 0, "simulated nodes (kube-scheduler and kwok) per member, so that the Deployments' pods really run; 0 (the default) for none")
	fs.StringVar(&o.nodeCPU, "node-cpu", "8", "CPU capacity of each simulated node")
	fs.StringVar(&o.nodeMemory, "node-memory", "32Gi", "memory capacity of each simulated node")
	fs.IntVar(&o.n, "n", 1000, "FederatedDeployments per wave, and as many FederatedConfigMaps")
	fs.Float64Var(&o.rate, "rate", 20, "federated objects created per second in the fixed-rate create wave")
	fs.IntVar(&o.workers, "workers", 16, "concurrent requests of the load generator")
	fs.IntVar(&o.isolationN, "isolation-n", 200, "FederatedDeployments, and as many FederatedConfigMaps, per isolation wave")
	fs.IntVar(&o.flipN, "flip-n", 10000, "federated objects on the member that flips NotReady and Ready")
	fs.StringVar(&o.flipMode, "flip-mode", flipRestart, "how the flip scenario makes the member NotReady: restart (stop and start its kube-apiserver), pause (SIGSTOP, then SIGCONT) or hold (a proxy in front of it passes nothing, then everything)")
	fs.IntVar(&o.isolationRounds, "isolation-rounds", 3, "rounds of the healthy, slow and hung isolation waves; the ratios are of their medians (one wave's throughput and p99 move with whatever else the machine does)")
	fs.IntVar(&o.flipPairs, "flip-pairs", 3, "waves without and with the flip, alternated; the ratio is of their median p99s (one pair's p99 moves with whatever else the machine does)")
	fs.DurationVar(&o.flipDown, "flip-down", 0, "how long the flipping member is kept NotReady once the control plane shows it so; 0 brings it back at once, and how long it stays NotReady then depends on the health probes (a flip past -unavailable-delay needs a longer one)")
	fs.DurationVar(&o.unavailableDelay, "unavailable-delay", 0, "KubeFedConfig controllerDuration.unavailableDelay: how long a member may be NotReady before its objects are planned again without it; 0 for the default (60s), which a flip shorter than it never reaches")
	fs.IntVar(&o.scaleN, "scale-n", 300, "FederatedDeployments, and as many FederatedConfigMaps, per scale-out wave")
	fs.BoolVar(&o.peers, "peers", true, "scale-out replicas reach each other (--peer-bind-address=127.0.0.1:0): one writes each object's status and events; false: each writes its own")
	fs.IntVar(&o.syncWorkers, "sync-workers", 16, "KubeFedConfig syncController.maxConcurrentReconciles")
	fs.BoolVar(&o.finalizerPolicy, "sync-finalizer-policy", true, "install config/admission/sync-finalizer.yaml as the chart does: the API server adds the sync controller's finalizer to new federated objects, not the controller-manager")
	fs.BoolVar(&o.statusCollection, "status-collection", true, "KubeFedConfig feature gate RawResourceStatusCollection")
	fs.DurationVar(&o.idle, "idle", time.Minute, "idle period of the steady-state scenario")
	fs.DurationVar(&o.waveTimeout, "wave-timeout", 30*time.Minute, "longest a wave may take before it is reported incomplete")
	// Not under .local, which the demo and clusters-up own and refuse to
	// wipe when it holds anything else.
	fs.StringVar(&o.out, "out", ".bench/results.json", "JSON results file; empty for none")
	fs.StringVar(&o.workDir, "workdir", "", "directory for the clusters' data; a fresh temporary one when empty")
	fs.BoolVar(&o.keep, "keep", false, "leave the work directory (logs, etcd data) after the run")
	fs.StringVar(&o.controllerMgr, "cm-binary", "", "controller-manager binary under test; bin/controller-manager when empty")
	fs.StringVar(&o.cmArgs, "cm-args", "", "extra controller-manager flags, space-separated, such as --pprof-addr=127.0.0.1:6060 to profile a run (scale-out replicas get them too: use port 0 there)")
	fs.StringVar(&o.apiserverArgs, "apiserver-args", "", "extra kube-apiserver flags of every cluster, space-separated, such as --profiling=true to read /debug/pprof of the host while a scenario runs")
	scenarios := fs.String("scenarios", strings.Join(scenarioFlags, ","),
		"comma-separated scenarios to run; update, override, steady and delete need create-rate")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.scenarios = map[string]bool{}
	for _, s := range strings.Split(*scenarios, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(scenarioFlags, s) {
			return o, fmt.Errorf("-scenarios: unknown scenario %q; known: %s", s, strings.Join(scenarioFlags, ","))
		}
		o.scenarios[s] = true
	}
	switch {
	case o.nodes < 0:
		return o, fmt.Errorf("-nodes must not be negative, got %d", o.nodes)
	case o.members < 1 || o.members > 10:
		return o, fmt.Errorf("-members must be 1..10, got %d", o.members)
	case o.n < 1 || o.isolationN < 1 || o.scaleN < 2 || o.flipN < 2:
		return o, fmt.Errorf("-n and -isolation-n must be positive and -scale-n at least 2, got %d, %d and %d", o.n, o.isolationN, o.scaleN)
	case o.isolationRounds < 1:
		return o, fmt.Errorf("-isolation-rounds must be at least 1, got %d", o.isolationRounds)
	case o.flipPairs < 1:
		return o, fmt.Errorf("-flip-pairs must be at least 1, got %d", o.flipPairs)
	case o.flipDown < 0:
		return o, fmt.Errorf("-flip-down must not be negative, got %v", o.flipDown)
	case o.flipMode != flipRestart && o.flipMode != flipPause && o.flipMode != flipHold:
		return o, fmt.Errorf("-flip-mode must be %s, %s or %s, got %q", flipRestart, flipPause, flipHold, o.flipMode)
	case o.rate <= 0:
		return o, fmt.Errorf("-rate must be positive, got %v", o.rate)
	case o.workers < 1 || o.syncWorkers < 1:
		return o, errors.New("-workers and -sync-workers must be positive")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// The bench's controller-runtime clients log nothing worth reading; an
	// unset logger had controller-runtime print a stack trace 30 s in.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	env, err := setUp(ctx, o)
	if env != nil {
		defer env.tearDown()
	}
	if err != nil {
		return err
	}
	report := &report{Machine: describeMachine(), Options: o.summary()}
	r := &runner{env: env, o: o, report: report}
	if err := r.runAll(ctx); err != nil {
		// What was measured is still worth printing.
		report.Error = err.Error()
	}
	report.finish()
	report.print(os.Stdout)
	if o.out != "" {
		if werr := report.writeJSON(o.out); werr != nil {
			return errors.Join(err, werr)
		}
		fmt.Printf("\nresults written to %s\n", o.out)
	}
	return err
}
