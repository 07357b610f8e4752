package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// CRDDirs are the repository folders whose CRDs the control plane needs.
func (f *Framework) CRDDirs() []string {
	return []string{
		filepath.Join(f.RepoRoot, "config", "crd", "bases"),
		filepath.Join(f.RepoRoot, "config", "crd", "federated"),
	}
}

// ReadCRDs decodes every CRD in the YAML files of the given folders.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				doc, err := dec.Read()
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", file, err)
				}
				if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "---" {
					continue
				}
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.UnmarshalStrict(doc, crd); err != nil {
					return nil, fmt.Errorf("decode %s: %w", file, err)
				}
				crds = append(crds, crd)
			}
		}
	}
	return crds, nil
}

// InstallCRDs creates or updates the CRDs and waits until each is Established.
func InstallCRDs(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		existing := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, crd.DeepCopy()); err != nil {
				return fmt.Errorf("create CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return fmt.Errorf("get CRD %s: %w", crd.Name, err)
		default:
			existing.Spec = crd.Spec
			if err := c.Update(ctx, existing); err != nil {
				return fmt.Errorf("update CRD %s: %w", crd.Name, err)
			}
		}
	}
	for _, crd := range crds {
		name := crd.Name
		err := poll(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}
