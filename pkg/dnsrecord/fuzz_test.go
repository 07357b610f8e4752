package dnsrecord

import (
	"slices"
	"strings"
	"testing"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

// FuzzServiceEndpoints checks what must hold for any member topology: a name
// with a CNAME has nothing else, a CNAME has one target, no target ends in a
// dot (ExternalDNS drops such endpoints), a CNAME inside the record's names
// points at a name that exists, and member order does not matter.
func FuzzServiceEndpoints(f *testing.F) {
	f.Add("east", "a,b", "192.0.2.1", "west", "c", "", "host:lb.example.net", "")
	f.Add("", "a", "2001:db8::1", "East", "zone_x", "192.0.2.2,192.0.2.2", "", "www")
	f.Fuzz(func(t *testing.T, region1, zones1, addrs1, region2, zones2, addrs2, addrs3, prefix string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		rec := serviceRecord(dnsv1a1.ServiceDNSRecordSpec{DNSPrefix: prefix}, "example.com",
			member("c1", region1, split(zones1), split(addrs1)...),
			member("c2", region2, split(zones2), split(addrs2)...),
			member("c3", region1, nil, split(addrs3)...))
		eps := ServiceEndpoints(rec)

		types := map[string][]string{}
		for _, ep := range eps {
			types[ep.DNSName] = append(types[ep.DNSName], ep.RecordType)
			for _, target := range ep.Targets {
				if strings.HasSuffix(target, ".") || target == "" {
					t.Fatalf("%s %s has target %q", ep.DNSName, ep.RecordType, target)
				}
			}
			if ep.RecordType == dnsv1a1.RecordTypeCNAME && len(ep.Targets) != 1 {
				t.Fatalf("CNAME %s has %d targets", ep.DNSName, len(ep.Targets))
			}
		}
		for name, ts := range types {
			if slices.Contains(ts, dnsv1a1.RecordTypeCNAME) && len(ts) > 1 {
				t.Fatalf("%s has a CNAME beside %v", name, ts)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(ts)))) != len(ts) {
				t.Fatalf("%s has a record type twice: %v", name, ts)
			}
		}
		for _, ep := range eps {
			if ep.RecordType != dnsv1a1.RecordTypeCNAME {
				continue
			}
			if target := ep.Targets[0]; strings.HasPrefix(target, "web.shop.fed.svc.") {
				if _, ok := types[target]; !ok {
					t.Fatalf("CNAME %s points at %s, which has no record", ep.DNSName, target)
				}
			}
		}

		reversed := rec.DeepCopy()
		slices.Reverse(reversed.Status.DNS)
		if a, b := render(eps), render(ServiceEndpoints(reversed)); !slices.Equal(a, b) {
			t.Fatalf("member order changed the records:\n%v\n%v", a, b)
		}
	})
}
