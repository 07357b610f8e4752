// Package informermanager keeps one shared, label-filtered informer per
// (member cluster, resource) that every controller subscribes to, instead of
// each controller watching every member itself.
// Informers start lazily, sync in the background without blocking anyone, and
// a member that is down or does not serve a resource only leaves its own
// caches unsynced.
package informermanager
