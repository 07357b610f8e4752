package dnsrecord

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
)

// Names of the DNSEndpoints the records are written to, by record kind.
const (
	ServiceEndpointPrefix = "service-"
	IngressEndpointPrefix = "ingress-"
)

// ServiceEndpointName is the name of the DNSEndpoint of a ServiceDNSRecord.
func ServiceEndpointName(record string) string { return ServiceEndpointPrefix + record }

// IngressEndpointName is the name of the DNSEndpoint of an IngressDNSRecord.
func IngressEndpointName(record string) string { return IngressEndpointPrefix + record }

// TTL returns the TTL of a record whose object asks for ttl: the default,
// 180 seconds, when it asks for none.
func TTL(ttl dnsv1a1.TTL) dnsv1a1.TTL {
	if ttl <= 0 {
		return dnsv1a1.DefaultRecordTTL
	}
	return ttl
}

// ServiceNames builds the names of one ServiceDNSRecord:
// <service>.<namespace>.<federation>.svc.[<zone>.][<region>.]<domain>.
type ServiceNames struct {
	// Service is the first label: the Service's name, or the record's
	// externalName, which replaces it as in KubeFed.
	Service    string
	Namespace  string
	Federation string
	Domain     string
}

// NewServiceNames returns the names of rec, whose status.domain must be set.
func NewServiceNames(rec *dnsv1a1.ServiceDNSRecord) ServiceNames {
	service := rec.Name
	if rec.Spec.ExternalName != "" {
		service = rec.Spec.ExternalName
	}
	return ServiceNames{
		Service:    normalizeName(service),
		Namespace:  rec.Namespace,
		Federation: rec.Spec.DomainRef,
		Domain:     normalizeName(rec.Status.Domain),
	}
}

func (n ServiceNames) prefix() string {
	return strings.Join([]string{n.Service, n.Namespace, n.Federation, "svc"}, ".")
}

// Global is the name that answers every healthy target.
func (n ServiceNames) Global() string { return n.prefix() + "." + n.Domain }

// Region is the name that answers the targets of one region.
func (n ServiceNames) Region(region string) string {
	return n.prefix() + "." + region + "." + n.Domain
}

// Zone is the name that answers the targets of one zone of a region.
func (n ServiceNames) Zone(zone, region string) string {
	return n.prefix() + "." + zone + "." + region + "." + n.Domain
}

type zoneKey struct{ region, zone string }

// ServiceEndpoints returns the records of a ServiceDNSRecord, built from its
// spec and the member targets in its status:
//
//   - the global name has A (and AAAA) records with every member's IPs;
//   - each region's name has the IPs of that region's members, and each
//     zone's name those of that zone's members;
//   - a region or zone name whose members have no IP points one level up
//     with a CNAME (zone to region, region to global), so that clients
//     asking for a local name fall back to the nearest healthy targets;
//   - a name whose members have only load-balancer hostnames is a CNAME to
//     the first of them in sorted order, as DNS allows one CNAME per name
//     (ServiceEndpointsResolving resolves them where there are several);
//   - spec.dnsPrefix adds <dnsPrefix>.<domain> as a CNAME to the global name.
//
// There are no records when the global name has no targets, since every
// name would lead nowhere, nor without a domain in the status. Members
// without a region contribute to the global name only, and zones without a
// region are skipped, since their names would have an empty label; so are
// zones and regions that are not valid DNS labels. A name that is not a valid
// DNS name, from an externalName or dnsPrefix with a character DNS does not
// allow, is left out: a provider would reject it, and ExternalDNS sends
// records in batches that one bad name can fail. The order is global,
// regions, zones, prefix, each sorted, so that equal inputs give equal
// DNSEndpoints.
func ServiceEndpoints(rec *dnsv1a1.ServiceDNSRecord) []dnsv1a1.Endpoint {
	eps, _ := ServiceEndpointsResolving(rec, nil)
	return eps
}

// Resolver returns the addresses of a load-balancer hostname, as
// net.Resolver's LookupHost does.
type Resolver func(host string) ([]string, error)

// ServiceEndpointsResolving is ServiceEndpoints, except that where a name
// has more than one load-balancer hostname, or hostnames beside IPs, the
// hostnames are resolved with resolve and their addresses join the name's
// A and AAAA records, as KubeFed resolved every hostname: one CNAME would
// send every client to one cluster. A name whose only target is one
// hostname stays a CNAME to it, which follows the load balancer's
// addresses as they change. A hostname that does not resolve is left out
// beside addresses, and is the CNAME's target where nothing resolved.
// resolved says whether a hostname was looked up: its addresses change
// without the record changing, and a failed lookup may succeed, so the
// caller looks them up again, say every TTL.
func ServiceEndpointsResolving(rec *dnsv1a1.ServiceDNSRecord, resolve Resolver) (eps []dnsv1a1.Endpoint, resolved bool) {
	res := &hostResolver{resolve: resolve}
	return serviceEndpoints(rec, res), res.used
}

