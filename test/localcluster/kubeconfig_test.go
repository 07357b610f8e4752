package localcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestKubeconfigHasAContextPerCluster(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	entries := []kubeconfigEntry{
		{Name: "host", Server: "https://127.0.0.1:1001", CAData: ca, Token: "token-host"},
		{Name: "member1", Server: "https://127.0.0.1:1002", CAData: ca, Token: "token-member1"},
	}
	if err := writeKubeconfig(path, buildKubeconfig(entries, "host")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600 because it holds tokens", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".kubeconfig.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("clientcmd cannot load the kubeconfig: %v", err)
	}
	if cfg.CurrentContext != "host" {
		t.Errorf("current-context %q, want host", cfg.CurrentContext)
	}
	if len(cfg.Contexts) != 2 {
		t.Errorf("got %d contexts, want 2", len(cfg.Contexts))
	}
	for _, e := range entries {
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, e.Name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Errorf("context %s: %v", e.Name, err)
			continue
		}
		if rc.Host != e.Server {
			t.Errorf("context %s: server %q, want %q", e.Name, rc.Host, e.Server)
		}
		if rc.BearerToken != e.Token {
			t.Errorf("context %s: wrong token", e.Name)
		}
		if !bytes.Equal(rc.CAData, ca) {
			t.Errorf("context %s: certificate-authority-data not embedded", e.Name)
		}
		if rc.Insecure {
			t.Errorf("context %s: TLS verification disabled", e.Name)
		}
	}
}
