#!/usr/bin/env bash
# Builds krmpod's C dependencies as static libraries from Debian trixie source packages:
# mbedTLS, curl (HTTP/HTTPS only, mbedTLS backend), libwebsockets (client, mbedTLS), libyaml.
#
#   scripts/deps.sh musl    -> build/deps/musl/{include,lib,cflags,libs}   (musl-gcc, for build/krmpod)
#   scripts/deps.sh glibc   -> build/deps/glibc/{include,lib,cflags,libs}  (gcc, for ASan/valgrind builds)
#   scripts/deps.sh musl-arm64 -> build/deps/musl-arm64/{include,lib,cflags,libs}
#                              (cross: linux/arm64, musl, for build/arm64/krmpod; release/arm64.mk)
#
# musl-arm64 is the musl variant cross-compiled: the same PINS and configure flags, compiled
# with Debian's aarch64 cross gcc (gcc-aarch64-linux-gnu, scripts/install-cross-deps.sh)
# through a musl-gcc-style driver, build/cross/arm64/bin/aarch64-linux-musl-gcc. The driver is
# made here from Debian bookworm's musl-dev:arm64 (MUSL_ARM64 below: the same musl version as
# the host's musl-dev, pinned by the .deb's SHA-256), downloaded with `apt-get download`
# through a second private apt configuration (build/cross/apt: bookworm, arm64 binaries) and
# extracted with dpkg-deb -x into build/cross/arm64/sysroot; its musl-gcc.specs, with its
# /usr paths rewritten to that root, is the driver's -specs, as musl-tools' musl-gcc does for
# amd64. The arm64 kernel headers come from linux-libc-dev-arm64-cross.
#
# Sources are found with `apt-get source --print-uris` through a private apt configuration
# under build/apt, and only the orig tarballs are downloaded (apt-helper) (the machine's own apt lists are never touched). Each orig
# tarball's SHA-256 is pinned below and checked before it is unpacked. We build the upstream
# (orig) sources without Debian's patches: none is needed for a static build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:?usage: scripts/deps.sh musl|glibc|musl-arm64}
case $variant in musl | glibc | musl-arm64) ;; *) echo "deps.sh: unknown variant '$variant' (use musl, glibc or musl-arm64)" >&2; exit 2 ;; esac

# package  upstream-version  orig-tarball  sha256
# The orig tarball's SHA-256 is the pin. Debian's revision of a package moves with
# security updates (4.3.5-1+deb13u2 became +deb13u3), and the orig tarball stays the same,
# so the newest trixie source version with the pinned upstream version is fetched.
PINS=(
	"mbedtls 3.6.6 mbedtls_3.6.6.orig.tar.bz2 8fb65fae8dcae5840f793c0a334860a411f884cc537ea290ce1c52bb64ca007a"
	"curl 8.14.1 curl_8.14.1.orig.tar.gz 6766ada7101d292b42b8b15681120acd68effa4a9660935853cf6d61f0d984d4"
	"libwebsockets 4.3.5 libwebsockets_4.3.5.orig.tar.gz 87f99ad32803ed325fceac5327aae1f5c1b417d54ee61ad36cffc8df5f5ab276"
	"libyaml 0.2.5 libyaml_0.2.5.orig.tar.gz fa240dbf262be053f3898006d502d514936c818e422afdcf33921c63bed9bf2e"
)
# musl-arm64 only: Debian bookworm's musl-dev for arm64 (package, exact Debian version, .deb,
# SHA-256 of the .deb). Its version must be the host's musl-dev version (the one musl-gcc
# builds build/krmpod with), so both binaries are linked with the same musl.
MUSL_ARM64="musl-dev 1.2.3-1 musl-dev_1.2.3-1_arm64.deb 55c2ca4bc3041c8ed8ac7dc3ef6080d9551a21650568b2fd7610b59eaf98a4f4"
cross=$root/build/cross/arm64
cross_cc=$cross/bin/aarch64-linux-musl-gcc

