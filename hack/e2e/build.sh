#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy into
# .cache/e2e/bin, for the end-to-end suite (see hack/e2e.sh). Nothing but Go
# and network access to the module proxy is needed. The first build takes
# minutes; afterwards the binaries are reused as long as
# .cache/e2e/bin/VERSIONS names the versions asked for (binaries from before
# the stamp existed are adopted when their --version output matches).
#
#   K8S_VERSION   Kubernetes release to build (default v1.37.2; its
#                 staging modules are taken at the matching v0.x.y)
#   ETCD_VERSION  etcd release (default: the one that Kubernetes release requires)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
staging=v0.${K8S_VERSION#v1.}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.cache/e2e
mod=$out/tools
mkdir -p "$mod" "$out/bin"
cd "$mod"

# k8s.io/kubernetes replaces its staging modules with local directories that
# its module zip does not hold; a module of our own requires it and points
# each of those at its published version instead.
k8s_mod=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -n "$k8s_mod" ] || { echo "build.sh: cannot download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
etcd_version=${ETCD_VERSION:-$(sed -n 's/^[[:space:]]*go.etcd.io\/etcd\/server\/v3 \(v[^ ]*\).*/\1/p' "$k8s_mod" | sed -n 1p)}

stamp=$out/bin/VERSIONS
want="kube-apiserver $K8S_VERSION
etcd $etcd_version"
if [ -x "$out/bin/kube-apiserver" ] && [ -x "$out/bin/etcd" ]; then
  if [ ! -f "$stamp" ] &&
    [ "$("$out/bin/kube-apiserver" --version)" = "Kubernetes $K8S_VERSION" ] &&
    [ "$("$out/bin/etcd" --version | sed -n 1p)" = "etcd Version: ${etcd_version#v}" ]; then
    printf '%s\n' "$want" > "$stamp"
  fi
  if [ "$(cat "$stamp" 2> /dev/null)" = "$want" ]; then
    echo "build.sh: reusing kube-apiserver $K8S_VERSION and etcd $etcd_version in $out/bin" >&2
    exit 0
  fi
fi
rm -f "$stamp"

{
  echo "module kreflector.local/e2e-tools"
  echo
  echo "go 1.26"
  echo
  echo "require ("
  echo "	k8s.io/kubernetes $K8S_VERSION"
  echo "	go.etcd.io/etcd/server/v3 $etcd_version"
  echo ")"
  echo
  echo "replace ("
  sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9-]*\) v0\.0\.0\([[:space:]].*\)\{0,1\}$/\1/p' "$k8s_mod" | sort -u |
    while read -r m; do echo "	$m => $m $staging"; done
  echo ")"
} > go.mod

echo "build.sh: kube-apiserver $K8S_VERSION (staging $staging), etcd $etcd_version" >&2
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
version_flags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
GOFLAGS=-mod=mod go build -ldflags "$version_flags" -o "$out/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
GOFLAGS=-mod=mod go build -o "$out/bin/etcd" go.etcd.io/etcd/server/v3
"$out/bin/kube-apiserver" --version
"$out/bin/etcd" --version | sed -n 1p
printf '%s\n' "$want" > "$stamp"