func serviceEndpoints(rec *dnsv1a1.ServiceDNSRecord, res *hostResolver) []dnsv1a1.Endpoint {
	names := NewServiceNames(rec)
	if names.Domain == "" || names.Service == "" {
		return nil
	}
	ttl := TTL(rec.Spec.RecordTTL)

	var global Targets
	regions := map[string]*Targets{}
	zones := map[zoneKey]*Targets{}
	for _, c := range rec.Status.DNS {
		t := LoadBalancerTargets(c.LoadBalancer)
		global.merge(t)
		region, ok := dnsLabel(c.Region)
		if !ok {
			continue
		}
		if regions[region] == nil {
			regions[region] = &Targets{}
		}
		regions[region].merge(t)
		for _, z := range c.Zones {
			zone, ok := dnsLabel(z)
			if !ok {
				continue
			}
			k := zoneKey{region: region, zone: zone}
			if zones[k] == nil {
				zones[k] = &Targets{}
			}
			zones[k].merge(t)
		}
	}
	global = global.normalized()
	// Every name of the record starts with the global name's labels: when
	// it is invalid, so are they, and a prefix CNAME would point at it.
	if global.Empty() || !ValidName(names.Global()) {
		return nil
	}

	out := recordsFor(names.Global(), res.targets(global), "", ttl)
	for _, region := range sortedKeys(regions) {
		out = append(out, recordsFor(names.Region(region), res.targets(regions[region].normalized()), names.Global(), ttl)...)
	}
	zoneKeys := make([]zoneKey, 0, len(zones))
	for k := range zones {
		zoneKeys = append(zoneKeys, k)
	}
	slices.SortFunc(zoneKeys, func(a, b zoneKey) int {
		return cmp.Or(strings.Compare(a.region, b.region), strings.Compare(a.zone, b.zone))
	})
	for _, k := range zoneKeys {
		out = append(out, recordsFor(names.Zone(k.zone, k.region), res.targets(zones[k].normalized()), names.Region(k.region), ttl)...)
	}
	if rec.Spec.ExternalName != "" {
		// As KubeFed labelled the records of a name that is not the
		// Service's (ExternalDNS keeps endpoint labels in its TXT records).
		for i := range out {
			out[i].Labels = map[string]string{ServiceNameLabel: rec.Name}
		}
	}
	if prefix := normalizeName(rec.Spec.DNSPrefix); prefix != "" {
		out = append(out, cname(prefix+"."+names.Domain, names.Global(), ttl))
	}
	return validNames(out)
}

// ServiceNameLabel labels the records of a ServiceDNSRecord with
// spec.externalName with the record's name, as in KubeFed.
const ServiceNameLabel = "serviceName"

// IngressEndpoints returns the records of an IngressDNSRecord: each host
// answers the IPs of every member's Ingress, or is a CNAME to the first
// load-balancer hostname when there are no IPs; a host without targets gets
// no record. Hosts are deduplicated and sorted; invalid ones are left out.
func IngressEndpoints(rec *dnsv1a1.IngressDNSRecord) []dnsv1a1.Endpoint {
	eps, _ := IngressEndpointsResolving(rec, nil)
	return eps
}

// IngressEndpointsResolving is IngressEndpoints with load-balancer
// hostnames resolved as ServiceEndpointsResolving does, a lone one too, as
// KubeFed did: an Ingress host may be a zone's apex, or have other records
// (MX, TXT), beside which DNS allows no CNAME.
func IngressEndpointsResolving(rec *dnsv1a1.IngressDNSRecord, resolve Resolver) (eps []dnsv1a1.Endpoint, resolved bool) {
	res := &hostResolver{resolve: resolve}
	return ingressEndpoints(rec, res), res.used
}