out=$root/build/deps/$variant
stamp=$out/.done
# The stamp records the pins and this script's own hash: any change to the recipe rebuilds.
pins_text="$(printf '%s\n' "${PINS[@]}")
recipe $(sha256sum "$0" | cut -d' ' -f1)"
if [ "$variant" = musl-arm64 ]; then
	pins_text="$pins_text
$MUSL_ARM64"
fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins_text" ] && { [ "$variant" != musl-arm64 ] || [ -x "$cross_cc" ]; }; then
	exit 0
fi

if [ "$variant" = musl-arm64 ]; then
	"$root/scripts/install-cross-deps.sh"
else
	"$root/scripts/install-build-deps.sh"
fi

src=$root/build/src
apt_dir=$root/build/apt
mkdir -p "$src" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
cat >"$apt_dir/sources.list" <<EOF2
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
EOF2
APT_OPTS=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "APT::Sandbox::User=root" -o "Dir::State::status=/dev/null")

fetched_lists=0
fetch() { # package upstream-version tarball sha256
	local pkg=$1 upstream=$2 tarball=$3 sum=$4 ver
	if [ ! -f "$src/$tarball" ]; then
		if [ $fetched_lists = 0 ]; then
			echo "deps: updating the private trixie source list (build/apt)"
			apt-get "${APT_OPTS[@]}" -qq update
			fetched_lists=1
		fi
		# Debian versions of $pkg with upstream version $upstream, newest first.
		ver=$(apt-cache "${APT_OPTS[@]}" showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' |
			grep -E "^([0-9]+:)?${upstream//./\\.}-" | sort -V -r | head -1 || true)
		if [ -z "$ver" ]; then
			echo "deps: Debian trixie no longer has $pkg $upstream; update PINS in scripts/deps.sh" >&2
			exit 1
		fi
		# Only the orig tarball is used, so only it is fetched: `apt-get source` would also
		# ask for the .dsc and Debian tarball of the newest revision the lists name, which
		# the mirror may have replaced already (eight "404 Not Found" lines on a good build).
		local uri
		uri=$(apt-get "${APT_OPTS[@]}" -qq source --print-uris "$pkg=$ver" |
			sed -n "s|^'\([^']*/$tarball\)' .*|\1|p" | head -1)
		if [ -z "$uri" ]; then
			echo "deps: Debian trixie's $pkg=$ver does not list $tarball; update PINS in scripts/deps.sh" >&2
			exit 1
		fi
		echo "deps: fetching $tarball ($pkg=$ver)"
		/usr/lib/apt/apt-helper -qq download-file "$uri" "$src/$tarball" >/dev/null ||
			/usr/lib/apt/apt-helper -qq download-file "$uri" "$src/$tarball" >/dev/null || {
			echo "deps: cannot download $uri (network?)" >&2
			exit 1
		}
	fi
	local got
	got=$(sha256sum "$src/$tarball" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "deps: $tarball: SHA-256 mismatch: expected $sum, got $got" >&2
		exit 1
	fi
}

for pin in "${PINS[@]}"; do
	# shellcheck disable=SC2086
	fetch $pin
done

# musl-arm64: Debian's musl-dev:arm64 .deb, fetched once into build/src and checked against its
# pin, then extracted afresh into build/cross/arm64/sysroot with the driver beside it.
fetch_deb() { # package debian-version deb sha256
	local pkg=$1 ver=$2 deb=$3 sum=$4 host_ver
	# The host's musl (musl-tools' musl-gcc builds build/krmpod) and this one must be the same.
	host_ver=$(dpkg-query -W -f='${Version}' musl-dev 2>/dev/null || true)
	if [ "$host_ver" != "$ver" ]; then
		echo "deps: the host's musl-dev is ${host_ver:-not installed} but scripts/deps.sh pins $pkg:arm64 $ver;" \
			"build/krmpod and build/arm64/krmpod must use the same musl: update MUSL_ARM64 in scripts/deps.sh" \
			"to the host's version (and its .deb's SHA-256)" >&2
		exit 1
	fi
	if [ ! -f "$src/$deb" ]; then
		local capt=$root/build/cross/apt
		mkdir -p "$capt/lists/partial" "$capt/cache/archives/partial"
		cat >"$capt/sources.list" <<EOF2
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
EOF2
		# The machine's own apt lists and dpkg architectures are left alone: this apt sees
		# only arm64 packages of bookworm, and no installed package (status /dev/null).
		local CAPT_OPTS=(-o "Dir::Etc::SourceList=$capt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
			-o "Dir::State::Lists=$capt/lists" -o "Dir::Cache=$capt/cache" -o "APT::Sandbox::User=root"
			-o "Dir::State::status=/dev/null" -o "APT::Architecture=arm64" -o "APT::Architectures::=arm64"
			-o "Acquire::Languages=none" -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false")
		echo "deps: updating the private bookworm arm64 package list (build/cross/apt)"
		apt-get "${CAPT_OPTS[@]}" -qq update || {
			echo "deps: cannot update build/cross/apt's bookworm arm64 list (network?)" >&2
			exit 1
		}
		local served
		served=$(apt-cache "${CAPT_OPTS[@]}" show "$pkg:arm64" 2>/dev/null | sed -n 's/^Version: //p' | sort -V -r | tr '\n' ' ')
		served=${served% }
		if ! grep -qx -- "$ver" <<<"${served// /$'\n'}"; then
			echo "deps: Debian bookworm no longer serves $pkg:arm64 $ver (it has: ${served:-none});" \
				"update MUSL_ARM64 in scripts/deps.sh (the host's musl-dev must move with it)" >&2
			exit 1
		fi
		echo "deps: fetching $deb ($pkg:arm64=$ver)"
		(cd "$capt/cache" && apt-get "${CAPT_OPTS[@]}" -qq download "$pkg:arm64=$ver") || {
			echo "deps: cannot download $pkg:arm64=$ver (network?)" >&2
			exit 1
		}
		mv "$capt/cache/$deb" "$src/$deb" || {
			echo "deps: apt-get download of $pkg:arm64=$ver did not write $deb: check MUSL_ARM64's file name in scripts/deps.sh" >&2
			exit 1
		}
	fi
	local got
	got=$(sha256sum "$src/$deb" | cut -d' ' -f1)
	if [ "$got" != "$sum" ]; then
		echo "deps: $deb: SHA-256 mismatch: expected $sum, got $got" \
			"(delete build/src/$deb to fetch it again, or update MUSL_ARM64 in scripts/deps.sh)" >&2
		exit 1
	fi
}

# The driver: aarch64-linux-gnu-gcc with the extracted musl's specs, the way musl-tools'
# musl-gcc runs x86_64-linux-gnu-gcc with /usr/lib/x86_64-linux-musl/musl-gcc.specs.
make_cross_cc() {
	local sysroot=$cross/sysroot triple=aarch64-linux-musl specs
	case $sysroot in *[[:space:]%]*)
		echo "deps: $sysroot contains a blank or '%', which gcc specs cannot carry; build from a checkout path without them" >&2
		exit 1 ;;
	esac
	rm -rf "$cross"
	mkdir -p "$sysroot" "$cross/bin"
	dpkg-deb -x "$src/${MUSL_ARM64_DEB:?}" "$sysroot"
	specs=$sysroot/usr/lib/$triple/musl-gcc.specs
	[ -f "$specs" ] || { echo "deps: ${MUSL_ARM64_DEB} has no usr/lib/$triple/musl-gcc.specs" >&2; exit 1; }
	sed -e "s|/usr/include/$triple|$sysroot/usr/include/$triple|g" -e "s|/usr/lib/$triple|$sysroot/usr/lib/$triple|g" \
		"$specs" >"$cross/musl-gcc.specs"
	# Every musl path the specs name must now be inside the sysroot, and be there.
	if grep -Eq "(^|[ :])/usr/(include|lib)/$triple" "$cross/musl-gcc.specs"; then
		echo "deps: $specs names a musl path outside $sysroot after the rewrite" >&2
		exit 1
	fi
	local f
	for f in "usr/include/$triple/stdio.h" "usr/lib/$triple/libc.a" "usr/lib/$triple/Scrt1.o" "usr/lib/$triple/crti.o" "usr/lib/$triple/crtn.o"; do
		[ -f "$sysroot/$f" ] || { echo "deps: ${MUSL_ARM64_DEB} has no $f" >&2; exit 1; }
	done
	cat >"$cross_cc" <<EOF2
#!/bin/sh
# Made by scripts/deps.sh musl-arm64: Debian's aarch64 cross gcc against musl-dev:arm64 from
# $MUSL_ARM64_DEB, extracted into $sysroot.
exec "\${REALGCC:-aarch64-linux-gnu-gcc}" "\$@" -specs "$cross/musl-gcc.specs"
EOF2
	chmod +x "$cross_cc"
	# It must make a static arm64 executable.
	printf '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n' >"$cross/probe.c"
	"$cross_cc" -static -o "$cross/probe" "$cross/probe.c" || { echo "deps: $cross_cc cannot link a static program" >&2; exit 1; }
	readelf -h "$cross/probe" | grep -q "Machine: *AArch64" || { echo "deps: $cross_cc made no aarch64 executable" >&2; exit 1; }
	rm -f "$cross/probe" "$cross/probe.c"
}

# The cmake arguments and configure settings that make a cross build (empty for amd64).
CMAKE_CROSS=()
CONFIGURE_CROSS=()
case $variant in
musl)
	CC=musl-gcc
	CFLAGS="-O2 -fPIC -ffunction-sections -fdata-sections"
	;;
