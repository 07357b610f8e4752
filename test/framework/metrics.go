package framework

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ErrNoMetric is MetricSeries' and MetricValue's error when this process's
// registry has no series of the metric named.
var ErrNoMetric = errors.New("no series of metric")

// Series is one series of a metric: its labels and its value.
type Series struct {
	Labels map[string]string
	Value  float64
}

// MetricSeries returns the series of the counter or gauge name in this
// process's controller-runtime registry whose labels have the given values
// (name, value pairs): what a scrape would read. It is the one reader of
// that registry for the tests; ErrNoMetric when the registry has no series
// of name.
func MetricSeries(name string, labelValues ...string) ([]Series, error) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var out []Series
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			matches := true
			for i := 0; i+1 < len(labelValues); i += 2 {
				matches = matches && labels[labelValues[i]] == labelValues[i+1]
			}
			if matches {
				out = append(out, Series{Labels: labels, Value: m.GetCounter().GetValue() + m.GetGauge().GetValue()})
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %s", ErrNoMetric, name)
}

// MetricValue sums the series MetricSeries returns.
func MetricValue(name string, labelValues ...string) (float64, error) {
	series, err := MetricSeries(name, labelValues...)
	var sum float64
	for _, s := range series {
		sum += s.Value
	}
	return sum, err
}

// APIServerRequests sums the apiserver_request_total series of a cluster's
// API server whose labels match accepts (such as labels naming a verb,
// resource and code): the requests it served, a way to count writes that
// no cache can hide.
func APIServerRequests(ctx context.Context, c *Cluster, match func(labels string) bool) (int, error) {
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
// series' labels (verb, resource, code and the rest) and its count, for a
// test to say which requests it did not expect.
func APIServerRequestSeries(ctx context.Context, c *Cluster, match func(labels string) bool) (map[string]int, error) {
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", c.Name, err)
	}
	series := map[string]int{}
	for labels, n := range RequestCounts(string(raw)) {
		if match(labels) {
			series[labels] += int(n)
		}
	}
	return series, nil
}

// RequestCounts yields each apiserver_request_total series of a Prometheus
// metrics text: its labels ({verb="GET",resource="pods",...}) and its count.
// Lines whose count does not parse are skipped. It is the one reader of
// these counters for the tests and the bench.
func RequestCounts(metrics string) iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for line := range strings.Lines(metrics) {
			labels, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "apiserver_request_total{")
			if !ok {
				continue
			}
			i := strings.LastIndexByte(labels, ' ')
			if i < 0 {
				continue
			}
			n, err := strconv.ParseFloat(labels[i+1:], 64)
			if err != nil {
				continue
			}
			if !yield("{"+labels[:i], n) {
				return
			}
		}
	}
}
