package dns

// ConditionReady is the condition of ServiceDNSRecords and IngressDNSRecords
// that says whether their DNSEndpoint has targets, and why not.
const ConditionReady = "Ready"

// Reasons of ConditionReady.
const (
	// ReasonTargetsFound: at least one ready member has load-balancer targets.
	ReasonTargetsFound = "TargetsFound"
	// ReasonDomainNotFound: the ServiceDNSRecord's domainRef names no Domain
	// in the KubeFed namespace, so no names can be built.
	ReasonDomainNotFound = "DomainNotFound"
	// ReasonServiceNotFound: no ready member has the managed Service.
	ReasonServiceNotFound = "ServiceNotFound"
	// ReasonIngressNotFound: no ready member has the managed Ingress.
	ReasonIngressNotFound = "IngressNotFound"
	// ReasonNoTargets: the Service or Ingress exists but none of its copies
	// has a load-balancer address (with ready endpoints, for a Service).
	ReasonNoTargets = "NoTargets"
	// ReasonInvalidDNSName: a name the record asks for (from its name and
	// namespace, spec.externalName or spec.dnsPrefix; an IngressDNSRecord's
	// host) is not a valid DNS name, and no record is published for it.
	ReasonInvalidDNSName = "InvalidDNSName"
)
