#!/usr/bin/env bash
# The local federation demo: a host and two member clusters on this machine,
# the KubeFed CRDs and default federated types installed in the host, the
# controller-manager running and both members joined. Everything runs as
# local processes; `make clusters-down` stops them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
dir=${LOCAL:-$root/.local}
ns=kube-federation-system
kubeconfig=$dir/kubeconfig
kubectl() { "$root/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
kubefedctl() { "$root/bin/kubefedctl" --kubeconfig "$kubeconfig" "$@"; }

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting a host and 2 member clusters (etcd + kube-apiserver + kube-controller-manager each; members also kube-scheduler and kwok nodes)"
hack/demo-down.sh "$dir" >/dev/null 2>&1 || true
# NODES (default 3), NODE_CPU and NODE_MEMORY size each member's simulated nodes.
go run ./hack/localcluster up --dir "$dir" --members 2 --nodes "${NODES:-3}" \
  --node-cpu "${NODE_CPU:-2}" --node-memory "${NODE_MEMORY:-4Gi}"

step "Installing the KubeFed CRDs into the host"
kubectl --context host apply --server-side -f config/crd/bases -f config/crd/federated >/dev/null
kubectl --context host wait --for condition=established --timeout=60s crd --all >/dev/null
kubectl --context host get crd -o name | grep kubefed.io

step "Enabling the default federated types"
kubectl --context host create namespace "$ns" --dry-run=client -o yaml | kubectl --context host apply -f - >/dev/null
kubectl --context host apply --server-side -f config/default-types >/dev/null
# The admission policies the chart installs (KubeFedConfig defaulting, the
# sync controller's finalizer at creation): no webhook, the API server runs them.
kubectl --context host apply --server-side -f config/admission >/dev/null
# The API server loads them asynchronously, and answers writes they match
# with 503 until it has the new groups' schemas (up to 5 s): wait until a dry
# run of a KubeFedConfig comes back with its feature gates filled.
probe='{"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedConfig", "metadata": {"name": "probe", "namespace": "default"}, "spec": {"scope": "Cluster"}}'
for _ in $(seq 1 120); do
  gates=$(echo "$probe" | kubectl --context host create --dry-run=server -o jsonpath='{.spec.featureGates[*].name}' -f - 2>/dev/null || true)
  [[ -n "$gates" ]] && break
  sleep 0.5
done
kubectl --context host -n "$ns" get federatedtypeconfigs

step "Starting the controller-manager (log: $dir/controller-manager.log)"
setsid nohup "$root/bin/controller-manager" --kubeconfig "$kubeconfig" --context host \
  --metrics-addr 127.0.0.1:28080 --health-addr 127.0.0.1:28081 \
  >"$dir/controller-manager.log" 2>&1 </dev/null &
echo $! >"$dir/controller-manager.pid"
for _ in $(seq 1 60); do
  curl -fsS http://127.0.0.1:28081/healthz >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS http://127.0.0.1:28081/healthz >/dev/null || { tail -20 "$dir/controller-manager.log"; exit 1; }

step "Joining member1 and member2"
kubefedctl join member1 --cluster-context member1 --host-cluster-context host
kubefedctl join member2 --cluster-context member2 --host-cluster-context host
kubectl --context host -n "$ns" wait --for=condition=Ready --timeout=90s kubefedclusters --all
kubectl --context host -n "$ns" get kubefedclusters -o wide

step "Propagating the sample (config/samples/demo.yaml)"
kubectl --context host apply -f config/samples/demo.yaml
kubectl --context host -n demo wait --for=condition=Propagation --timeout=60s federateddeployment/nginx federatedservice/nginx
# The RSP rewrites web's placement and replicas; wait for them to land.
for _ in $(seq 1 60); do
  r1=$(kubectl --context member1 -n demo get deployment web -o jsonpath='{.spec.replicas}' 2>/dev/null || true)
  r2=$(kubectl --context member2 -n demo get deployment web -o jsonpath='{.spec.replicas}' 2>/dev/null || true)
  [[ "$r1/$r2" == "4/2" ]] && break
  sleep 1
done
# The members have simulated nodes (kwok): the pods are really scheduled
# and become Ready.
for c in member1 member2; do
  for d in nginx web; do
    kubectl --context "$c" -n demo rollout status "deployment/$d" --timeout=90s >/dev/null
  done
done
for c in member1 member2; do
  echo "--- $c"
  kubectl --context "$c" get nodes -L topology.kubernetes.io/region,topology.kubernetes.io/zone
  kubectl --context "$c" -n demo get deployments,services -l kubefed.io/managed=true
done
# The federated workloads' status sums their members' ready replicas
# (READY), a moment after the members report them.
for _ in $(seq 1 30); do
  [[ "$(kubectl --context host -n demo get federateddeployment nginx -o jsonpath='{.status.ready}')" == "8/8" ]] && break
  sleep 1
done
echo "--- host"
kubectl --context host -n demo get federateddeployments
kubefedctl --host-cluster-context host status -n demo
kubefedctl --host-cluster-context host get clusters

step "Done"
cat <<MSG
Clusters: host, member1, member2 (kubeconfig: $kubeconfig)
  $root/bin/kubectl --kubeconfig $kubeconfig --context host -n $ns get kubefedclusters -o yaml
  $root/bin/kubectl --kubeconfig $kubeconfig --context host -n $ns get federatedtypeconfigs
  curl -s http://127.0.0.1:28080/metrics | grep kubefedcluster_total
Stop everything with: make demo-down
MSG
