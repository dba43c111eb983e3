#!/usr/bin/env bash
# A throwaway etcd and kube-apiserver on loopback, for the end-to-end suite
# (hack/e2e.sh) and for its tests, which stop and start the servers
# mid-watch. Everything lives in DIR: data, certificates, keys, logs,
# pidfiles and the settings chosen at `up`.
#
#   cluster.sh up DIR            create DIR if needed (it must hold no cluster
#                                yet), choose ports, write keys, tokens, a
#                                kubeconfig and DIR/env, start etcd and then
#                                kube-apiserver, and wait until both are ready
#                                (kube-apiserver-ungated is not started)
#   cluster.sh down DIR          stop both kube-apiservers, then etcd; remove
#                                DIR
#   cluster.sh stop NAME DIR     stop NAME (etcd, kube-apiserver or
#                                kube-apiserver-ungated): SIGTERM to
#                                the pid in DIR/NAME.pid, SIGKILL after
#                                STOP_TIMEOUT seconds; returns once it is gone
#   cluster.sh kill NAME DIR     SIGKILL NAME at once (a crash: no graceful
#                                close of its connections); returns once it
#                                is gone
#   cluster.sh start NAME DIR    start NAME again with the command line fixed
#                                at `up` (same ports, data and certificates)
#                                unless it runs, and wait until it is ready
#                                (kube-apiserver: /readyz, which needs etcd)
#   cluster.sh logs DIR [N]      print the last N (50) lines of each log
#
# kube-apiserver runs with the alpha feature gate ShardedListAndWatch on
# (server-side sharded LIST and WATCH, KEP-5866). kube-apiserver-ungated is
# a second kube-apiserver on the same etcd, with the same certificates,
# tokens and service-account keys but the gate at its default (off), so
# that it ignores ListOptions.shardSelector; it listens on its own port
# (UNGATED_APISERVER_URL) and runs only once started by name.
#
# Servers run in the background under nohup; each start rewrites
# DIR/NAME.pid and appends to DIR/NAME.log, so `down` stops whatever runs,
# whoever started it. DIR/env holds KEY=value lines (never sourced; values
# may hold spaces): ETCD_URL, APISERVER_URL, UNGATED_APISERVER_URL,
# CA_FILE, KUBECONFIG, ADMIN_TOKEN (in system:masters), STRANGER_TOKEN (no
# RBAC rights), ...
#
#   E2E_BIN        where etcd, kube-apiserver and e2ectl are (default
#                  .cache/e2e/bin; e2ectl is built there by `up`)
#   READY_TIMEOUT  how long a start may take (default 90s)
#   STOP_TIMEOUT   seconds between SIGTERM and SIGKILL (default 30)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${E2E_BIN:-$root/.cache/e2e/bin}
ready_timeout=${READY_TIMEOUT:-90s}
stop_timeout=${STOP_TIMEOUT:-30}
names="etcd kube-apiserver kube-apiserver-ungated"

die() { echo "cluster.sh: $*" >&2; exit 1; }

# env_get DIR KEY prints KEY's value from DIR/env.
env_get() {
  local k v
  while IFS='=' read -r k v; do
    if [ "$k" = "$2" ]; then printf '%s\n' "$v"; return 0; fi
  done < "$1/env"
  die "$2 not in $1/env"
}

