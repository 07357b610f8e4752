package kubefedconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestResolveDefaults(t *testing.T) {
	s, err := Resolve(corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped})
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Scope: corev1beta1.ClusterScoped, AvailableDelay: 20 * time.Second, UnavailableDelay: time.Minute,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 5 * time.Second,
		HealthCheckPeriod: 10 * time.Second, HealthCheckTimeout: 3 * time.Second, FailureThreshold: 3,
		SuccessThreshold: 1, SyncWorkers: 16, AdoptResources: true, NotReadyClusterDeletionTimeout: 5 * time.Minute, StatusWorkers: 8,
		OriginalResourceLock: corev1beta1.LeasesResourceLock,
	}
	got := *s
	got.FeatureGates = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for gate, on := range s.FeatureGates {
		if !on {
			t.Errorf("gate %s is off by default", gate)
		}
	}
}

func d(s string) *metav1.Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: v}
}

func TestResolveRejects(t *testing.T) {
	cases := []struct {
		name string
		spec corev1beta1.KubeFedConfigSpec
		want string
	}{
		{"unknown scope", corev1beta1.KubeFedConfigSpec{Scope: "Galaxy"}, "spec.scope"},
		{"lease not above renew", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			LeaderElect: &corev1beta1.LeaderElectConfig{LeaseDuration: d("10s"), RenewDeadline: d("10s")}},
			"leaseDuration (10s) must be greater than renewDeadline (10s)"},
		{"renew not above 1.2 retry", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			LeaderElect: &corev1beta1.LeaderElectConfig{RenewDeadline: d("6s"), RetryPeriod: d("5s")}},
			"1.2 × retryPeriod"},
		{"zero period", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			ClusterHealthCheck: &corev1beta1.ClusterHealthCheckConfig{Period: d("0s")}},
			"spec.clusterHealthCheck.period: must be a positive duration"},
		{"zero threshold", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			ClusterHealthCheck: &corev1beta1.ClusterHealthCheckConfig{FailureThreshold: ptr.To[int64](0)}},
			"spec.clusterHealthCheck.failureThreshold: must be at least 1"},
		{"unknown gate", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			FeatureGates: []corev1beta1.FeatureGatesConfig{{Name: "Teleport", Configuration: "Enabled"}}},
			`unknown feature gate "Teleport"`},
		{"gate twice", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			FeatureGates: []corev1beta1.FeatureGatesConfig{
				{Name: corev1beta1.PushReconciler, Configuration: "Enabled"},
				{Name: corev1beta1.PushReconciler, Configuration: "Disabled"}}},
			"listed twice"},
		{"bad adoption", corev1beta1.KubeFedConfigSpec{Scope: "Cluster",
			SyncController: &corev1beta1.SyncControllerConfig{AdoptResources: "Sometimes"}},
			"spec.syncController.adoptResources"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestResolveGatesAndAliases(t *testing.T) {
	s, err := Resolve(corev1beta1.KubeFedConfigSpec{
		Scope:        corev1beta1.NamespaceScoped,
		LeaderElect:  &corev1beta1.LeaderElectConfig{ResourceLock: corev1beta1.ConfigMapsResourceLock},
		FeatureGates: []corev1beta1.FeatureGatesConfig{{Name: corev1beta1.SchedulerPreferences, Configuration: corev1beta1.Disabled}},
		SyncController: &corev1beta1.SyncControllerConfig{
			AdoptResources: corev1beta1.Disabled, MaxConcurrentReconciles: ptr.To[int64](1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.FeatureGates[corev1beta1.SchedulerPreferences] || !s.FeatureGates[corev1beta1.PushReconciler] {
		t.Errorf("gates %v", s.FeatureGates)
	}
	if s.AdoptResources || s.SyncWorkers != 1 || s.OriginalResourceLock != corev1beta1.ConfigMapsResourceLock {
		t.Errorf("settings %+v", s)
	}
}
