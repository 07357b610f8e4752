// Package dns holds the multi-cluster DNS controllers: two fill the status of
// ServiceDNSRecords and IngressDNSRecords with what the ready member clusters'
// Services and Ingresses offer, and one turns each record into a DNSEndpoint
// for ExternalDNS to publish. The record decisions live in pkg/dnsrecord;
// this package only reads, enqueues and writes.
package dns
