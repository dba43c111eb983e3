#!/usr/bin/env bash
# The end-to-end suite on a real kube-apiserver and etcd.
#
#   hack/e2e.sh [go test flags…]      e.g. hack/e2e.sh -run TestCompaction
#
# 1. builds both servers into .cache/e2e/bin (hack/e2e/build.sh; reused when
#    the versions match: K8S_VERSION and ETCD_VERSION choose them);
# 2. starts etcd and kube-apiserver on loopback with fresh data, keys and
#    certificates in a new temporary directory (hack/e2e/cluster.sh up);
# 3. runs `go test -tags e2e -race -count=1 -v ./e2e/...` with
#    KREFLECTOR_E2E_DIR set to that directory (the tests stop and start the
#    servers through hack/e2e/cluster.sh too), then the same in the
#    controller-runtime integration module (integration/controllerruntime);
# 4. always, also on failure or SIGINT/SIGTERM: stops the tests, prints the
#    tail of each server log if something failed, stops both servers by
#    their pids and removes the directory.
# The exit status is go test's (130/143 when interrupted).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cluster=$root/hack/e2e/cluster.sh
cd "$root"

"$root/hack/e2e/build.sh"

dir=$(mktemp -d "${TMPDIR:-/tmp}/kreflector-e2e.XXXXXX")
test_pid=

# stop_tests ends a go test still running, with the test binary and any
# server a test restarted: they share the process group go test leads.
stop_tests() {
  [ -n "$test_pid" ] || return 0
  kill -TERM -- "-$test_pid" 2> /dev/null || true
  wait "$test_pid" 2> /dev/null || true
  test_pid=
}

cleanup() {
  local status=$?
  # Cleaning up is not interrupted; it is bounded by cluster.sh's stop
  # timeouts.
  trap - EXIT
  trap '' INT TERM
  stop_tests
  if [ "$status" -ne 0 ]; then
    "$cluster" logs "$dir" 50 || true
  fi
  if [ -f "$dir/env" ]; then
    "$cluster" down "$dir" || status=1
  fi
  rm -rf "$dir"
  echo "e2e.sh: cluster stopped and $dir removed (exit $status)" >&2
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$cluster" up "$dir"

# go test runs in its own process group (set -m) so that stop_tests can end
# it with everything it started, and in the background so that a signal to
# this script is handled at once rather than after the tests.
set -m
# The controller-runtime integration (a module of its own) runs on the same
# cluster after the suite.
(
  export KREFLECTOR_E2E_DIR=$dir
  go test -tags e2e -race -count=1 -timeout 30m -v "$@" ./e2e/...
  cd integration/controllerruntime
  go test -tags e2e -race -count=1 -timeout 10m -v "$@" ./...
) &
test_pid=$!
set +m
status=0
wait "$test_pid" || status=$?
test_pid=
exit "$status"
