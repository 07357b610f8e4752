// Command kubefedctl is the KubeFed command line; everything but process
// setup lives in pkg/kubefedctl.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubefed-io/kubefed/pkg/kubefedctl"
)

func main() {
	// Ctrl-C cancels the waits for tokens and namespace deletion cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := kubefedctl.NewRootCommand(kubefedctl.IOStreams{Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
