package kubefedconfig

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// Settings are the effective values of a KubeFedConfig.
type Settings struct {
	Scope corev1beta1.Scope

	AvailableDelay   time.Duration
	UnavailableDelay time.Duration

	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	FeatureGates map[corev1beta1.FeatureGate]bool

	HealthCheckPeriod  time.Duration
	HealthCheckTimeout time.Duration
	FailureThreshold   int
	SuccessThreshold   int
	SyncWorkers        int
	AdoptResources     bool
	// NotReadyClusterDeletionTimeout bounds how long a deletion waits for
	// member clusters that are not Ready.
	NotReadyClusterDeletionTimeout time.Duration
	StatusWorkers                  int
	OriginalResourceLock           corev1beta1.ResourceLockType
}

// defaultGates are the gates' values when a KubeFedConfig does not list them.
// Raw status collection is on, unlike KubeFed: federated objects are far more
// useful when they say how their members are doing.
var defaultGates = map[corev1beta1.FeatureGate]bool{
	corev1beta1.PushReconciler:               true,
	corev1beta1.SchedulerPreferences:         true,
	corev1beta1.RawResourceStatusCollection:  true,
	corev1beta1.CrossClusterServiceDiscovery: true,
	corev1beta1.FederatedIngress:             true,
}

// New returns a KubeFedConfig with every default filled, as the control
// plane creates it when none exists.
func New(namespace string, scope corev1beta1.Scope) *corev1beta1.KubeFedConfig {
	cfg := &corev1beta1.KubeFedConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1beta1.GroupVersion.String(), Kind: "KubeFedConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: namespace},
		Spec:       corev1beta1.KubeFedConfigSpec{Scope: scope},
	}
	SetDefaults(&cfg.Spec)
	return cfg
}

// DefaultNotReadyClusterDeletionTimeout is how long a deletion waits for a
// member cluster that is not Ready unless the KubeFedConfig says otherwise.
const DefaultNotReadyClusterDeletionTimeout = 5 * time.Minute

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// SetDefaults fills every unset field with the value the CRD schema defaults it to.
func SetDefaults(spec *corev1beta1.KubeFedConfigSpec) {
	if spec.ControllerDuration == nil {
		spec.ControllerDuration = &corev1beta1.DurationConfig{}
	}
	cd := spec.ControllerDuration
	if cd.AvailableDelay == nil {
		cd.AvailableDelay = duration(20 * time.Second)
	}
	if cd.UnavailableDelay == nil {
		cd.UnavailableDelay = duration(60 * time.Second)
	}

	if spec.LeaderElect == nil {
		spec.LeaderElect = &corev1beta1.LeaderElectConfig{}
	}
	le := spec.LeaderElect
	if le.LeaseDuration == nil {
		le.LeaseDuration = duration(15 * time.Second)
	}
	if le.RenewDeadline == nil {
		le.RenewDeadline = duration(10 * time.Second)
	}
	if le.RetryPeriod == nil {
		le.RetryPeriod = duration(5 * time.Second)
	}
	if le.ResourceLock == "" {
		le.ResourceLock = corev1beta1.LeasesResourceLock
	}

	if spec.ClusterHealthCheck == nil {
		spec.ClusterHealthCheck = &corev1beta1.ClusterHealthCheckConfig{}
	}
	hc := spec.ClusterHealthCheck
	if hc.Period == nil {
		hc.Period = duration(10 * time.Second)
	}
	if hc.FailureThreshold == nil {
		hc.FailureThreshold = ptr.To[int64](3)
	}
	if hc.SuccessThreshold == nil {
		hc.SuccessThreshold = ptr.To[int64](1)
	}
	if hc.Timeout == nil {
		hc.Timeout = duration(3 * time.Second)
	}

	if spec.SyncController == nil {
		spec.SyncController = &corev1beta1.SyncControllerConfig{}
	}
	if spec.SyncController.MaxConcurrentReconciles == nil {
		spec.SyncController.MaxConcurrentReconciles = ptr.To[int64](16)
	}
	if spec.SyncController.AdoptResources == "" {
		spec.SyncController.AdoptResources = corev1beta1.Enabled
	}
	if spec.SyncController.NotReadyClusterDeletionTimeout == nil {
		spec.SyncController.NotReadyClusterDeletionTimeout = duration(DefaultNotReadyClusterDeletionTimeout)
	}
	if spec.StatusController == nil {
		spec.StatusController = &corev1beta1.StatusControllerConfig{}
	}
	if spec.StatusController.MaxConcurrentReconciles == nil {
		spec.StatusController.MaxConcurrentReconciles = ptr.To[int64](8)
	}
	spec.FeatureGates = defaultFeatureGates(spec.FeatureGates)
}

