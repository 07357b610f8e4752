package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

// ReuseDirEnv names a directory of a running federation (from
// `make clusters-up`) that specs attach to instead of starting their own.
const ReuseDirEnv = "KUBEFED_E2E_CLUSTERS"

// Scheme knows the built-in types, the CRD type and every kubefed API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		corev1beta1.AddToScheme,
		schedulingv1alpha1.AddToScheme,
		dnsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Cluster is one running cluster with clients for it.
type Cluster struct {
	Name   string
	Config *rest.Config
	Client client.Client
	Kube   kubernetes.Interface
	Local  *localcluster.Cluster
}

// Framework is a running host with its member clusters.
type Framework struct {
	Fed        *localcluster.Federation
	Host       *Cluster
	Members    []*Cluster
	Kubeconfig string
	RepoRoot   string
	owned      bool
}

// RepoRoot finds the repository root by walking up to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "PROJECT")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("framework: repository root (go.mod and PROJECT) not found above the working directory")
		}
		dir = parent
	}
}

// Start brings up a host and `members` member clusters in workDir, or
// attaches to the federation named by $KUBEFED_E2E_CLUSTERS.
func Start(ctx context.Context, workDir string, members int, out io.Writer) (*Framework, error) {
	return StartWithNodes(ctx, workDir, members, out, localcluster.NodeOptions{}, nil)
}

// StartWithNodes is Start with simulated nodes in every member (see
// localcluster.NodeOptions), or memberNodes[member] for the members it
// names: pods are scheduled and become Ready. With nodes it always starts a
// federation of its own.
func StartWithNodes(ctx context.Context, workDir string, members int, out io.Writer, nodes localcluster.NodeOptions, memberNodes map[string]localcluster.NodeOptions) (*Framework, error) {
	return start(ctx, workDir, members, out, nodes, memberNodes, nil)
}

// StartWithArgs is Start with extraArgs appended to the command lines of
// every cluster's components; it always starts a federation of its own.
func StartWithArgs(ctx context.Context, workDir string, members int, out io.Writer, extraArgs map[localcluster.Component][]string) (*Framework, error) {
	return start(ctx, workDir, members, out, localcluster.NodeOptions{}, nil, extraArgs)
}

func start(ctx context.Context, workDir string, members int, out io.Writer, nodes localcluster.NodeOptions, memberNodes map[string]localcluster.NodeOptions,
	extraArgs map[localcluster.Component][]string) (*Framework, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	f := &Framework{RepoRoot: root}
	if dir := os.Getenv(ReuseDirEnv); dir != "" && nodes.Count == 0 && len(memberNodes) == 0 && len(extraArgs) == 0 {
		f.Fed, err = localcluster.Load(dir)
	} else {
		names := []string{"host"}
		for i := 1; i <= members; i++ {
			names = append(names, fmt.Sprintf("member%d", i))
		}
		f.owned = true
		f.Fed, err = localcluster.Start(ctx, localcluster.Options{
			WorkDir:     workDir,
			Clusters:    names,
			BinDir:      filepath.Join(root, "bin"),
			Out:         out,
			Nodes:       nodes,
			MemberNodes: memberNodes,
			ExtraArgs:   extraArgs,
		})
	}
	if err != nil {
		return nil, err
	}
	f.Kubeconfig = f.Fed.KubeconfigPath
	for i, lc := range f.Fed.Clusters {
		c, err := newCluster(lc)
		if err != nil {
			return nil, errors.Join(err, f.Stop())
		}
		if i == 0 {
			f.Host = c
		} else {
			f.Members = append(f.Members, c)
		}
	}
	if len(f.Members) < members {
		return nil, errors.Join(fmt.Errorf("framework: need %d members, the federation has %d", members, len(f.Members)), f.Stop())
	}
	return f, nil
}

func newCluster(lc *localcluster.Cluster) (*Cluster, error) {
	cfg := lc.RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("client for cluster %s: %w", lc.Name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for cluster %s: %w", lc.Name, err)
	}
	return &Cluster{Name: lc.Name, Config: cfg, Client: c, Kube: kube, Local: lc}, nil
}

// Stop stops the clusters this framework started; an attached federation is left running.
func (f *Framework) Stop() error {
	if f == nil || f.Fed == nil || !f.owned {
		return nil
	}
	return f.Fed.Stop()
}

// Clusters is the host followed by the members.
func (f *Framework) Clusters() []*Cluster {
	return append([]*Cluster{f.Host}, f.Members...)
}

// Bin is the path of a binary in the repository's bin/.
func (f *Framework) Bin(name string) string { return filepath.Join(f.RepoRoot, "bin", name) }

// Kubectl runs bin/kubectl against a cluster context and returns its combined output.
func (f *Framework) Kubectl(ctx context.Context, clusterContext string, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", f.Kubeconfig, "--context", clusterContext}, args...)
	cmd := exec.CommandContext(ctx, f.Bin("kubectl"), full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// EnsureNamespace creates a namespace in a cluster if it does not exist.
func EnsureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := c.Create(ctx, ns); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// Eventually-style polling lives in gomega; this bounds one-off waits in helpers.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := cond(ctx)
		if done {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
