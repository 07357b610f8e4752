// Command gen-default-types writes the Federated<T> CRDs and
// FederatedTypeConfigs of the default federated types into config/, through
// the same code kubefedctl enable uses.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

func main() {
	if err := run("config"); err != nil {
		fmt.Fprintln(os.Stderr, "gen-default-types:", err)
		os.Exit(1)
	}
}

func run(configDir string) error {
	crdDir := filepath.Join(configDir, "crd", "federated")
	ftcDir := filepath.Join(configDir, "default-types")
	for _, dir := range []string{crdDir, ftcDir} {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	for _, t := range federatedtype.DefaultTargets {
		crd, err := federatedtype.CRD(t, federatedtype.Options{})
		if err != nil {
			return err
		}
		if err := write(filepath.Join(crdDir, crd.Name+".yaml"), crd); err != nil {
			return err
		}
		ftc := federatedtype.TypeConfig(t, federatedtype.Options{})
		if err := write(filepath.Join(ftcDir, ftc.Name+".yaml"), ftc); err != nil {
			return err
		}
	}
	return nil
}

func write(path string, obj runtime.Object) error {
	b, err := federatedtype.Manifest(obj)
	if err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	return os.WriteFile(path, append([]byte("---\n"), b...), 0o644)
}
