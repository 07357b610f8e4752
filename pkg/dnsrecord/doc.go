// Package dnsrecord decides the DNS records of multi-cluster Services and
// Ingresses: the global, region and zone names of a ServiceDNSRecord, what
// each name resolves to, and what a member's Service contributes. It is pure:
// the controllers in controllers/dns feed it API objects and write its answers.
package dnsrecord
