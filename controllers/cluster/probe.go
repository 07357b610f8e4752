package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// maxHealthBody bounds how much of a health answer is read; "ok" is two bytes
// and a verbose failure a few kilobytes.
const maxHealthBody = 64 << 10

// scheduledPodsSelector keeps the pod list to what counts as allocated:
// bound to a node and not terminated.
const scheduledPodsSelector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

// probeHealth asks the member's /readyz, falling back to /healthz where
// /readyz is missing (old members) or not granted (KubeFed's Namespaced join
// only grants /healthz). The caller's ctx bounds both requests.
func probeHealth(ctx context.Context, client *http.Client, host string, timeout time.Duration) observation {
	path := "/readyz"
	code, body, err := get(ctx, client, host, path)
	if err == nil && (code == http.StatusNotFound || code == http.StatusForbidden) {
		path = "/healthz"
		code, body, err = get(ctx, client, host, path)
	}
	if err != nil {
		return classifyError(err, timeout)
	}
	return classifyResponse(path, code, body)
}

// ProbeHealth is probeHealth for a cluster no worker probes, such as a
// Pull-mode member's agent probing its own: whether it is ready, and when
// not, what the answer or the failure says, in the words of the conditions.
func ProbeHealth(ctx context.Context, client *http.Client, host string, timeout time.Duration) (ready bool, message string) {
	obs := probeHealth(ctx, client, host, timeout)
	return obs.ready(), obs.message
}

func get(ctx context.Context, client *http.Client, host, path string) (int, []byte, error) {
	u, err := url.JoinPath(host, path)
	if err != nil {
		return 0, nil, fmt.Errorf("building the URL of %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// collectSummary reads the heavier status fields from a healthy member with
// cheap calls: lists served from the apiserver's watch cache
// (resourceVersion=0) and discovery. Each part that fails is left out of the
// summary and reported in the joined error; the rest is still returned.
func collectSummary(ctx context.Context, kube kubernetes.Interface, disc discovery.DiscoveryInterface, previous []fedv1b1.APIEnablement) (summary, error) {
	var s summary
	var errs []error
	discCtx := discovery.ToDiscoveryInterfaceWithContext(disc)

	if v, err := discCtx.ServerVersionWithContext(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reading /version: %w", err))
	} else {
		s.kubernetesVersion = v.GitVersion
	}

	if nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		errs = append(errs, fmt.Errorf("listing nodes: %w", err))
	} else {
		n := summarizeNodes(nodes.Items)
		s.nodes = &n
	}

	// Pods are listed only for their requests; KubeFed's Namespaced join does
	// not grant this, in which case allocated is simply not reported.
	if pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		ResourceVersion: "0",
		FieldSelector:   scheduledPodsSelector,
	}); err != nil {
		errs = append(errs, fmt.Errorf("listing pods: %w", err))
	} else {
		s.allocated = sumPodRequests(pods.Items)
		s.hasAllocated = true
	}

	_, lists, err := discovery.ServerGroupsAndResourcesWithContext(ctx, discCtx)
	var failed []string
	if groups, partial := discovery.GroupDiscoveryFailedErrorGroups(err); partial {
		for gv := range groups {
			failed = append(failed, gv.String())
		}
		errs = append(errs, fmt.Errorf("discovering APIs: %w", err))
		err = nil
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("discovering APIs: %w", err))
	} else {
		s.apiEnablements = apiEnablements(lists, failed, previous)
		s.hasAPIEnablements = true
	}
	return s, errors.Join(errs...)
}
