package clusterclient

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func TestRegistryRebuildsOnlyOnConnectionChanges(t *testing.T) {
	ca := newTestCA(t)
	base := func() (*fedv1b1.KubeFedCluster, *corev1.Secret) {
		return testCluster("member.example.com"), testSecret(map[string]string{TokenKey: testToken, CAKey: string(ca.certPEM)})
	}

	tests := []struct {
		name        string
		change      func(*fedv1b1.KubeFedCluster, *corev1.Secret)
		wantRebuild bool
	}{
		{name: "nothing", change: func(*fedv1b1.KubeFedCluster, *corev1.Secret) {}},
		{name: "status", change: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Status.KubernetesVersion = "v1.37.2" }},
		{name: "labels and resourceVersions", change: func(c *fedv1b1.KubeFedCluster, s *corev1.Secret) {
			c.Labels = map[string]string{"region": "eu"}
			c.ResourceVersion, s.ResourceVersion = "7", "8"
		}},
		{name: "unrelated Secret key", change: func(_ *fedv1b1.KubeFedCluster, s *corev1.Secret) { s.Data["namespace"] = []byte("x") }},
		{name: "token", change: func(_ *fedv1b1.KubeFedCluster, s *corev1.Secret) { s.Data[TokenKey] = []byte("new") }, wantRebuild: true},
		{name: "Secret ca.crt", change: func(_ *fedv1b1.KubeFedCluster, s *corev1.Secret) { s.Data[CAKey] = newTestCA(t).certPEM }, wantRebuild: true},
		{name: "apiEndpoint", change: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Spec.APIEndpoint = "other.example.com" }, wantRebuild: true},
		{name: "caBundle", change: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Spec.CABundle = ca.certPEM }, wantRebuild: true},
		{name: "disabledTLSValidations", change: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) {
			c.Spec.DisabledTLSValidations = []fedv1b1.TLSValidation{fedv1b1.TLSSubjectName}
		}, wantRebuild: true},
		{name: "proxyURL", change: func(c *fedv1b1.KubeFedCluster, _ *corev1.Secret) { c.Spec.ProxyURL = "http://proxy:3128" }, wantRebuild: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(ConfigOptions{})
			cluster, secret := base()
			first, err := r.Ensure(cluster, secret)
			if err != nil {
				t.Fatalf("first Ensure: %v", err)
			}
			tc.change(cluster, secret)
			second, err := r.Ensure(cluster, secret)
			if err != nil {
				t.Fatalf("second Ensure: %v", err)
			}
			if rebuilt := first != second; rebuilt != tc.wantRebuild {
				t.Fatalf("rebuilt = %v, want %v", rebuilt, tc.wantRebuild)
			}
			if tc.wantRebuild && second.Generation() <= first.Generation() {
				t.Errorf("generation went from %d to %d, want an increase", first.Generation(), second.Generation())
			}
			if got, _ := r.Get(cluster.Name); got != second {
				t.Errorf("Get returns a different set than Ensure")
			}
		})
	}
}

