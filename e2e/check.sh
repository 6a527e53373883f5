#!/usr/bin/env bash
# Checks the e2e Application end to end, against the live cluster:
#   1. asks Argo CD for a hard refresh (a fresh render through krmpod, not the cache) and waits
#      until the app is Synced and Healthy at the served commit (E2E_TIMEOUT seconds, default 600);
#   2. the rendered objects (the Application's resource list) and the live ones sit in the
#      namespace set-namespace chose, none in the destination namespace;
#   3. the live objects carry the labels set-labels added (the Deployment's pod template too);
#   4. both functions ran as pods in krmpod-functions during this check (kubelet events name
#      their images);
#   5. no function pod is left behind.
# On failure it prints the Application's status, the sidecar's log and the functions
# namespace's pods and events.
#   --no-refresh   check the current state without forcing a re-render
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

refresh=1
case ${1:-} in
--no-refresh) refresh=0 ;;
"") ;;
*) die "unknown argument '$1'" "usage: e2e/check.sh [--no-refresh]" ;;
esac

require_cluster
app_ns=$(app_namespace)
[ -n "$app_ns" ] || die "could not read data.namespace from $E2E_DIR/app/fn-set-namespace.yaml"
labels=$(app_labels)
[ -n "$labels" ] || die "could not read the labels (data:) from $E2E_DIR/app/fn-set-labels.yaml"
app() { kc -n "$ARGOCD_NAMESPACE" get application "$E2E_APP_NAME" "$@"; }
app >/dev/null 2>&1 || die "Application $ARGOCD_NAMESPACE/$E2E_APP_NAME not found" "fix: run e2e/deploy-app.sh"

diagnostics() {
	{
		echo "---- Application $E2E_APP_NAME: status"
		app -o jsonpath='sync={.status.sync.status} revision={.status.sync.revision} health={.status.health.status} operation={.status.operationState.phase}{"\n"}{range .status.conditions[*]}condition {.type}: {.message}{"\n"}{end}operation message: {.status.operationState.message}{"\n"}' || true
		echo "---- sidecar log (argocd-repo-server, container $KRMPOD_CONTAINER), last 60 lines"
		kc -n "$ARGOCD_NAMESPACE" logs deployment/argocd-repo-server -c "$KRMPOD_CONTAINER" --tail=60 || true
		echo "---- pods in $KRMPOD_FUNCTIONS_NAMESPACE"
		kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get pods -o wide --show-labels || true
		echo "---- events in $KRMPOD_FUNCTIONS_NAMESPACE, last 25"
		kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get events --sort-by=.lastTimestamp 2>/dev/null | tail -25 || true
		if [ -z "$E2E_REPO_URL" ]; then
			echo "---- git server log, last 10 lines"
			kc -n "$E2E_GIT_NAMESPACE" logs deployment/"$E2E_GIT_SERVICE" --tail=10 || true
		fi
		echo "---- more: e2e/README.md, \"Troubleshooting\"; e2e/debug-generate.sh runs the same render on this machine"
	} >&2
}

# epoch_to_utc SECONDS: RFC 3339 UTC (GNU date, then BSD date).
epoch_to_utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "$1" +%Y-%m-%dT%H:%M:%SZ; }
# Events of this check's renders: from a minute before it started (slack for a VM's clock).
since=$(epoch_to_utc $(($(date -u +%s) - 60)))

want_rev=
if [ -z "$E2E_REPO_URL" ]; then
	want_rev=$(kc -n "$E2E_GIT_NAMESPACE" get deployment "$E2E_GIT_SERVICE" \
		-o jsonpath='{.spec.template.metadata.annotations.krmpod-e2e/commit}' 2>/dev/null || true)
fi

# ---- 1. synced and healthy ------------------------------------------------------------------
if [ $refresh = 1 ]; then
	log "hard refresh of $E2E_APP_NAME (re-render through krmpod)"
	kc -n "$ARGOCD_NAMESPACE" annotate application "$E2E_APP_NAME" argocd.argoproj.io/refresh=hard --overwrite >/dev/null
fi
log "waiting up to ${E2E_TIMEOUT}s for $E2E_APP_NAME to be Synced and Healthy${want_rev:+ at $want_rev}"
start=$SECONDS last=
while :; do
	state=$(app -o jsonpath='{.status.sync.status}/{.status.health.status}/{.status.sync.revision}/{.metadata.annotations.argocd\.argoproj\.io/refresh}' 2>/dev/null || true)
	sync=${state%%/*} rest=${state#*/}
	health=${rest%%/*} rest=${rest#*/}
	rev=${rest%%/*} pending_refresh=${rest#*/}
	conds=$(app -o jsonpath='{range .status.conditions[*]}{.type}: {.message}{"\n"}{end}' 2>/dev/null || true)
	now="sync=${sync:-?} health=${health:-?} revision=${rev:-?}${pending_refresh:+ (refresh pending)}"
	if [ "$now|$conds" != "$last" ]; then
		log "$now"
		[ -z "$conds" ] || printf '%s\n' "$conds" | sed 's/^/    /' >&2
		last="$now|$conds"
	fi
	if [ "$sync" = Synced ] && [ "$health" = Healthy ] && [ -z "$pending_refresh" ] &&
		{ [ -z "$want_rev" ] || [ "$rev" = "$want_rev" ]; }; then
		break
	fi
	if [ $((SECONDS - start)) -ge "$E2E_TIMEOUT" ]; then
		diagnostics
		die "$E2E_APP_NAME was not Synced and Healthy${want_rev:+ at $want_rev} after ${E2E_TIMEOUT}s (last: $now)"
	fi
	sleep 3