musl-arm64)
	# shellcheck disable=SC2086
	set -- $MUSL_ARM64
	MUSL_ARM64_DEB=$3
	fetch_deb "$@"
	make_cross_cc
	CC=$cross_cc
	CFLAGS="-O2 -fPIC -ffunction-sections -fdata-sections" # the musl variant's
	CMAKE_CROSS=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64
		-DCMAKE_AR="$(command -v aarch64-linux-gnu-ar)" -DCMAKE_RANLIB="$(command -v aarch64-linux-gnu-ranlib)"
		-DCMAKE_FIND_ROOT_PATH="$cross/sysroot;$out" -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER
		-DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY
		-DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY)
	CONFIGURE_CROSS=(--build=x86_64-pc-linux-gnu --host=aarch64-linux-musl
		AR=aarch64-linux-gnu-ar RANLIB=aarch64-linux-gnu-ranlib STRIP=aarch64-linux-gnu-strip)
	;;
*)
	CC=gcc
	CFLAGS="-O2 -g -fPIC"
	;;
esac
work=$root/build/deps-work/$variant
rm -rf "$work" "$out"
mkdir -p "$work" "$out/include" "$out/lib"
jobs=$(nproc)

if [ "$variant" = musl ]; then
	# musl-gcc sees only musl's headers; the kernel headers libwebsockets and curl need are
	# made visible in the deps' own include dir.
	for d in linux asm-generic; do ln -sfn "/usr/include/$d" "$out/include/$d"; done
	ln -sfn /usr/include/x86_64-linux-gnu/asm "$out/include/asm"
