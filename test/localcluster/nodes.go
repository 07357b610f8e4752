package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kwokNodeAnnotation marks the nodes kwok manages; a Node someone else
// creates (as some tests do) is left alone.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// notReadyTaint is what the apiserver puts on every new Node and the node
// lifecycle controller takes off once the node is Ready.
const notReadyTaint = "node.kubernetes.io/not-ready"

// NodeName is the name of a cluster's i-th simulated node.
func NodeName(cluster string, i int) string { return cluster + "-node-" + strconv.Itoa(i) }

// nodeObjects are the Nodes kwok simulates for the cluster: capacity as
// configured, zones spread over them, no conditions (kwok's node-initialize
// stage writes them, and only for a node that is not Ready yet).
func (c *Cluster) nodeObjects() ([]*corev1.Node, error) {
	n := c.nodes
	capacity := corev1.ResourceList{}
	for name, q := range map[corev1.ResourceName]string{corev1.ResourceCPU: n.CPU, corev1.ResourceMemory: n.Memory, corev1.ResourcePods: strconv.Itoa(n.Pods)} {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("node %s %q: %w", name, q, err)
		}
		capacity[name] = v
	}
	var out []*corev1.Node
	for i := range n.Count {
		name := NodeName(c.Name, i)
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{
					corev1.LabelHostname:       name,
					corev1.LabelOSStable:       "linux",
					corev1.LabelArchStable:     "amd64",
					corev1.LabelTopologyZone:   n.Zones[i%len(n.Zones)],
					corev1.LabelTopologyRegion: n.Region,
					"type":                     "kwok",
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    capacity.DeepCopy(),
				Allocatable: capacity.DeepCopy(),
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
					{Type: corev1.NodeHostName, Address: name},
				},
				NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "kwok", KubeProxyVersion: "kwok"},
				Phase:    corev1.NodeRunning,
			},
		})
	}
	return out, nil
}

// ensureNodes creates the cluster's simulated Nodes that do not exist yet.
func (c *Cluster) ensureNodes(ctx context.Context) error {
	cs, err := c.probeClient()
	if err != nil {
		return err
	}
	nodes, err := c.nodeObjects()
	if err != nil {
		return err
	}
	for _, node := range nodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	return nil
}

// nodesReady reports whether every simulated node is Ready and no longer
// tainted not-ready, so that pods created next are scheduled at once.
func (c *Cluster) nodesReady(ctx context.Context) error {
	cs, err := c.probeClient()
	if err != nil {
		return err
	}
	for i := range c.nodes.Count {
		name := NodeName(c.Name, i)
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ready = cond.Status == corev1.ConditionTrue
			}
		}
		if !ready {
			return fmt.Errorf("node %s is not Ready yet", name)
		}
		for _, t := range node.Spec.Taints {
			if t.Key == notReadyTaint {
				return fmt.Errorf("node %s still has the %s taint", name, notReadyTaint)
			}
		}
	}
	return nil
}

// schedulerReady probes kube-scheduler's /readyz over TLS verified by the
// federation CA.
func (c *Cluster) schedulerReady(ctx context.Context) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAData) {
		return errors.New("the federation CA does not parse")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	return probeHTTP(ctx, client, "https://127.0.0.1:"+strconv.Itoa(c.ports.Scheduler)+"/readyz", isOK)
}

// kwokHealthy probes kwok's /healthz, which it serves once its stages are
// loaded and its informers started.
func (c *Cluster) kwokHealthy(ctx context.Context) error {
	return probeHTTP(ctx, http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(c.ports.Kwok)+"/healthz", isOK)
}

func isOK(body string) bool { return body == "ok" }
