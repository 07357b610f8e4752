// Command localcluster runs a detached local federation (a host cluster and
// member clusters as etcd, kube-apiserver and kube-controller-manager
// processes on loopback) for development, and stops it again.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubefed-io/kubefed/test/localcluster"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "localcluster",
		Short:         "Run a local KubeFed host cluster and member clusters as plain processes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	dir := filepath.Join(os.TempDir(), "kubefed-localcluster")
	root.PersistentFlags().StringVar(&dir, "dir", dir, "work directory holding data, logs, pid files and the kubeconfig")
	root.AddCommand(newUpCommand(&dir), newDownCommand(&dir), newStatusCommand(&dir))
	return root
}

func newUpCommand(dir *string) *cobra.Command {
	var members int
	var binDir string
	var timeout time.Duration
	var nodes localcluster.NodeOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start host and member clusters in the background",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if members < 0 {
				return fmt.Errorf("--members must be >= 0, got %d", members)
			}
			names := []string{"host"}
			for i := 1; i <= members; i++ {
				names = append(names, "member"+strconv.Itoa(i))
			}
			// Ctrl-C during start cancels it, and Start then stops what
			// it had started instead of leaving half a federation.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fed, err := localcluster.Start(ctx, localcluster.Options{
				BinDir:       binDir,
				WorkDir:      *dir,
				Clusters:     names,
				Detach:       true,
				Out:          cmd.ErrOrStderr(),
				StartTimeout: timeout,
				Nodes:        nodes,
			})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "kubeconfig: %s\n", fed.KubeconfigPath)
			for _, c := range fed.Clusters {
				fmt.Fprintf(out, "  kubectl --kubeconfig %s --context %s get namespaces   # %s\n", fed.KubeconfigPath, c.Context, c.Server)
			}
			fmt.Fprintf(out, "stop with: go run ./hack/localcluster down --dir %s\n", fed.WorkDir)
			return nil
		},
	}
	cmd.Flags().IntVar(&members, "members", 2, "number of member clusters (named member1..memberN)")
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager (default $"+localcluster.BinDirEnv+" or <repo>/bin)")
	cmd.Flags().DurationVar(&timeout, "timeout", localcluster.DefaultStartTimeout, "give up starting after this long")
	cmd.Flags().IntVar(&nodes.Count, "nodes", 3, "simulated nodes (kwok) per member, scheduled onto by a kube-scheduler; 0 for none")
	cmd.Flags().StringVar(&nodes.CPU, "node-cpu", "2", "CPU capacity of each node")
	cmd.Flags().StringVar(&nodes.Memory, "node-memory", "4Gi", "memory capacity of each node")
	cmd.Flags().IntVar(&nodes.Pods, "node-pods", 110, "pod capacity of each node")
	cmd.Flags().StringVar(&nodes.Region, "node-region", "", "topology.kubernetes.io/region of the nodes (default region-<member>)")
	cmd.Flags().StringSliceVar(&nodes.Zones, "node-zones", nil, "topology.kubernetes.io/zone values spread over the nodes (default <region>-a,<region>-b)")
	return cmd
}

func newDownCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the federation recorded in --dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(*dir); err != nil {
				return fmt.Errorf("no federation directory: %w", err)
			}
			if err := localcluster.StopFromDir(*dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped every localcluster process recorded in %s\n", *dir)
			return nil
		},
	}
}

func newStatusCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the processes and readiness of the federation in --dir; exits 1 unless all is up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fed, err := localcluster.Load(*dir)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			healthy := true
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLUSTER\tSERVER\tREADY\tETCD\tAPISERVER\tCONTROLLER-MANAGER")
			for _, st := range fed.Status(ctx) {
				ready := "yes"
				if st.ReadyErr != nil {
					ready, healthy = "no", false
				}
				row := []any{st.Name, st.Server, ready}
				for _, p := range st.Processes {
					cell := "stopped"
					if p.Running {
						cell = "pid " + strconv.Itoa(p.PID)
					} else {
						healthy = false
					}
					row = append(row, cell)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row...)
			}
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("writing status: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kubeconfig: %s\n", fed.KubeconfigPath)
			if !healthy {
				return errors.New("federation is not fully up (component logs are in " + fed.WorkDir + "/<cluster>/)")
			}
			return nil
		},
	}
}