// defaultFeatureGates lists every gate, in the order of their names: the
// configuration given, else the default. This is what KubeFed's defaulting
// webhook stored, and what config/admission's MutatingAdmissionPolicy
// stores. A list with an unknown gate, a gate twice or one without a
// configuration is returned as it is, for validation to report.
func defaultFeatureGates(given []corev1beta1.FeatureGatesConfig) []corev1beta1.FeatureGatesConfig {
	byName := map[corev1beta1.FeatureGate]corev1beta1.Mode{}
	for _, g := range given {
		_, known := defaultGates[g.Name]
		_, twice := byName[g.Name]
		if !known || twice || g.Configuration == "" {
			return given
		}
		byName[g.Name] = g.Configuration
	}
	names := make([]corev1beta1.FeatureGate, 0, len(defaultGates))
	for name := range defaultGates {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]corev1beta1.FeatureGatesConfig, 0, len(names))
	for _, name := range names {
		mode, ok := byName[name]
		if !ok {
			mode = corev1beta1.Disabled
			if defaultGates[name] {
				mode = corev1beta1.Enabled
			}
		}
		out = append(out, corev1beta1.FeatureGatesConfig{Name: name, Configuration: mode})
	}
	return out
}

// Resolve validates a KubeFedConfig spec, after filling its defaults, and
// returns its effective settings. The error names every offending field.
func Resolve(spec corev1beta1.KubeFedConfigSpec) (*Settings, error) {
	spec = *spec.DeepCopy()
	SetDefaults(&spec)
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("spec.%s: "+format, append([]any{field}, args...)...))
	}
	positive := func(field string, d *metav1.Duration) time.Duration {
		if d.Duration <= 0 {
			bad(field, "must be a positive duration, got %s", d.Duration)
		}
		return d.Duration
	}
	atLeastOne := func(field string, n *int64) int {
		if *n < 1 {
			bad(field, "must be at least 1, got %d", *n)
		}
		return int(*n)
	}

	s := &Settings{Scope: spec.Scope, FeatureGates: map[corev1beta1.FeatureGate]bool{}}
	switch spec.Scope {
	case corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped:
	default:
		bad("scope", "must be Cluster or Namespaced, got %q", spec.Scope)
	}
	s.AvailableDelay = positive("controllerDuration.availableDelay", spec.ControllerDuration.AvailableDelay)
	s.UnavailableDelay = positive("controllerDuration.unavailableDelay", spec.ControllerDuration.UnavailableDelay)

	le := spec.LeaderElect
	s.LeaseDuration = positive("leaderElect.leaseDuration", le.LeaseDuration)
	s.RenewDeadline = positive("leaderElect.renewDeadline", le.RenewDeadline)
	s.RetryPeriod = positive("leaderElect.retryPeriod", le.RetryPeriod)
	if s.LeaseDuration <= s.RenewDeadline {
		bad("leaderElect", "leaseDuration (%s) must be greater than renewDeadline (%s)", s.LeaseDuration, s.RenewDeadline)
	}
	// client-go's leader election requires renewDeadline > 1.2 × retryPeriod.
	if s.RenewDeadline*5 <= s.RetryPeriod*6 {
		bad("leaderElect", "renewDeadline (%s) must be greater than 1.2 × retryPeriod (%s)", s.RenewDeadline, s.RetryPeriod)
	}
	switch le.ResourceLock {
	case corev1beta1.LeasesResourceLock, corev1beta1.ConfigMapsResourceLock, corev1beta1.EndpointsResourceLock,
		"configmapsleases", "endpointsleases":
		s.OriginalResourceLock = le.ResourceLock
	default:
		bad("leaderElect.resourceLock", "unknown lock %q", le.ResourceLock)
	}

	for gate, on := range defaultGates {
		s.FeatureGates[gate] = on
	}
	seen := map[corev1beta1.FeatureGate]bool{}
	for i, g := range spec.FeatureGates {
		field := fmt.Sprintf("featureGates[%d]", i)
		if _, known := defaultGates[g.Name]; !known {
			bad(field+".name", "unknown feature gate %q", g.Name)
			continue
		}
		if seen[g.Name] {
			bad(field+".name", "feature gate %q is listed twice", g.Name)
		}
		seen[g.Name] = true
		switch g.Configuration {
		case corev1beta1.Enabled:
			s.FeatureGates[g.Name] = true
		case corev1beta1.Disabled:
			s.FeatureGates[g.Name] = false
		default:
			bad(field+".configuration", "must be Enabled or Disabled, got %q", g.Configuration)
		}
	}

	hc := spec.ClusterHealthCheck
	s.HealthCheckPeriod = positive("clusterHealthCheck.period", hc.Period)
	s.HealthCheckTimeout = positive("clusterHealthCheck.timeout", hc.Timeout)
	s.FailureThreshold = atLeastOne("clusterHealthCheck.failureThreshold", hc.FailureThreshold)
	s.SuccessThreshold = atLeastOne("clusterHealthCheck.successThreshold", hc.SuccessThreshold)

	s.SyncWorkers = atLeastOne("syncController.maxConcurrentReconciles", spec.SyncController.MaxConcurrentReconciles)
	switch spec.SyncController.AdoptResources {
	case corev1beta1.Enabled:
		s.AdoptResources = true
	case corev1beta1.Disabled:
	default:
		bad("syncController.adoptResources", "must be Enabled or Disabled, got %q", spec.SyncController.AdoptResources)
	}
	s.NotReadyClusterDeletionTimeout = positive("syncController.notReadyClusterDeletionTimeout", spec.SyncController.NotReadyClusterDeletionTimeout)
	s.StatusWorkers = atLeastOne("statusController.maxConcurrentReconciles", spec.StatusController.MaxConcurrentReconciles)

	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid KubeFedConfig: %w", errors.Join(errs...))
	}
	return s, nil
}

