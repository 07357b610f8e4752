package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigEntry is what one context of a generated kubeconfig needs.
type kubeconfigEntry struct {
	Name   string // cluster, user and context name
	Server string
	CAData []byte
	Token  string
}

// buildKubeconfig returns a kubeconfig with one context per entry, named
// after the entry, and current-context set to currentContext.
func buildKubeconfig(entries []kubeconfigEntry, currentContext string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	for _, e := range entries {
		cluster := clientcmdapi.NewCluster()
		cluster.Server = e.Server
		cluster.CertificateAuthorityData = append([]byte(nil), e.CAData...)
		cfg.Clusters[e.Name] = cluster

		user := clientcmdapi.NewAuthInfo()
		user.Token = e.Token
		// A user entry per cluster keeps tokens apart: each cluster only
		// knows its own admin token.
		cfg.AuthInfos[e.Name] = user

		ctx := clientcmdapi.NewContext()
		ctx.Cluster = e.Name
		ctx.AuthInfo = e.Name
		ctx.Namespace = "default"
		cfg.Contexts[e.Name] = ctx
	}
	cfg.CurrentContext = currentContext
	return cfg
}

// writeKubeconfig serialises cfg to path atomically, so that a kubectl or
// test reading the file concurrently never sees half of it.
func writeKubeconfig(path string, cfg *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("serialising kubeconfig %s: %w", path, err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// writeFileAtomic writes data to a temporary file in the same directory and
// renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	cleanup := func() { _ = os.Remove(tmpName) }
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		cleanup()
		return fmt.Errorf("setting mode of %s: %w", tmpName, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		cleanup()
		return fmt.Errorf("writing %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		cleanup()
		return fmt.Errorf("syncing %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		cleanup()
		return fmt.Errorf("closing %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		cleanup()
		return fmt.Errorf("renaming %s to %s: %w", tmpName, path, err)
	}
	return nil
}
