#!/usr/bin/env bash
# Builds the real peers the tests run against, from the Go module proxy, into build/peers/:
#
#   kube         kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy
#                (k8s.io/kubernetes, tests/tools/kube/go.mod), version stamped by -ldflags
#   coredns      the cluster's DNS (github.com/coredns/coredns, tests/tools/coredns/go.mod)
#   kube-router  the NetworkPolicy firewall (tests/tools/kube-router/go.mod)
#   kube-next    the newest Kubernetes minor (tests/tools/kube-next), only when named: tried
#                by hand with REALKUBE_BIN_DIR (docs/testing.md, "Kubernetes 1.37")
#   argocd       upstream Argo CD's multi-call `argocd` binary (github.com/argoproj/argo-cd/v3,
#                tests/tools/argocd), for the real Argo CD the real-cluster tier installs
#   kustomize    kustomize at the release the pinned Argo CD's image carries (its
#                hack/tool-versions.sh), tests/tools/kustomize: the argocd image's kustomize
#   fn-catalog   kpt catalog functions (github.com/kptdev/krm-functions-catalog/functions/go/
#                set-namespace, starlark), tests/tools/fn-catalog
#   fn-apply-setters  the catalog's apply-setters, in a module of its own (an older kyaml)
#   fn-org       an organisation's own functions on kyaml's fn/framework, source and pins in
#                tests/tools/fn-org (app-generator, inject-defaults, file-config, net-config)
# The functions are built as the catalog's Dockerfile builds them (no -s -w: the images'
# sizes are upstream's); tests/realkube/images.py lays them out as its images.
#   cosign       sigstore's cosign v3 (tests/tools/cosign), only when named: the signing tool
#                the signature tests sign with (issue 22)
#   cosign-v2    cosign v2 (tests/tools/cosign-v2), only when named: the key-based legacy
#                signature format
#   ocireg       go-containerregistry's registry (pkg/registry) with the OCI 1.1 referrers
#                API on, over TLS (tests/tools/ocireg: its main.go and pins), only when
#                named: where cosign v3's bundles are found through that API
#   crane        go-containerregistry's crane (tests/tools/crane), only when named: pushes a
#                release's OCI image layout as an index (scripts/release-publish)
# argocd and kustomize need Go 1.27 (their go.mod), which the go command takes from the
# module proxy (GOTOOLCHAIN=go1.27.3).
#
# Each peer is a Go module of its own under tests/tools/<peer>/ (their dependency graphs
# collide), pinned by its go.mod and go.sum. A peer is built again only when its pins, this
# script or the Go toolchain changed: build/peers/<peer>/.stamp holds the hash of all three.
# CGO_ENABLED=0 and -trimpath: static binaries that do not depend on this checkout's path.
#
#   scripts/build-peers.sh [PEER...]      (no PEER: all of them); prints nothing on stdout
#   scripts/build-peers.sh --dir PEER     prints build/peers/<PEER>'s absolute path
# KRMPOD_PEERS_DIR=DIR builds into DIR instead of build/peers.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${KRMPOD_PEERS_DIR:-$ROOT/build/peers} # another place: the tests of this script
ALL=(kube coredns kube-router argocd kustomize fn-catalog fn-apply-setters fn-org)

log() { echo "build-peers: $*" >&2; }
die() { log "error: $*"; exit 1; }

# what each peer builds: "PACKAGE[:NAME]" per binary
targets() {
	case $1 in
	kube | kube-next)
		local c
		for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
			echo "k8s.io/kubernetes/cmd/$c"
		done
		;;
	coredns) echo "github.com/coredns/coredns" ;;
	argocd) echo "github.com/argoproj/argo-cd/v3/cmd:argocd" ;;
	kustomize) echo "sigs.k8s.io/kustomize/kustomize/v5:kustomize" ;;
	kube-router) echo "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router" ;;
	fn-catalog)
		echo "github.com/kptdev/krm-functions-catalog/functions/go/set-namespace"
		echo "github.com/kptdev/krm-functions-catalog/functions/go/starlark"
		;;
	fn-apply-setters) echo "github.com/kptdev/krm-functions-catalog/functions/go/apply-setters" ;;
	fn-org) printf './%s\n' app-generator inject-defaults file-config net-config ;;
	cosign) echo "github.com/sigstore/cosign/v3/cmd/cosign" ;;
	cosign-v2) echo "github.com/sigstore/cosign/v2/cmd/cosign" ;;
	ocireg) echo "." ;;
	crane) echo "github.com/google/go-containerregistry/cmd/crane" ;;
	*) die "unknown peer '$1' (known: ${ALL[*]} kube-next cosign cosign-v2 ocireg crane)" ;;
	esac
}