// Load reads the KubeFedConfig `kubefed` in namespace, creating it with
// defaults and the given scope when it does not exist, and resolves it.
//
// A KubeFedConfig kind that the API server does not serve yet, or whose
// admission policy does not know it yet (its CRD was applied a moment ago,
// as by one `kubectl apply` of the install manifest), is waited for, up to
// crdWait.
func Load(ctx context.Context, c client.Client, namespace string, scopeIfMissing corev1beta1.Scope) (*corev1beta1.KubeFedConfig, *Settings, error) {
	key := types.NamespacedName{Namespace: namespace, Name: corev1beta1.KubeFedConfigName}
	var cfg *corev1beta1.KubeFedConfig
	err := WhileKindNotReady(ctx, func() error {
		var err error
		cfg, err = readOrCreate(ctx, c, key, namespace, scopeIfMissing)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	settings, err := Resolve(cfg.Spec)
	if err != nil {
		return nil, nil, fmt.Errorf("KubeFedConfig %s: %w", key, err)
	}
	return cfg, settings, nil
}

// WhileKindNotReady calls f until it succeeds or fails otherwise than on a
// kind that is not served yet (kindNotReady), for up to crdWait: a CRD
// applied a moment ago, as by one `kubectl apply` of the install manifest.
func WhileKindNotReady(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(crdWait)
	for {
		err := f()
		if err == nil || !kindNotReady(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(crdRetry):
		}
	}
}

// kindNotReady reports an error of a kind whose CRD was created a moment
// ago: not yet in discovery (no match), or not yet known to the API
// server's admission policies (the chart's MutatingAdmissionPolicy
// answers 503 "Resource kind … not found. There can be a delay …").
func kindNotReady(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsServiceUnavailable(err)
}

// crdWait is how long Load waits for the KubeFedConfig kind to be served,
// trying every crdRetry.
const crdWait = time.Minute

var crdRetry = time.Second

// readOrCreate reads the KubeFedConfig, creating it when it does not exist.
func readOrCreate(ctx context.Context, c client.Client, key types.NamespacedName, namespace string, scopeIfMissing corev1beta1.Scope) (*corev1beta1.KubeFedConfig, error) {
	cfg := &corev1beta1.KubeFedConfig{}
	err := c.Get(ctx, key, cfg)
	if apierrors.IsNotFound(err) {
		cfg = New(namespace, scopeIfMissing)
		if err := c.Create(ctx, cfg); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create KubeFedConfig %s: %w", key, err)
		}
		err = c.Get(ctx, key, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("read KubeFedConfig %s: %w", key, err)
	}
	return cfg, nil
}