func ingressEndpoints(rec *dnsv1a1.IngressDNSRecord, res *hostResolver) []dnsv1a1.Endpoint {
	var all Targets
	for _, c := range rec.Status.DNS {
		all.merge(LoadBalancerTargets(c.LoadBalancer))
	}
	all = all.normalized()
	if all.Empty() {
		return nil
	}
	hosts := make([]string, 0, len(rec.Spec.Hosts))
	for _, h := range rec.Spec.Hosts {
		if h = normalizeName(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	ttl := TTL(rec.Spec.RecordTTL)
	// A lone hostname is resolved too, as KubeFed did: an Ingress host may
	// be a zone's apex, or have other records, beside which DNS allows no
	// CNAME.
	res.lone = true
	all = res.targets(all)
	var out []dnsv1a1.Endpoint
	for _, host := range sortedUnique(hosts) {
		out = append(out, recordsFor(host, all, "", ttl)...)
	}
	return validNames(out)
}

// hostResolver resolves the hostnames of targets where one CNAME cannot
// stand for them, each hostname once per record.
type hostResolver struct {
	resolve Resolver
	seen    map[string][]string
	// lone resolves a hostname that is a name's only target too.
	lone bool
	// used says whether a hostname was looked up: its addresses can
	// change, or a failed lookup succeed, without the record changing.
	used bool
}

// targets returns t with the hostnames resolved where it has more than one
// hostname, or hostnames beside addresses (or one alone, with lone);
// unresolved hostnames stay.
func (h *hostResolver) targets(t Targets) Targets {
	if h == nil || h.resolve == nil || len(t.Hostnames) == 0 || (!h.lone && len(t.Hostnames) == 1 && len(t.IPv4)+len(t.IPv6) == 0) {
		return t
	}
	h.used = true
	if h.seen == nil {
		h.seen = map[string][]string{}
	}
	out := Targets{IPv4: slices.Clone(t.IPv4), IPv6: slices.Clone(t.IPv6)}
	for _, host := range t.Hostnames {
		addrs, ok := h.seen[host]
		if !ok {
			addrs, _ = h.resolve(host)
			h.seen[host] = addrs
		}
		before := len(out.IPv4) + len(out.IPv6)
		for _, a := range addrs {
			out.add(a, "")
		}
		if len(out.IPv4)+len(out.IPv6) == before {
			out.Hostnames = append(out.Hostnames, host)
		}
	}
	return out.normalized()
}

// validNames drops the endpoints whose name is not a valid DNS name.
func validNames(eps []dnsv1a1.Endpoint) []dnsv1a1.Endpoint {
	return slices.DeleteFunc(eps, func(ep dnsv1a1.Endpoint) bool { return !ValidName(ep.DNSName) })
}

// ValidName says whether name is one a DNS provider takes: a DNS-1123
// subdomain of at most 253 characters whose labels have at most 63; a
// leading "*." wildcard label is allowed.
func ValidName(name string) bool {
	name = strings.TrimPrefix(name, "*.")
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return false
		}
	}
	return true
}

// InvalidServiceNames returns the names that rec's spec, name and
// namespace ask for but that are not valid DNS names, sorted, so that
// ServiceEndpoints leaves them out: the global name (from the Service's
// name or spec.externalName, the namespace and spec.domainRef, whose regional
// names share its labels) and spec.dnsPrefix's name. None without a domain
// in the status.
func InvalidServiceNames(rec *dnsv1a1.ServiceDNSRecord) []string {
	names := NewServiceNames(rec)
	if names.Domain == "" || names.Service == "" {
		return nil
	}
	var invalid []string
	if !ValidName(names.Global()) {
		invalid = append(invalid, names.Global())
	}
	if prefix := normalizeName(rec.Spec.DNSPrefix); prefix != "" && !ValidName(prefix+"."+names.Domain) {
		invalid = append(invalid, prefix+"."+names.Domain)
	}
	slices.Sort(invalid)
	return invalid
}

// InvalidIngressHosts returns the hosts of rec that are not valid DNS
// names, normalized and sorted, which IngressEndpoints leaves out.
func InvalidIngressHosts(rec *dnsv1a1.IngressDNSRecord) []string {
	var invalid []string
	for _, h := range rec.Spec.Hosts {
		if h = normalizeName(h); h != "" && !ValidName(h) {
			invalid = append(invalid, h)
		}
	}
	return sortedUnique(invalid)
}

// recordsFor returns the records of one name: its IPs, else a CNAME to its
// first hostname, else a CNAME to up when there is a level above.
func recordsFor(name string, t Targets, up string, ttl dnsv1a1.TTL) []dnsv1a1.Endpoint {
	var out []dnsv1a1.Endpoint
	if len(t.IPv4) > 0 {
		out = append(out, dnsv1a1.Endpoint{DNSName: name, RecordType: dnsv1a1.RecordTypeA, RecordTTL: ttl, Targets: t.IPv4})
	}
	if len(t.IPv6) > 0 {
		out = append(out, dnsv1a1.Endpoint{DNSName: name, RecordType: dnsv1a1.RecordTypeAAAA, RecordTTL: ttl, Targets: t.IPv6})
	}
	switch {
	case len(out) > 0:
	case len(t.Hostnames) > 0:
		out = append(out, cname(name, t.Hostnames[0], ttl))
	case up != "":
		out = append(out, cname(name, up, ttl))
	}
	return out
}

func cname(name, target string, ttl dnsv1a1.TTL) dnsv1a1.Endpoint {
	return dnsv1a1.Endpoint{DNSName: name, RecordType: dnsv1a1.RecordTypeCNAME, RecordTTL: ttl, Targets: []string{target}}
}

// dnsLabel lower-cases s and says whether it can be one label of a name.
func dnsLabel(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	return s, s != "" && len(validation.IsDNS1123Label(s)) == 0
}

// normalizeName lower-cases a DNS name and drops the root's trailing dot.
func normalizeName(s string) string {
	return strings.Trim(strings.ToLower(strings.TrimSpace(s)), ".")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