# the version a module requires, from `go list -m` in the peer's module
required() { (cd "$ROOT/tests/tools/$1" && GOTOOLCHAIN=$(toolchain "$1") GOFLAGS=-mod=mod go list -m -f '{{.Version}}' "$2"); }

# -ldflags for a peer: Kubernetes reports the version its ldflags stamp (else v0.0.0-master)
ldflags() {
	local flags="-s -w"
	case $1 in fn-*) flags="" ;; esac # as the catalog's Dockerfile: `go build -o ... ./`
	if [ "$1" = kube ] || [ "$1" = kube-next ]; then
		local v major minor
		v=$(required "$1" k8s.io/kubernetes) || die "cannot read k8s.io/kubernetes's version from tests/tools/$1/go.mod"
		major=${v#v}; major=${major%%.*}
		minor=${v#v*.}; minor=${minor%%.*}
		local pkg
		for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
			flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
		done
	fi
	if [ "$1" = argocd ]; then # `argocd version` says the release, as upstream's build does
		local v
		v=$(required argocd github.com/argoproj/argo-cd/v3) || die "cannot read Argo CD's version from tests/tools/argocd/go.mod"
		flags+=" -X github.com/argoproj/argo-cd/v3/common.version=${v#v}"
		flags+=" -X github.com/argoproj/argo-cd/v3/common.gitTag=$v"
	fi
	echo "$flags"
}

# the Go toolchain a peer is built with: this machine's, but where the peer's go.mod needs a
# newer one, that approved release from the module proxy
toolchain() {
	case $1 in
	argocd | kustomize) echo go1.27.3 ;;
	*) echo local ;;
	esac
}

stamp_of() {
	local mod=$ROOT/tests/tools/$1
	{
		cat "$mod/go.mod" "$mod/go.sum"
		find "$mod" -name '*.go' -type f -print0 | sort -z | xargs -0 -r cat # fn-org's source
		cat "${BASH_SOURCE[0]}"
		(cd "$mod" && GOTOOLCHAIN=$(toolchain "$1") go version)
	} | sha256sum | cut -d' ' -f1
}

build_peer() {
	local peer=$1 mod=$ROOT/tests/tools/$1 dir=$OUT/$1 stamp
	[ -f "$mod/go.mod" ] || die "tests/tools/$peer/go.mod is missing: the pins of peer '$peer'"
	stamp=$(stamp_of "$peer")
	if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
		return 0
	fi
	local t0=$SECONDS pkgs
	mapfile -t pkgs < <(targets "$peer")
	mkdir -p "$dir"
	rm -f "$dir/.stamp"
	log "$peer: building ${pkgs[*]##*/} from tests/tools/$peer (first time: module downloads and a full compile, minutes; log: $dir/build.log)"
	local named=() p
	for p in "${pkgs[@]}"; do [[ $p == *:* ]] && named+=("$p"); done
	if [ ${#named[@]} -gt 0 ]; then # one package built under a name of its own
		[ ${#pkgs[@]} -eq 1 ] || die "$peer: a named target must be the only one"
		set -- -o "$dir/${pkgs[0]#*:}" "${pkgs[0]%%:*}"
	else
		set -- -o "$dir/" "${pkgs[@]}"
	fi
	if ! (cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=readonly GOTOOLCHAIN=$(toolchain "$peer") \
		go build -trimpath -ldflags "$(ldflags "$peer")" "$@") >"$dir/build.log" 2>&1; then
		tail -n 20 "$dir/build.log" >&2
		if grep -qE 'proxy.golang.org|dial tcp|no such host|i/o timeout|connection refused' "$dir/build.log"; then
			die "$peer: the Go module proxy could not be reached (see $dir/build.log); check the network or GOPROXY ($(go env GOPROXY)) and run again"
		fi
		die "$peer: go build failed (see $dir/build.log); its pins are tests/tools/$peer/go.mod"
	fi
	for p in "${pkgs[@]}"; do
		p=${p#*:}
		[ -x "$dir/${p##*/}" ] || die "$peer: go build made no ${p##*/} in $dir"
	done
	echo "$stamp" >"$dir/.stamp"
	log "$peer: built in $((SECONDS - t0)) s"
}

command -v go >/dev/null || die "no 'go' on PATH: the peers are built with Go (1.24 or newer) from the Go module proxy; install Go and run again"

if [ "${1:-}" = --dir ]; then
	[ -n "${2:-}" ] || die "usage: build-peers.sh --dir PEER"
	targets "$2" >/dev/null
	echo "$OUT/$2"
	exit 0
fi
peers=("$@")
[ ${#peers[@]} -gt 0 ] || peers=("${ALL[@]}")
for p in "${peers[@]}"; do
	targets "$p" >/dev/null
	build_peer "$p"
done