done
log "$E2E_APP_NAME is Synced and Healthy at ${rev:-?} after $((SECONDS - start))s"

# ---- assertions -----------------------------------------------------------------------------
passed=0 failed=0
pass() {
	passed=$((passed + 1))
	log "ok: $*"
}
fail() {
	failed=$((failed + 1))
	printf '%s e2e: FAIL: %s\n' "$(date +%H:%M:%S)" "$*" >&2
}
# has_labels DESCRIPTION JSON-MAP: every label of fn-set-labels.yaml is in the map.
has_labels() {
	local what=$1 map=$2 kv k v missing=
	for kv in $labels; do
		k=${kv%%=*} v=${kv#*=}
		case $map in *"\"$k\":\"$v\""*) ;; *) missing="$missing $k=$v" ;; esac
	done
	if [ -z "$missing" ]; then pass "$what has the labels set-labels added"; else fail "$what lacks$missing (has $map)"; fi
}

# ---- 2. namespaces --------------------------------------------------------------------------
resources=$(app -o jsonpath='{range .status.resources[*]}{.kind}/{.namespace}/{.name}{"\n"}{end}' || true)
for want in "Namespace//$app_ns" "Deployment/$app_ns/krmpod-e2e-web" "ConfigMap/$app_ns/krmpod-e2e-settings"; do
	if printf '%s\n' "$resources" | grep -qx "$want"; then
		pass "rendered: $want"
	else
		fail "rendered resources lack $want; they are: $(printf '%s' "$resources" | tr '\n' ' ')"
	fi
done
if printf '%s\n' "$resources" | grep -q "^[^/]*/$E2E_DEST_NAMESPACE/"; then
	fail "objects were rendered into the destination namespace $E2E_DEST_NAMESPACE (set-namespace did not run?)"
else
	pass "nothing rendered into the destination namespace $E2E_DEST_NAMESPACE"
fi
for obj in deployment/krmpod-e2e-web configmap/krmpod-e2e-settings; do
	if kc -n "$E2E_DEST_NAMESPACE" get "$obj" >/dev/null 2>&1; then
		fail "$obj exists in the destination namespace $E2E_DEST_NAMESPACE"
	fi
done

# ---- 3. labels ------------------------------------------------------------------------------
for obj in deployment/krmpod-e2e-web configmap/krmpod-e2e-settings; do
	if map=$(kc -n "$app_ns" get "$obj" -o jsonpath='{.metadata.labels}' 2>/dev/null); then
		has_labels "$app_ns/$obj" "$map"
	else
		fail "$obj not found in $app_ns"
	fi
done
has_labels "namespace/$app_ns" "$(kc get namespace "$app_ns" -o jsonpath='{.metadata.labels}' 2>/dev/null || true)"
has_labels "the pod template of $app_ns/deployment/krmpod-e2e-web" \
	"$(kc -n "$app_ns" get deployment krmpod-e2e-web -o jsonpath='{.spec.template.metadata.labels}' 2>/dev/null || true)"
if kc -n "$app_ns" rollout status deployment/krmpod-e2e-web --timeout=120s >/dev/null 2>&1; then
	pass "$app_ns/deployment/krmpod-e2e-web is rolled out"
else
	fail "$app_ns/deployment/krmpod-e2e-web did not roll out"
fi

# ---- 4. the functions ran as pods -----------------------------------------------------------
# kubelet's Pulled event names the image, also when it was already present on the node.
events=$({ kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get events --field-selector involvedObject.kind=Pod \
	-o jsonpath='{range .items[*]}{.lastTimestamp}|{.eventTime}|{.reason}|{.message}{"\n"}{end}' 2>/dev/null || true; } |
	awk -F'|' -v since="$since" '{ ts = ($1 != "" ? $1 : $2); if (substr(ts, 1, 19) >= substr(since, 1, 19)) print }')
for img in $(function_images); do
	repo=$(image_name "$img")
	if printf '%s\n' "$events" | grep -F "|Pulled|" | grep -qF "$repo"; then
		pass "a pod ran ${repo##*/} in $KRMPOD_FUNCTIONS_NAMESPACE (kubelet event since $since)"
	else
		fail "no pod ran ${repo##*/} in $KRMPOD_FUNCTIONS_NAMESPACE since $since (no kubelet Pulled event names $repo)"
	fi
done

# ---- 5. nothing left behind -----------------------------------------------------------------
left=
for _ in $(seq 1 30); do
	left=$(kc -n "$KRMPOD_FUNCTIONS_NAMESPACE" get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}' 2>/dev/null || true)
	[ -z "$left" ] && break
	sleep 2
done
if [ -z "$left" ]; then
	pass "no function pod is left in $KRMPOD_FUNCTIONS_NAMESPACE"
else
	fail "pods remain in $KRMPOD_FUNCTIONS_NAMESPACE after 60s: $(printf '%s' "$left" | tr '\n' ';')"
fi

log "check: $passed passed, $failed failed"
if [ "$failed" -gt 0 ]; then
	diagnostics
	die "the e2e check failed ($failed of $((passed + failed)) assertions)"
fi
log "PASS: $E2E_APP_NAME rendered by krmpod (set-namespace + set-labels ran as pods), synced and healthy"