elif [ "$variant" = musl-arm64 ]; then
	# The same for arm64: the kernel headers of linux-libc-dev-arm64-cross.
	for d in linux asm-generic asm; do
		[ -d "/usr/aarch64-linux-gnu/include/$d" ] ||
			{ echo "deps: /usr/aarch64-linux-gnu/include/$d is missing (install linux-libc-dev-arm64-cross)" >&2; exit 1; }
		ln -sfn "/usr/aarch64-linux-gnu/include/$d" "$out/include/$d"
	done
fi

unpack() { # tarball -> prints dir
	local dir=$work/${1%%.orig.tar.*}
	mkdir -p "$dir"
	tar -xf "$src/$1" -C "$dir" --strip-components=1
	echo "$dir"
}

t0=$(date +%s)
echo "deps[$variant]: mbedTLS"
d=$(unpack mbedtls_3.6.6.orig.tar.bz2)
# Thread safety: krmpod makes TLS handshakes on several threads at once (the REST client, the
# watch and events threads, the WebSocket), and mbedTLS 3.6's PSA key store, which TLS 1.3
# uses for every handshake's keys, is safe for that only with MBEDTLS_THREADING_C and
# MBEDTLS_THREADING_PTHREAD (off in the default configuration). Without them concurrent
# handshakes race on the key slots (LeakSanitizer caught a key buffer lost that way).
cfg="$d/include/mbedtls/mbedtls_config.h"
for opt in MBEDTLS_THREADING_C MBEDTLS_THREADING_PTHREAD; do
	sed -i "s|^//#define $opt\$|#define $opt|" "$cfg"
	grep -q "^#define $opt\$" "$cfg" || { echo "deps: cannot enable $opt in $cfg" >&2; exit 1; }
