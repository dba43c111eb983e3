#!/usr/bin/env bash
# The end-to-end suite: builds a real kube-apiserver and etcd (hack/e2e/build.sh),
# then runs ./e2e, whose TestMain starts both on loopback, runs the Reflector
# against them, and stops them. Extra arguments go to `go test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/hack/e2e/build.sh"
cd "$root"
KREFLECTOR_E2E_BIN="$root/.cache/e2e/bin" go test -race -count=1 -v "$@" ./e2e/