# server_args NAME DIR sets the array `args` to NAME's command line, made
# of the settings in DIR/env alone (paths included), as fixed at `up`.
server_args() {
  local dir
  dir=$(env_get "$2" DIR)
  case $1 in
  etcd)
    local url peer
    url=$(env_get "$dir" ETCD_URL); peer=$(env_get "$dir" ETCD_PEER_URL)
    args=(--name=e2e "--data-dir=$dir/etcd"
      "--listen-client-urls=$url" "--advertise-client-urls=$url"
      "--listen-peer-urls=$peer" "--initial-advertise-peer-urls=$peer"
      "--initial-cluster=e2e=$peer" --unsafe-no-fsync --log-level=warn
      --enable-grpc-gateway=true)
    ;;
  kube-apiserver | kube-apiserver-ungated)
    local port=APISERVER_PORT gates=--feature-gates=ShardedListAndWatch=true
    if [ "$1" = kube-apiserver-ungated ]; then
      # APIServerIdentity off (and UnknownVersionInteroperabilityProxy,
      # which needs it): the identity lease is named after the hostname,
      # which both servers share, so they would keep overwriting one
      # lease. CBORServingAndStorage on (alpha): it serves CBOR to the
      # clients that ask for it (e2e/cbor_test.go).
      port=UNGATED_APISERVER_PORT gates=--feature-gates=APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false,CBORServingAndStorage=true
    fi
    # The ungated server shares --cert-dir: kube-apiserver writes a
    # self-signed certificate there only when none exists, so both serve
    # the one in CA_FILE (it names 127.0.0.1, whatever the port).
    args=("--etcd-servers=$(env_get "$dir" ETCD_URL)"
      --bind-address=127.0.0.1 --advertise-address=127.0.0.1
      "--secure-port=$(env_get "$dir" "$port")" "--cert-dir=$dir/certs"
      "--token-auth-file=$dir/tokens.csv" --authorization-mode=RBAC
      --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none
      --service-account-issuer=https://kubernetes.default.svc
      "--service-account-key-file=$dir/sa.pub"
      "--service-account-signing-key-file=$dir/sa.key"
      "--watch-cache-sizes=secrets#0" --shutdown-watch-termination-grace-period=2s
      ${gates:+"$gates"})
    ;;
  *) die "unknown server $1 (etcd, kube-apiserver or kube-apiserver-ungated)" ;;
  esac
}

# binary_of NAME prints the name of NAME's binary.
binary_of() {
  case $1 in
  kube-apiserver-ungated) echo kube-apiserver ;;
  *) echo "$1" ;;
  esac
}

# running NAME DIR prints NAME's pid if it runs (not a zombie, and the
# pid's command is NAME's binary, so a recycled pid is not mistaken).
running() {
  local pidfile=$2/$1.pid pid stat cmd
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  kill -0 "$pid" 2>/dev/null || return 1
  if [ -d /proc/self ]; then
    stat=$(cat "/proc/$pid/stat" 2> /dev/null) || return 1
    [[ $stat =~ \)\ Z ]] && return 1
    IFS= read -r -d '' cmd 2> /dev/null < "/proc/$pid/cmdline" || return 1
    [ "$cmd" = "$(env_get "$2" BIN)/$(binary_of "$1")" ] || return 1
  fi
  echo "$pid"
}

# exiting PID says whether PID, a server signalled to stop, has not
# finished exiting: it has closed its sockets (its listening port is
# free) only once it is gone or a zombie. running is not enough here: an
# exiting process's cmdline reads empty once its memory is released,
# which is before its files and sockets are closed, and a server started
# in that window fails to bind its port.
exiting() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  [ -d /proc/self ] || return 0
  stat=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
  ! [[ $stat =~ \)\ Z ]]
}

# wait_ready NAME DIR PID waits until NAME answers as ready.
wait_ready() {
  local dir=$2 bin
  bin=$(env_get "$dir" BIN)
  case $1 in
  etcd) "$bin/e2ectl" etcd-ready -pid "$3" "$(env_get "$dir" ETCD_URL)" "$ready_timeout" ;;
  kube-apiserver)
    "$bin/e2ectl" ready -pid "$3" "$(env_get "$dir" APISERVER_URL)" \
      "$(env_get "$dir" CA_FILE)" "$(env_get "$dir" ADMIN_TOKEN)" "$ready_timeout" ;;
  kube-apiserver-ungated)
    "$bin/e2ectl" ready -pid "$3" "$(env_get "$dir" UNGATED_APISERVER_URL)" \
      "$(env_get "$dir" CA_FILE)" "$(env_get "$dir" ADMIN_TOKEN)" "$ready_timeout" ;;
  esac
}

cmd_start() {
  local name=$1 dir=$2 pid args
  [ -f "$dir/env" ] || die "$dir holds no cluster (no env file)"
  server_args "$name" "$dir"
  if pid=$(running "$name" "$dir"); then
    echo "cluster.sh: $name already running (pid $pid)" >&2
  else
    nohup "$(env_get "$dir" BIN)/$(binary_of "$name")" "${args[@]}" >> "$dir/$name.log" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$dir/$name.pid"
  fi
  if ! wait_ready "$name" "$dir" "$pid"; then
    tail -n 50 "$dir/$name.log" >&2 || true
    die "$name (pid $pid) did not become ready; log: $dir/$name.log"
  fi
  echo "cluster.sh: $name ready (pid $pid)" >&2
}

