#!/usr/bin/env bash
# Offline checks of the e2e scripts themselves (no Docker, no cluster):
#   * bash -n and shellcheck over e2e/*.sh (shellcheck is required: apt-get install shellcheck);
#   * the scripts other than lib.sh are executable;
#   * every file the scripts name as "$E2E_DIR/..." or "$ROOT_DIR/..." exists, and so does
#     every file e2e/app/kustomization.yaml lists;
#   * e2e/app builds with `kubectl kustomize --enable-alpha-plugins`, a stand-in `docker`
#     (which echoes its input) seeing exactly the function images e2e/app pins, in order;
#   * manifests/ renders the sidecar container install-krmpod.sh looks for;
#   * application.yaml's default plugin name is the one plugin.yaml implies;
#   * the git bundle serve-repo.sh makes clones, with e2e/app at the served path;
#   * ARGOCD_VERSION is the release tests/tools/argocd/go.mod pins;
#   * debug-generate.sh --kubeconfig names a file that is not there.
# Unpinned function images are reported, not failed (e2e/run.sh refuses them).
# Prints "selftest: N passed, N failed"; exits 1 when anything failed.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

passed=0 failed=0
ok() {
	passed=$((passed + 1))
	printf 'selftest: ok: %s\n' "$*"
}
bad() {
	failed=$((failed + 1))
	printf 'selftest: FAIL: %s\n' "$*" >&2
}
make_tmpdir
tmp=$E2E_TMP
scripts=
for s in "$E2E_DIR"/*.sh; do scripts="$scripts ${s##*/}"; done

# ---- one Argo CD version: the one tests/tools/argocd/go.mod pins ----------------------------
case $ARGOCD_VERSION in
v[0-9]*.[0-9]*.[0-9]*) ok "ARGOCD_VERSION $ARGOCD_VERSION, from tests/tools/argocd/go.mod (the real-cluster tier's Argo CD)" ;;
*) bad "ARGOCD_VERSION '$ARGOCD_VERSION': tests/tools/argocd/go.mod names no github.com/argoproj/argo-cd/v3 release" ;;
esac

# ---- syntax and lint ------------------------------------------------------------------------
for s in $scripts; do
	if bash -n "$E2E_DIR/$s" 2>"$tmp/err"; then ok "bash -n $s"; else bad "bash -n $s: $(cat "$tmp/err")"; fi
done
if command -v shellcheck >/dev/null 2>&1; then
	# shellcheck disable=SC2086 # $scripts is a list of file names without spaces
	if (cd "$E2E_DIR" && shellcheck -x $scripts) >"$tmp/sc" 2>&1; then
		ok "shellcheck -x e2e/*.sh ($(shellcheck --version | sed -n 's/^version: //p'))"
	else
		cat "$tmp/sc" >&2
		bad "shellcheck reports problems in e2e/*.sh (above)"
	fi
else
	bad "shellcheck is not installed (fix: apt-get install shellcheck, brew install shellcheck)"
fi
for s in $scripts; do
	[ "$s" = lib.sh ] && continue
	if [ -x "$E2E_DIR/$s" ]; then ok "$s is executable"; else bad "$s is not executable (chmod +x e2e/$s)"; fi
done

# ---- referenced files -----------------------------------------------------------------------
# shellcheck disable=SC2016 # the literal text "$E2E_DIR/..." / "$ROOT_DIR/..." is what is searched
refs=$(for s in $scripts; do
	[ "$s" = selftest.sh ] || grep -oE '"\$(E2E_DIR|ROOT_DIR)/[A-Za-z0-9_./-]+' "$E2E_DIR/$s" || true
done | sed 's/^"//' | sort -u)
for r in $refs; do
	# shellcheck disable=SC2016
	case $r in
	*/) continue ;;
	'$E2E_DIR'/*) path=$E2E_DIR/${r#'$E2E_DIR'/} ;;
	*) path=$ROOT_DIR/${r#'$ROOT_DIR'/} ;;
	esac
	if [ -e "$path" ]; then ok "referenced file exists: ${path#"$ROOT_DIR"/}"; else bad "referenced file missing: ${path#"$ROOT_DIR"/} (named as $r)"; fi
done
listed=$(awk '/^(resources|transformers|generators):/ { l = 1; next } /^[^ #-]/ { l = 0 } l && /^ *- / { sub(/^ *- */, ""); print }' "$E2E_DIR/app/kustomization.yaml")
for f in $listed; do
	if [ -e "$E2E_DIR/app/$f" ]; then ok "e2e/app/kustomization.yaml lists an existing $f"; else bad "e2e/app/kustomization.yaml lists a missing $f"; fi
done
if grep -q "path: $E2E_APP_PATH\$" "$E2E_DIR/application.yaml"; then ok "application.yaml's path is $E2E_APP_PATH"; else bad "application.yaml's source.path is not $E2E_APP_PATH"; fi

# ---- pins -----------------------------------------------------------------------------------
images=$(function_images)
if [ -n "$images" ]; then
	ok "e2e/app uses $(printf '%s\n' "$images" | wc -l | tr -d ' ') function image(s)"
else
	bad "no function image found in e2e/app"