done
cmake -S "$d" -B "$d/_b" -DCMAKE_BUILD_TYPE=Release "${CMAKE_CROSS[@]}" -DCMAKE_C_COMPILER=$CC -DCMAKE_C_FLAGS="$CFLAGS -I$out/include" \
	-DCMAKE_INSTALL_PREFIX="$out" -DENABLE_PROGRAMS=OFF -DENABLE_TESTING=OFF -DUSE_SHARED_MBEDTLS_LIBRARY=OFF \
	-DUSE_STATIC_MBEDTLS_LIBRARY=ON -DMBEDTLS_FATAL_WARNINGS=OFF -DGEN_FILES=OFF >"$work/mbedtls.log" 2>&1
cmake --build "$d/_b" -j "$jobs" >>"$work/mbedtls.log" 2>&1 && cmake --install "$d/_b" >>"$work/mbedtls.log" 2>&1 ||
	{ tail -30 "$work/mbedtls.log" >&2; echo "deps: mbedTLS build failed (log: $work/mbedtls.log)" >&2; exit 1; }

echo "deps[$variant]: libyaml"
d=$(unpack libyaml_0.2.5.orig.tar.gz)
cmake -S "$d" -B "$d/_b" -DCMAKE_BUILD_TYPE=Release "${CMAKE_CROSS[@]}" -DCMAKE_C_COMPILER=$CC -DCMAKE_C_FLAGS="$CFLAGS" \
	-DCMAKE_INSTALL_PREFIX="$out" -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF -DINSTALL_CMAKE_DIR=lib/cmake/yaml >"$work/yaml.log" 2>&1
cmake --build "$d/_b" -j "$jobs" >>"$work/yaml.log" 2>&1 && cmake --install "$d/_b" >>"$work/yaml.log" 2>&1 ||
	{ tail -30 "$work/yaml.log" >&2; echo "deps: libyaml build failed (log: $work/yaml.log)" >&2; exit 1; }

echo "deps[$variant]: curl"
d=$(unpack curl_8.14.1.orig.tar.gz)
(cd "$d" && env CC=$CC CFLAGS="$CFLAGS" CPPFLAGS="-I$out/include" LDFLAGS="-L$out/lib" \
	PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$out/lib/pkgconfig" \
	./configure "${CONFIGURE_CROSS[@]}" --prefix="$out" --disable-shared --enable-static --with-mbedtls="$out" \
	--disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
	--disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp \
	--disable-gopher --disable-mqtt --disable-manual --disable-docs --disable-ntlm --disable-alt-svc \
	--disable-netrc --disable-progress-meter --disable-dependency-tracking --enable-threaded-resolver \
	--without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 --without-ngtcp2 \
	--without-brotli --without-zstd --without-zlib --without-libssh2 --without-librtmp \
	--without-ca-bundle --without-ca-path >"$work/curl.log" 2>&1 &&
	make -j "$jobs" -C lib >>"$work/curl.log" 2>&1 && make -C lib install >>"$work/curl.log" 2>&1 &&
	make -C include install >>"$work/curl.log" 2>&1) ||
	{ tail -30 "$work/curl.log" >&2; echo "deps: curl build failed (log: $work/curl.log)" >&2; exit 1; }