# cmd_stop NAME DIR [SIGNAL]: SIGNAL (TERM) first, SIGKILL after the timeout.
cmd_stop() {
  local name=$1 dir=$2 signal=${3:-TERM} pid i
  case $name in etcd | kube-apiserver | kube-apiserver-ungated) ;; *) die "unknown server $name" ;; esac
  if ! pid=$(running "$name" "$dir"); then
    rm -f "$dir/$name.pid"
    return 0
  fi
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < stop_timeout * 10; i++)); do
    exiting "$pid" || break
    sleep 0.1
  done
  if exiting "$pid"; then
    echo "cluster.sh: $name (pid $pid) ignored SIGTERM for ${stop_timeout}s; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    while exiting "$pid"; do sleep 0.1; done
  fi
  rm -f "$dir/$name.pid"
  echo "cluster.sh: $name stopped (pid $pid)" >&2
}

# write_files DIR writes everything the servers and clients read.
write_files() {
  local dir=$1 ports etcd_port peer_port api_port ungated_port
  ports=$("$bin/e2ectl" ports 4)
  read -r etcd_port peer_port api_port ungated_port <<< "$ports"
  {
    echo "DIR=$dir"
    echo "BIN=$bin"
    echo "ETCD_URL=http://127.0.0.1:$etcd_port"
    echo "ETCD_PEER_URL=http://127.0.0.1:$peer_port"
    echo "APISERVER_PORT=$api_port"
    echo "APISERVER_URL=https://127.0.0.1:$api_port"
    echo "UNGATED_APISERVER_PORT=$ungated_port"
    echo "UNGATED_APISERVER_URL=https://127.0.0.1:$ungated_port"
    echo "CA_FILE=$dir/certs/apiserver.crt"
    echo "KUBECONFIG=$dir/kubeconfig"
    echo "ADMIN_TOKEN=kreflector-e2e-admin"
    echo "STRANGER_TOKEN=kreflector-e2e-stranger"
  } > "$dir/env"
  "$bin/e2ectl" keys "$dir"
  {
    echo "kreflector-e2e-admin,admin,admin-uid,\"system:masters\""
    echo "kreflector-e2e-stranger,stranger,stranger-uid"
  } > "$dir/tokens.csv"
  chmod 600 "$dir/tokens.csv"
  cat > "$dir/kubeconfig" << EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: "https://127.0.0.1:$api_port"
    certificate-authority: "$dir/certs/apiserver.crt"
users:
- name: admin
  user:
    token: kreflector-e2e-admin
contexts:
- name: e2e
  context:
    cluster: e2e
    user: admin
current-context: e2e
EOF
}

cmd_up() {
  local dir=$1 name
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/env" ] || die "$dir already holds a cluster"
  for name in etcd kube-apiserver; do
    [ -x "$bin/$name" ] || die "no $bin/$name: run hack/e2e/build.sh"
  done
  (cd "$root" && go build -o "$bin/e2ectl" ./hack/e2e/e2ectl)
  write_files "$dir"
  cmd_start etcd "$dir"
  cmd_start kube-apiserver "$dir"
}

cmd_down() {
  local dir=$1
  [ -f "$dir/env" ] || die "$dir holds no cluster (no env file); not removing it"
  cmd_stop kube-apiserver-ungated "$dir"
  cmd_stop kube-apiserver "$dir"
  cmd_stop etcd "$dir"
  rm -rf "$dir"
}

cmd_logs() {
  local dir=$1 n=${2:-50} name
  for name in $names; do
    [ -f "$dir/$name.log" ] || continue
    echo "----- last $n lines of $dir/$name.log"
    tail -n "$n" "$dir/$name.log"
  done
}

usage() { die "usage: cluster.sh up DIR | down DIR | stop NAME DIR | kill NAME DIR | start NAME DIR | logs DIR [N]"; }

case ${1:-} in
up) [ $# -eq 2 ] || usage; cmd_up "$2" ;;
down) [ $# -eq 2 ] || usage; cmd_down "$2" ;;
stop) [ $# -eq 3 ] || usage; cmd_stop "$2" "$3" ;;
kill) [ $# -eq 3 ] || usage; cmd_stop "$2" "$3" KILL ;;
start) [ $# -eq 3 ] || usage; cmd_start "$2" "$3" ;;
logs) [ $# -ge 2 ] || usage; cmd_logs "$2" "${3:-50}" ;;
*) usage ;;
esac