fi
for img in $images; do
	if printf '%s\n' "$img" | grep -Eq '@sha256:[0-9a-f]{64}$'; then
		ok "pinned: $img"
	else
		printf 'selftest: note: %s is not pinned by digest yet (e2e/pin-images.sh --write; e2e/run.sh refuses it)\n' "$img"
	fi
done

# ---- e2e/app builds, the functions are called as pinned -------------------------------------
if command -v kubectl >/dev/null 2>&1; then
	mkdir -p "$tmp/bin"
	# shellcheck disable=SC2016 # the stand-in's own script text
	printf '%s\n' '#!/bin/sh' 'for a in "$@"; do last=$a; done' 'printf "%s\n" "$last" >>"$E2E_SELFTEST_CALLS"' 'exec cat' >"$tmp/bin/docker"
	chmod +x "$tmp/bin/docker"
	: >"$tmp/calls"
	if PATH="$tmp/bin:$PATH" E2E_SELFTEST_CALLS="$tmp/calls" kubectl kustomize --enable-alpha-plugins "$E2E_DIR/app" >"$tmp/app.yaml" 2>"$tmp/err"; then
		ok "kubectl kustomize --enable-alpha-plugins e2e/app builds ($(grep -c '^kind:' "$tmp/app.yaml") objects)"
		transformers=$(awk '/^transformers:/ { l = 1; next } /^[^ #-]/ { l = 0 } l && /^ *- / { sub(/^ *- */, ""); print }' "$E2E_DIR/app/kustomization.yaml")
		expect=$(for f in $transformers; do
			sed -n 's/^[[:space:]]*image:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$E2E_DIR/app/$f"
		done)
		if [ "$(cat "$tmp/calls")" = "$expect" ]; then
			ok "kustomize ran the functions as 'docker run ... IMAGE' in order: $(printf '%s' "$expect" | tr '\n' ' ')"
		else
			bad "kustomize ran $(tr '\n' ' ' <"$tmp/calls"), expected $(printf '%s' "$expect" | tr '\n' ' ')"
		fi
	else
		bad "kubectl kustomize --enable-alpha-plugins e2e/app failed: $(cat "$tmp/err")"
	fi
	if [ -f "$ROOT_DIR/manifests/kustomization.yaml" ]; then
		if kubectl kustomize "$ROOT_DIR/manifests" >"$tmp/manifests.yaml" 2>"$tmp/err"; then
			img=$(container_images "$KRMPOD_CONTAINER" <"$tmp/manifests.yaml" | head -1 | cut -f1)
			if [ -n "$img" ]; then ok "manifests/ renders the sidecar container '$KRMPOD_CONTAINER' (image $img)"; else bad "manifests/ renders no container named '$KRMPOD_CONTAINER' (install-krmpod.sh needs it)"; fi
			if grep -q "^  name: $KRMPOD_FUNCTIONS_NAMESPACE\$" "$tmp/manifests.yaml"; then ok "manifests/ creates namespace $KRMPOD_FUNCTIONS_NAMESPACE"; else bad "manifests/ does not create namespace $KRMPOD_FUNCTIONS_NAMESPACE"; fi
		else
			bad "kubectl kustomize manifests/ failed: $(cat "$tmp/err")"
		fi
	fi
else
	printf 'selftest: note: kubectl not installed; skipped the kustomize checks\n'
fi

# ---- plugin name ----------------------------------------------------------------------------
if [ -f "$ROOT_DIR/plugin.yaml" ]; then
	want=$(plugin_name)
	have=$(sed -n 's/^ *name: \([^ ]*\) *# e2e: plugin.name.*/\1/p' "$E2E_DIR/application.yaml")
	if [ "$want" = "$have" ]; then ok "application.yaml's plugin name $have matches plugin.yaml"; else bad "application.yaml names plugin '$have', plugin.yaml implies '$want' (deploy-app.sh fixes it at run time; update the default)"; fi
fi

# ---- the served repository ------------------------------------------------------------------
if command -v git >/dev/null 2>&1; then
	mkdir -p "$tmp/bundle"
	if c1=$(make_app_bundle "$tmp/bundle") && c2=$(make_app_bundle "$tmp/bundle") &&
		git clone -q --bare "$tmp/bundle/repo.bundle" "$tmp/srv.git" 2>"$tmp/err" &&
		git --git-dir="$tmp/srv.git" cat-file -e "main:$E2E_APP_PATH/kustomization.yaml" 2>>"$tmp/err"; then
		if [ "$c1" = "$c2" ]; then ok "the git bundle clones, $E2E_APP_PATH at main, same content same commit ($c1)"; else bad "the served commit is not reproducible ($c1, then $c2)"; fi
	else
		bad "making or cloning the git bundle failed: $(cat "$tmp/err" 2>/dev/null)"
	fi
fi

# ---- debug-generate.sh --kubeconfig: a file that is not there is named -------------------------
if "$E2E_DIR/debug-generate.sh" --kubeconfig "$tmp/no-such-kubeconfig" >"$tmp/out" 2>"$tmp/err"; then
	bad "debug-generate.sh --kubeconfig with a missing file exited 0"
elif grep -q -- "--kubeconfig $tmp/no-such-kubeconfig: no such readable file" "$tmp/err"; then
	ok "debug-generate.sh --kubeconfig names a missing file"
else
	bad "debug-generate.sh --kubeconfig with a missing file said: $(cat "$tmp/err")"
fi

printf 'selftest: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