// Listeners hear of clients rebuilt and dropped, not of an Ensure that
// changed nothing.
func TestRegistryTellsOfChangedClients(t *testing.T) {
	r := NewRegistry(ConfigOptions{})
	heard := make(chan string, 10)
	r.OnChange(func(cluster string) { heard <- cluster })
	cluster, secret := testCluster("member.example.com"), testSecret(map[string]string{TokenKey: testToken})
	expect := func(what string, n int) {
		t.Helper()
		for range n {
			select {
			case got := <-heard:
				if got != cluster.Name {
					t.Fatalf("%s: heard of %q", what, got)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: not heard of", what)
			}
		}
	}
	if _, err := r.Ensure(cluster, secret); err != nil {
		t.Fatal(err)
	}
	expect("built", 1)
	if _, err := r.Ensure(cluster, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[TokenKey] = []byte("rotated")
	if _, err := r.Ensure(cluster, secret); err != nil {
		t.Fatal(err)
	}
	expect("rebuilt", 2) // the old clients dropped, the new ones built
	r.Remove(cluster.Name)
	expect("removed", 1)
	// The Ensure that changed nothing was not told: a positive signal
	// (the removal heard) came after it.
	select {
	case got := <-heard:
		t.Errorf("heard of %q once more", got)
	default:
	}
}

func TestRegistryDropsClientsOfMalformedConfig(t *testing.T) {
	r := NewRegistry(ConfigOptions{})
	cluster := testCluster("member.example.com")
	if _, err := r.Ensure(cluster, testSecret(map[string]string{TokenKey: testToken})); err != nil {
		t.Fatal(err)
	}
	_, err := r.Ensure(cluster, testSecret(map[string]string{"other": "x"}))
	if !IsConfigError(err) {
		t.Fatalf("want a ConfigError for a Secret without token, got %v", err)
	}
	if _, ok := r.Get(cluster.Name); ok {
		t.Error("clients with withdrawn credentials are still cached")
	}
	// Missing Secret, then fixed: clients come back.
	if _, err := r.Ensure(cluster, nil); !IsConfigError(err) {
		t.Fatalf("want a ConfigError for a missing Secret, got %v", err)
	}
	if _, err := r.Ensure(cluster, testSecret(map[string]string{TokenKey: testToken})); err != nil {
		t.Fatalf("after fixing the Secret: %v", err)
	}
	if _, ok := r.Get(cluster.Name); !ok {
		t.Error("no clients after the Secret was fixed")
	}
}

func TestRegistryRemoveAndNames(t *testing.T) {
	r := NewRegistry(ConfigOptions{})
	for _, name := range []string{"c2", "c1"} {
		c := testCluster("member.example.com")
		c.Name = name
		if _, err := r.Ensure(c, testSecret(map[string]string{TokenKey: testToken})); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(r.Names()); got != "[c1 c2]" {
		t.Errorf("Names() = %s, want [c1 c2]", got)
	}
	r.Remove("c1")
	r.Remove("unknown")
	if _, ok := r.Get("c1"); ok {
		t.Error("c1 still cached after Remove")
	}
	if got := fmt.Sprint(r.Names()); got != "[c2]" {
		t.Errorf("Names() = %s, want [c2]", got)
	}
}

// TestClientsReachTheMember proves the lazily built clients share the
// authenticated connection to the member and are built once.
func TestClientsReachTheMember(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	srv := fakeAPIServer(t, ca.serving(t, nil, loopback, now.Add(-time.Hour), now.Add(time.Hour)), testToken)
	r := NewRegistry(ConfigOptions{})
	clients, err := r.Ensure(testCluster(srv.URL), testSecret(map[string]string{TokenKey: testToken, CAKey: string(ca.certPEM)}))
	if err != nil {
		t.Fatal(err)
	}

	kube, err := clients.Kubernetes()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := clients.Kubernetes()
	if kube != again {
		t.Error("Kubernetes() built a second clientset")
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("typed client: %v", err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("gitVersion = %q", v.GitVersion)
	}

	disc, err := clients.Discovery()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disc.ServerVersion(); err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	if _, err := clients.Dynamic(); err != nil {
		t.Fatalf("dynamic client: %v", err)
	}

	// Config hands out copies, so a caller's tweak cannot leak into the shared clients.
	cfg := clients.Config()
	cfg.Timeout = 0
	if clients.Config().Timeout != DefaultTimeout {
		t.Error("Config() exposes the shared config")
	}
}

func TestRegistryConcurrentUse(t *testing.T) {
	r := NewRegistry(ConfigOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c := testCluster("member.example.com")
			c.Name = fmt.Sprintf("c%d", i%3)
			for n := 0; ctx.Err() == nil; n++ {
				s := testSecret(map[string]string{TokenKey: fmt.Sprintf("token-%d", n%2)})
				clients, err := r.Ensure(c, s)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := clients.Kubernetes(); err != nil {
					t.Error(err)
					return
				}
				r.Get(c.Name)
				if n%5 == 0 {
					r.Remove(c.Name)
				}
				r.Names()
			}
		})
	}
	wg.Wait()
}
