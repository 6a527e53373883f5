#!/usr/bin/env bash
# The KRM function images of e2e/app must be pinned by digest (IMAGE:TAG@sha256:...), so the
# e2e test runs exactly the function code it was written against.
#
#   e2e/pin-images.sh [--check]   offline: every function image is pinned; exit 1 naming the
#                                 ones that are not (e2e/run.sh runs this first)
#   e2e/pin-images.sh --write     resolve the digest of every unpinned image's tag from its
#                                 registry, print it and rewrite the image line in e2e/app
#                                 (commit the result)
#   e2e/pin-images.sh --verify    ask the registry: each pinned digest exists, and whether the
#                                 tag still points at it (a moved tag is a warning)
#
# Resolving uses the first of: crane, skopeo, docker buildx imagetools, docker pull. The digest
# is the one `docker pull IMAGE:TAG` records (the multi-arch index when there is one).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

mode=check
case ${1:-} in
"" | --check) ;;
--write) mode="write" ;;
--verify) mode=verify ;;
-h | --help)
	sed -n '2,16p' "$0"
	exit 0
	;;
*) die "unknown argument '$1'" "usage: e2e/pin-images.sh [--check | --write | --verify]" ;;
esac

is_pinned() { printf '%s\n' "$1" | grep -Eq '@sha256:[0-9a-f]{64}$'; }

sha256_stdin() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi | awk '{print "sha256:" $1}'; }

# resolve_digest REF: the registry's digest for REF (a tag or a digest reference).
resolve_digest() {
	local ref=$1 d=
	if command -v crane >/dev/null 2>&1; then
		d=$(crane digest "$ref" 2>/dev/null || true)
	elif command -v skopeo >/dev/null 2>&1; then
		d=$(skopeo inspect --raw "docker://$ref" 2>/dev/null | sha256_stdin || true)
	elif command -v docker >/dev/null 2>&1 && docker buildx version >/dev/null 2>&1; then
		d=$(docker buildx imagetools inspect "$ref" 2>/dev/null | awk '$1 == "Digest:" {print $2; exit}' || true)
	elif command -v docker >/dev/null 2>&1; then
		docker pull -q "$ref" >/dev/null 2>&1 &&
			d=$(docker image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$ref" |
				awk -F@ -v r="$(image_name "$ref")" '$1 == r || $1 == "docker.io/" r {print $2; exit}')
	else
		die "no tool to ask a registry for a digest" \
			"fix: install crane (go install github.com/google/go-containerregistry/cmd/crane@latest)," \
			"     skopeo, or Docker (docker buildx imagetools inspect IMAGE:TAG)"
	fi
	printf '%s\n' "$d" | grep -Eq '^sha256:[0-9a-f]{64}$' || return 1
	printf '%s\n' "$d"
}

unpinned=
for img in $(function_images); do is_pinned "$img" || unpinned="$unpinned $img"; done

case $mode in
check)
	if [ -n "$unpinned" ]; then
		die "KRM function image(s) in e2e/app not pinned by digest:$unpinned" \
			"fix: e2e/pin-images.sh --write   (resolves and writes the digests; needs crane, skopeo or docker)" \
			"     then commit e2e/app, so everyone tests the same function code"
	fi
	log "all function images in e2e/app are pinned by digest"
	;;
write)
	[ -n "$unpinned" ] || {
		log "all function images in e2e/app are already pinned; nothing to write"
		exit 0
	}
	for img in $unpinned; do
		d=$(resolve_digest "$img") || die "could not resolve the digest of $img" "does the tag exist? are you logged in to its registry?"
		pinned="${img%@*}@$d"
		printf '%s\n' "$pinned"
		for f in $(function_image_files); do
			grep -q "image: $img\$" "$f" || continue
			awk -v old="image: $img" -v new="image: $pinned" '{ i = index($0, old); if (i && substr($0, i) == old) $0 = substr($0, 1, i - 1) new; print }' "$f" >"$f.tmp"
			cat "$f.tmp" >"$f"
			rm -f "$f.tmp"
			log "pinned in ${f#"$ROOT_DIR"/}: $pinned"
		done
	done
	;;
verify)
	bad=0
	for img in $(function_images); do
		if ! is_pinned "$img"; then
			warn "$img is not pinned (e2e/pin-images.sh --write)"
			bad=1
			continue
		fi
		pin=${img##*@}
		byref="$(image_name "$img")@$pin"
		if got=$(resolve_digest "$byref") && [ "$got" = "$pin" ]; then
			log "ok: $byref exists"
		else
			warn "$byref was not found in its registry: the pin is wrong"
			bad=1
			continue
		fi
		tagref=${img%@*}
		if [ "$tagref" != "$(image_name "$img")" ]; then
			cur=$(resolve_digest "$tagref" || true)
			if [ "$cur" = "$pin" ]; then log "ok: $tagref still points at $pin"; else warn "$tagref now points at ${cur:-?}, not the pinned $pin (the pin wins)"; fi
		fi
	done
	[ $bad = 0 ] || die "function image pins need attention (above)"
	;;
esac
