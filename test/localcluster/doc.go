// Package localcluster runs a KubeFed host cluster and any number of member
// clusters as real etcd, kube-apiserver and kube-controller-manager processes
// on the loopback interface, without Docker or a kubelet.
//
// It exists so that integration tests and developers get genuine Kubernetes
// API semantics (admission, RBAC, garbage collection, namespace deletion)
// across several clusters in seconds, and can simulate a member outage by
// stopping one cluster's kube-apiserver.
package localcluster
