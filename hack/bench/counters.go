package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kubefed-io/kubefed/test/framework"
)

// Resources whose writes are counted, from each apiserver's
// apiserver_request_total: in members the copies and their namespace, on
// the host the federated objects (status included: it is ours) and events.
var (
	memberCounted = []string{"deployments", "configmaps", "namespaces"}
	hostCounted   = []string{"federateddeployments", "federatedconfigmaps", "federatednamespaces", "events", "kubefedclusters"}
)

var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"}

// otherWrites counts the host's writes of every other resource but
// Leases (heartbeats, elections and fences, per cluster or replica and not
// per object): objects the engine would add per object or per cluster,
// such as Karmada's Work objects, show here.
const otherWrites = "other"

// readVerbs are the requests counted as the host's reads, by resource:
// what, beside its writes, keeps the host's apiserver busy during a wave.
var readVerbs = []string{"GET", "LIST"}

// parseReads sums the requests of readVerbs by "reads/<resource> <verb>".
func parseReads(metrics string) writeCounts {
	out := writeCounts{}
	for line, n := range framework.RequestCounts(metrics) {
		verb, resource := labelValue(line, "verb"), labelValue(line, "resource")
		if slices.Contains(readVerbs, verb) && resource != "" {
			out["reads/"+resource+" "+verb] += n
		}
	}
	return out
}

// parseOtherWrites sums the writes of resources neither in counted nor
// Leases.
func parseOtherWrites(metrics string, counted []string) float64 {
	total := 0.0
	for line, n := range framework.RequestCounts(metrics) {
		if !slices.ContainsFunc(writeVerbs, func(v string) bool { return strings.Contains(line, `verb="`+v+`"`) }) {
			continue
		}
		if strings.Contains(line, `resource="leases"`) || slices.ContainsFunc(counted, func(r string) bool { return strings.Contains(line, `resource="`+r+`"`) }) {
			continue
		}
		total += n
	}
	return total
}

// writeCounts maps "cluster/resource" (and "cluster/resource/status") to the
// number of writes its apiserver served so far.
type writeCounts map[string]float64

// countWrites reads the write counters of every cluster; given kinds, it
// also fills in the members' writes of copies by verb and code, from the
// same reading.
func (e *env) countWrites(ctx context.Context, kinds writeKinds) (writeCounts, error) {
	all := append([]*cluster{e.host}, e.members...)
	out := writeCounts{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, c := range all {
		counted := memberCounted
		if c == e.host {
			counted = hostCounted
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := c.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("metrics of %s: %w", c.name, err)
				return
			}
			counts := parseWrites(string(raw), counted)
			var byKind writeKinds
			if c == e.host {
				counts[otherWrites] = parseOtherWrites(string(raw), counted)
				if kinds != nil {
					// Not while waiting for quiet: reads never stop.
					maps.Copy(counts, parseReads(string(raw)))
				}
			} else if kinds != nil {
				byKind = parseWriteKinds(string(raw), counted)
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range counts {
				out[c.name+"/"+k] = v
			}
			for k, v := range byKind {
				kinds[c.name+"/"+k] = v
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseWrites(metrics string, resources []string) writeCounts {
	out := writeCounts{}
	for _, r := range resources {
		out[r], out[r+"/status"] = 0, 0
	}
	for line, n := range framework.RequestCounts(metrics) {
		write := false
		for _, v := range writeVerbs {
			if strings.Contains(line, `verb="`+v+`"`) {
				write = true
			}
		}
		if !write {
			continue
		}
		for _, r := range resources {
			if !strings.Contains(line, `resource="`+r+`"`) {
				continue
			}
			key := r
			if strings.Contains(line, `subresource="status"`) {
				key += "/status"
			} else if !strings.Contains(line, `subresource=""`) {
				continue
			}
			out[key] += n
			// Conflicts are counted among the writes too; they are
			// also listed apart, as work that had to be repeated.
			if strings.Contains(line, `code="409"`) {
				out[key+"/conflicts"] += n
			}
		}
	}
	return out
}

// minus returns the writes served since before.
func (w writeCounts) minus(before writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// sum adds the counters of a cluster whose key passes keep; conflicts are
// already among the writes they are listed apart from.
func (w writeCounts) sum(clusterName string, keep func(resource string) bool) int {
	total := 0.0
	for k, v := range w {
		c, r, _ := strings.Cut(k, "/")
		if c == clusterName && !strings.HasSuffix(r, "/conflicts") && keep(r) {
			total += v
		}
	}
	return int(total)
}

func (w writeCounts) equal(o writeCounts) bool {
	if len(w) != len(o) {
		return false
	}
	for k, v := range w {
		if o[k] != v {
			return false
		}
	}
	return true
}

// nonZero renders the counters that moved, for logs and the JSON report.
func (w writeCounts) nonZero() map[string]int {
	out := map[string]int{}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if w[k] != 0 {
			out[k] = int(w[k])
		}
	}
	return out
}

// writeKinds maps "cluster/resource VERB code" to the writes of members'
// copies (not their status) an apiserver served with that verb and answer
// code, so that writes beyond a wave's creates can be told apart: an update,
// a delete, a create answered 409 (existing) or 5xx (a timeout).
type writeKinds map[string]float64

// parseWriteKinds sums apiserver_request_total of resources' main
// subresource by verb and code, keyed "resource VERB code".
func parseWriteKinds(metrics string, resources []string) writeKinds {
	out := writeKinds{}
	for line, n := range framework.RequestCounts(metrics) {
		if !strings.Contains(line, `subresource=""`) {
			continue
		}
		verb, code, resource := labelValue(line, "verb"), labelValue(line, "code"), labelValue(line, "resource")
		if slices.Contains(writeVerbs, verb) && slices.Contains(resources, resource) {
			out[resource+" "+verb+" "+code] += n
		}
	}
	return out
}

// labelValue returns the value of a label of a Prometheus text line.
func labelValue(line, name string) string {
	_, rest, ok := strings.Cut(line, `,`+name+`="`)
	if !ok {
		_, rest, ok = strings.Cut(line, `{`+name+`="`)
	}
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// creates sums each member's create requests for the copies (deployments
// and configmaps): all of them, and those refused because the object
// existed.
func (w writeKinds) creates() map[string]creates {
	out := map[string]creates{}
	for k, v := range w {
		member, kind, _ := strings.Cut(k, "/")
		f := strings.Fields(kind) // resource, verb, code
		if len(f) != 3 || f[1] != "POST" || (f[0] != "deployments" && f[0] != "configmaps") {
			continue
		}
		c := out[member]
		c.attempted += v
		if f[2] == "409" {
			c.conflicts += v
		}
		out[member] = c
	}
	return out
}

// unusual renders the writes served since before that are not creates
// answered 201 Created, by resource, verb and code, with each member's
// share: "deployments POST 504: 9 (member1 3, member3 6)".
func (w writeKinds) unusual(before writeKinds) []string {
	total := map[string]int{}
	shares := map[string][]string{}
	for k, v := range w {
		d := int(v - before[k])
		member, kind, _ := strings.Cut(k, "/")
		if d == 0 || strings.HasSuffix(kind, " POST 201") {
			continue
		}
		total[kind] += d
		shares[kind] = append(shares[kind], fmt.Sprintf("%s %d", member, d))
	}
	var out []string
	for kind, n := range total {
		sort.Strings(shares[kind])
		out = append(out, fmt.Sprintf("%s: %d (%s)", kind, n, strings.Join(shares[kind], ", ")))
	}
	sort.Strings(out)
	return out
}
