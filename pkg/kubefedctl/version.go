package kubefedctl

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubefed-io/kubefed/pkg/version"
)

// versionOutput is what `version -o json|yaml` prints. It has kubectl's
// shape, so that a control plane version can join the client's later.
type versionOutput struct {
	ClientVersion version.Info `json:"clientVersion"`
}

// kubefedVersionLine is the line KubeFed's kubefedctl printed, which
// scripts parse: Go's %#v of its version.Info. What a build does not say
// (the build date; the revision of a build outside git) is "unknown", as
// in KubeFed's builds that were not stamped.
func kubefedVersionLine(i version.Info) string {
	known := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	return fmt.Sprintf("kubefedctl version: version.Info{Version:%q, GitCommit:%q, GitTreeState:%q, BuildDate:%q, GoVersion:%q, Compiler:%q, Platform:%q}\n",
		i.Version, known(i.Revision), known(i.TreeState), "unknown", i.GoVersion, runtime.Compiler, i.Platform)
}

func newVersionCommand(streams IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the kubefedctl version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				fmt.Fprint(streams.Out, kubefedVersionLine(info))
			case "json":
				data, err := json.MarshalIndent(versionOutput{ClientVersion: info}, "", "  ")
				if err != nil {
					return fmt.Errorf("encode version: %w", err)
				}
				fmt.Fprintln(streams.Out, string(data))
			case "yaml":
				data, err := yaml.Marshal(versionOutput{ClientVersion: info})
				if err != nil {
					return fmt.Errorf("encode version: %w", err)
				}
				fmt.Fprint(streams.Out, string(data))
			default:
				return fmt.Errorf("invalid --output %q: must be json or yaml", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml. Defaults to the line KubeFed's kubefedctl printed.")
	return cmd
}
