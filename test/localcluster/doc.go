// Package localcluster runs a KubeFed host cluster and any number of member
// clusters as real etcd, kube-apiserver and kube-controller-manager processes
// on the loopback interface, without Docker or a kubelet. With
// Options.Nodes, each member also runs kube-scheduler and kwok, which
// simulates Nodes and their kubelets: pods are scheduled onto them and become
// Ready, Job pods complete, and a pod too large for any node is Unschedulable.
//
// It exists so that integration tests and developers get genuine Kubernetes
// API semantics (admission, RBAC, garbage collection, namespace deletion)
// across several clusters in seconds, and can simulate a member outage by
// stopping one cluster's kube-apiserver.
package localcluster
