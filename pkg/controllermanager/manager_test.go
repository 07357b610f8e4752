package controllermanager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
)

// At the start a KubeFedConfig that cannot be loaded fails the start; after
// a change, the load is tried again until it succeeds, so that one failed
// read does not end every replica at once.
func TestAReloadIsRetriedUntilTheConfigLoads(t *testing.T) {
	failures := 2
	load := func() (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error) {
		if failures > 0 {
			failures--
			return nil, nil, errors.New("the server is currently unable to handle the request")
		}
		return &corev1beta1.KubeFedConfig{}, &kubefedconfig.Settings{}, nil
	}
	ctx := context.Background()
	if _, _, err := loadConfig(ctx, false, time.Millisecond, logr.Discard(), load); err == nil {
		t.Fatal("a failure at the start was not returned")
	}
	kfc, settings, err := loadConfig(ctx, true, time.Millisecond, logr.Discard(), load)
	if err != nil || kfc == nil || settings == nil || failures != 0 {
		t.Fatalf("a reload: %v, %v, %v; %d failures left", kfc, settings, err, failures)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	failures = 1
	if kfc, _, err := loadConfig(stopped, true, time.Millisecond, logr.Discard(), load); kfc != nil || err != nil {
		t.Fatalf("a reload as the process stops: %v, %v", kfc, err)
	}
}
