// Package metrics defines the Prometheus metrics that KubeFed users already
// scrape, under KubeFed's names. They are registered with controller-runtime's
// registry, so the manager serves them on its metrics endpoint beside its own.
package metrics