echo "deps[$variant]: libwebsockets"
# libwebsockets probes mbedTLS with CHECK_FUNCTION_EXISTS, which links a test program against
# the static libraries in the wrong order and so fails for functions mbedTLS 3.6 does have.
# A failed probe silently turns features off (ALPN, SNI, key loading from memory), so the
# answers are given here. All of these exist in mbedTLS 3.6.
LWS_MBEDTLS_PROBES=()
for f in ssl_get_alpn_protocol ssl_conf_alpn_protocols ssl_conf_sni ssl_set_hs_ca_chain \
	ssl_set_hs_own_cert ssl_set_hs_authmode ssl_set_verify net_init x509_crt_parse_file md_setup \
	rsa_complete internal_aes_encrypt; do
	LWS_MBEDTLS_PROBES+=("-DLWS_HAVE_mbedtls_$f=1")
done
d=$(unpack libwebsockets_4.3.5.orig.tar.gz)
cmake -S "$d" -B "$d/_b" -DCMAKE_BUILD_TYPE=Release "${CMAKE_CROSS[@]}" -DCMAKE_C_COMPILER=$CC -DCMAKE_C_FLAGS="$CFLAGS -I$out/include" \
	-DCMAKE_INSTALL_PREFIX="$out" -DLWS_WITH_SHARED=OFF -DLWS_WITH_STATIC=ON -DLWS_WITH_MBEDTLS=ON \
	-DLWS_MBEDTLS_INCLUDE_DIRS="$out/include" \
	-DLWS_MBEDTLS_LIBRARIES="$out/lib/libmbedtls.a;$out/lib/libmbedx509.a;$out/lib/libmbedcrypto.a" \
	-DLWS_WITHOUT_SERVER=ON -DLWS_WITHOUT_TESTAPPS=ON -DLWS_WITH_MINIMAL_EXAMPLES=OFF -DLWS_WITHOUT_EXTENSIONS=ON \
	-DLWS_WITH_ZLIB=OFF -DLWS_WITH_ZIP_FOPS=OFF -DLWS_WITH_SOCKS5=OFF -DLWS_IPV6=ON -DLWS_WITH_HTTP2=OFF \
	-DLWS_WITH_LIBUV=OFF -DLWS_WITH_LIBEV=OFF -DLWS_WITH_LIBEVENT=OFF -DLWS_WITH_GLIB=OFF -DLWS_WITH_SYS_SMD=OFF \
	-DLWS_WITH_SECURE_STREAMS=OFF -DLWS_WITH_SYS_STATE=OFF -DLWS_WITH_LWSWS=OFF -DLWS_WITH_CGI=OFF \
	-DLWS_WITH_DIR=OFF -DLWS_WITH_LEJP=OFF -DLWS_WITH_CUSTOM_HEADERS=OFF -DLWS_WITH_SYS_ASYNC_DNS=OFF \
	-DLWS_WITH_UPNG=OFF -DLWS_WITH_JPEG=OFF -DLWS_WITH_DLO=OFF -DLWS_WITH_CACHE_NSCOOKIEJAR=OFF \
	-DLWS_CTEST_INTERNET_AVAILABLE=OFF -DDISABLE_WERROR=ON -DLWS_HAVE_LIBCAP=OFF \
	"${LWS_MBEDTLS_PROBES[@]}" >"$work/lws.log" 2>&1
cmake --build "$d/_b" -j "$jobs" >>"$work/lws.log" 2>&1 && cmake --install "$d/_b" >>"$work/lws.log" 2>&1 ||
	{ tail -30 "$work/lws.log" >&2; echo "deps: libwebsockets build failed (log: $work/lws.log)" >&2; exit 1; }

# The Makefile reads these two files when a recipe runs (not when it parses), so a fresh
# clone builds the dependencies first and then compiles against them in the same make run.
echo "-isystem $out/include -DCURL_STATICLIB" >"$out/cflags"
echo "$out/lib/libwebsockets.a $out/lib/libcurl.a $out/lib/libmbedtls.a $out/lib/libmbedx509.a $out/lib/libmbedcrypto.a $out/lib/libyaml.a -lpthread -lm" >"$out/libs"
rm -rf "$work"
echo "$pins_text" >"$stamp"
echo "deps[$variant]: done in $(($(date +%s) - t0)) s"
