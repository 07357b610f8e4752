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
	series, err := APIServerRequestSeries(ctx, c, match)
	return SeriesTotal(series), err
}

// SeriesTotal is the sum of the counts of APIServerRequestSeries.
func SeriesTotal(series map[string]int) int {
	total := 0
	for _, n := range series {
		total += n
	}
	return total
}

// APIServerRequestSeries is APIServerRequests by series: each matching
// line's labels (verb, resource, code and the rest) and its count, for a
// test to say which requests it did not expect.
func APIServerRequestSeries(ctx context.Context, c *Cluster, match func(line string) bool) (map[string]int, error) {
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", c.Name, err)
	}
	series := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !match(line) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %q: %w", c.Name, line, err)
		}
		series[strings.TrimPrefix(line[:i], "apiserver_request_total")] += int(n)
	}
	return series, nil
}
