// Command controller-manager runs the KubeFed control plane on the host cluster.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubefed-io/kubefed/pkg/controllermanager"
	"github.com/kubefed-io/kubefed/pkg/version"
)

func main() {
	opts := controllermanager.DefaultOptions()
	fs := pflag.NewFlagSet("controller-manager", pflag.ExitOnError)
	opts.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("logging", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	_ = fs.Parse(os.Args[1:])
	if *showVersion {
		fmt.Println(version.Get())
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := controllermanager.Run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "controller-manager:", err)
		os.Exit(1)
	}
}
