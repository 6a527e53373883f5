#!/usr/bin/env bash
# Installs what the test suite, the demo and the benchmark need, with apt-get, only when
# something is missing (the normal path is a few dpkg-query calls). Every tier runs it first
# (`make test-deps`), so it names every package a test, the demo or a script calls a command
# of, before any tier runs: scripts/lint_commands.py (`make lint`) fails on a command no
# install script provides (docs/testing.md, "A fresh machine").
#
# clang and libclang-rt-dev (Debian's default clang and its compiler-rt: libFuzzer and the
# sanitizer runtimes) build the fuzz targets (tests/fuzz/fuzz.mk); python3-pytest-xdist runs
# the integration passes in parallel workers; clang-format and shellcheck are `make lint`'s;
# debootstrap makes the Debian root filesystems of the real Argo CD's images (tests/realkube)
# and scripts/fresh-check's root. docker-registry, apache2-utils (htpasswd) and openssl are
# the registry tests' (tests/registrylib.py); procps (pgrep, ps) the integration tests'.
# The real cluster's host side, which scripts/realkube also installs on `start`, but which
# tests/realkube_lifecycle looks at before the first start (issue 28: iptables): containerd,
# runc, containernetworking-plugins, busybox-static, iptables, ipset, conntrack, iproute2,
# kmod (modprobe br_netfilter), curl, util-linux (flock, setpriv), gcc, binutils, libc6-dev
# (the pause binary and test probes) and debian-archive-keyring (etcd from trixie).
set -euo pipefail
need=()
for pkg in python3 python3-pytest python3-pytest-xdist python3-yaml openssl ca-certificates clang-format shellcheck git valgrind \
	docker-registry apache2-utils clang libclang-rt-dev debootstrap procps \
	containerd runc containernetworking-plugins busybox-static iptables ipset conntrack iproute2 kmod curl util-linux \
	gcc binutils libc6-dev debian-archive-keyring; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "install-test-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! command -v kubectl >/dev/null; then
	echo "install-test-deps: kubectl is required (the tests use 'kubectl kustomize' as real kustomize" >&2
	echo "and kubectl as kubesim's reference client); install kubectl 1.30+ and re-run" >&2
	exit 1
fi
