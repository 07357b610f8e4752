package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// APIServerRequests sums the apiserver_request_total series of a cluster's
// API server whose line match accepts (such as one naming a verb, resource
// and code): the requests it served, a way to count writes that no cache
// can hide.
func APIServerRequests(ctx context.Context, c *Cluster, match func(line string) bool) (int, error) {
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("metrics of %s: %w", c.Name, err)
	}
	total := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !match(line) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics of %s: %q: %w", c.Name, line, err)
		}
		total += int(n)
	}
	return total, nil
}
