#!/usr/bin/env bash
# Installs the host tools the linux/arm64 build needs (release/arm64.mk), with apt-get, only
# when missing: Debian's aarch64 cross gcc and binutils (the cross gcc pulls in
# linux-libc-dev-arm64-cross, the arm64 kernel headers under /usr/aarch64-linux-gnu/include),
# and qemu-user-static, which runs the arm64 binaries here (invoked as qemu-aarch64-static;
# no binfmt_misc registration is needed or relied on). musl for arm64 is not a host package:
# scripts/deps.sh musl-arm64 downloads Debian's musl-dev:arm64 into build/cross/arm64.
set -euo pipefail
"$(dirname "$0")/install-build-deps.sh"
need=()
for pkg in gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu linux-libc-dev-arm64-cross qemu-user-static; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "install-cross-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
