#!/usr/bin/env bash
# Installs the build tools krmpod's dependency build needs, with apt-get, only when missing.
set -euo pipefail
need=()
for pkg in gcc libc6-dev linux-libc-dev make cmake musl-tools xz-utils bzip2 ca-certificates debian-archive-keyring perl; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "install-build-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
