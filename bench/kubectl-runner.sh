#!/usr/bin/env bash
# Baseline: one KRM function run the way kustomize PR 4260 proposed, with kubectl: create the
# pod, wait until it runs, `kubectl attach -i -q`, read the exit code, delete. stdin/stdout
# are the function's. Usage: kubectl-runner.sh IMAGE
set -euo pipefail
image=$1
name=bench-$(date +%s%N | tail -c 9)-$$
kubectl create -o name -f - >/dev/null <<EOF2
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$name","labels":{"krmpod.dev/bench":"kubectl"}},
 "spec":{"restartPolicy":"Never","automountServiceAccountToken":false,
  "containers":[{"name":"fn","image":"$image","stdin":true,"stdinOnce":true,"tty":false}]}}
EOF2
kubectl wait --for=jsonpath='{.status.phase}'=Running "pod/$name" --timeout=120s >/dev/null
kubectl attach -i -q -c fn "$name"
kubectl wait --for=jsonpath='{.status.containerStatuses[0].state.terminated.reason}' "pod/$name" --timeout=60s >/dev/null 2>&1 || true
code=$(kubectl get pod "$name" -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
kubectl delete pod "$name" --grace-period=0 --wait=false >/dev/null 2>&1
exit "${code:-1}"
