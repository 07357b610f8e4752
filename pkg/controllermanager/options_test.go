package controllermanager

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestOptionsFlagsAndValidation(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--kube-api-qps=50", "--kube-api-burst=80", "--unschedulable-threshold=15s", "--capacity-hold=2m"}); err != nil {
		t.Fatal(err)
	}
	if o.KubeAPIQPS != 50 || o.KubeAPIBurst != 80 {
		t.Errorf("flags parsed to qps %v burst %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if o.UnschedulableThreshold != 15*time.Second || o.CapacityHold != 2*time.Minute {
		t.Errorf("flags parsed to unschedulable threshold %v, capacity hold %v", o.UnschedulableThreshold, o.CapacityHold)
	}

	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"zero qps", func(o *Options) { o.KubeAPIQPS = 0 }, "--kube-api-qps must be greater than 0"},
		{"negative burst", func(o *Options) { o.KubeAPIBurst = -1 }, "--kube-api-burst must be at least 1"},
		{"webhook port", func(o *Options) { o.WebhookPort = 70000 }, "--webhook-port must be between 0 and 65535"},
		{"unschedulable threshold", func(o *Options) { o.UnschedulableThreshold = 0 }, "--unschedulable-threshold must be greater than 0"},
		{"capacity hold", func(o *Options) { o.CapacityHold = -time.Second }, "--capacity-hold must be greater than 0"},
		{"scope", func(o *Options) { o.Scope = "cluster" }, `--scope must be Cluster or Namespaced, got "cluster"`},
		{"peers without scale-out", func(o *Options) { o.PeerBindAddress = "127.0.0.1:8444" }, "--peer-bind-address needs --scale-out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.change(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
