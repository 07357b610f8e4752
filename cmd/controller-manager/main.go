// Command controller-manager runs the KubeFed control plane on the host
// cluster, and with the subcommand agent a Pull-mode member's agent.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/memlimit"
	"github.com/kubefed-io/kubefed/pkg/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		agent(os.Args[2:])
		return
	}
	opts := controllermanager.DefaultOptions()
	var showVersion *bool
	parseFlags("controller-manager", os.Args[1:], func(fs *pflag.FlagSet) {
		opts.AddFlags(fs)
		showVersion = fs.Bool("version", false, "Print the version and exit.")
	})
	if *showVersion {
		fmt.Println(version.Get())
		return
	}
	if err := controllermanager.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "controller-manager:", err)
		os.Exit(1)
	}
}

// agent runs `controller-manager agent`: the agent of a Pull-mode member,
// which runs in the member and propagates to it from the host.
func agent(args []string) {
	opts := controllermanager.DefaultAgentOptions()
	parseFlags("controller-manager agent", args, opts.AddFlags)
	if err := controllermanager.RunAgent(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "controller-manager agent:", err)
		os.Exit(1)
	}
}

// parseFlags parses args into the flags add registers and the logging
// flags, and sets up the logger.
func parseFlags(name string, args []string, add func(*pflag.FlagSet)) {
	fs := pflag.NewFlagSet(name, pflag.ExitOnError)
	add(fs)
	ratio := fs.Float64("memory-limit-ratio", 0.9, "Set the Go runtime's soft memory limit to this fraction of the container's (cgroup's) memory limit, so that garbage is collected harder near it instead of the container being OOM-killed; 0 leaves it unset. GOMEMLIMIT, when set, wins.")
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("logging", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	_ = fs.Parse(args)
	if err := noArguments(name, fs.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := memlimit.ValidateRatio(*ratio); err != nil {
		fmt.Fprintf(os.Stderr, "%s: --memory-limit-ratio: %v\n", name, err)
		os.Exit(2)
	}
	log := ctrl.Log.WithName("setup")
	switch soft, err := memlimit.Apply(*ratio); {
	case err != nil:
		log.Error(err, "Reading the container's memory limit; the Go runtime's soft limit is left unset")
	case soft > 0:
		log.Info("Go runtime soft memory limit set from the container's", "bytes", soft, "ratio", *ratio)
	}
}

// noArguments refuses what is left after the flags: pflag takes arguments
// between them, and a misspelled or misplaced subcommand (agnet, or agent
// after a flag) would otherwise run the control plane.
func noArguments(name string, rest []string) error {
	if len(rest) == 0 {
		return nil
	}
	hint := ""
	if name == "controller-manager" && slices.Contains(rest, "agent") {
		hint = "; the agent's subcommand comes first: controller-manager agent [flags]"
	}
	return fmt.Errorf("%s: unexpected argument %q: it takes flags only%s", name, rest[0], hint)
}
