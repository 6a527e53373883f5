#!/usr/bin/env bash
# The layer check (scripts/layers.py) must fail on each kind of violation it exists for.
# Each case plants one violation in a copy of src/ and expects a non-zero exit and the
# message that names it; the unchanged copy must pass. Run by scripts/lint.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

check() { # NAME EXPECTED-MESSAGE PLANT-COMMAND...
	local name=$1 want=$2
	shift 2
	rm -rf "$tmp/src"
	cp -r src "$tmp/src"
	(cd "$tmp" && "$@")
	local out rc=0
	out=$(/usr/bin/python3 scripts/layers.py --root "$tmp/src" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] && grep -qF -- "$want" <<<"$out"; then
		pass=$((pass + 1))
	else
		echo "test_layers: FAIL $name: rc=$rc, want a message with: $want" >&2
		echo "$out" >&2
		fail=$((fail + 1))
	fi
}

# The unchanged tree passes.
if /usr/bin/python3 scripts/layers.py --root src; then
	pass=$((pass + 1))
else
	echo "test_layers: FAIL the unchanged tree does not pass" >&2
	fail=$((fail + 1))
fi

# A header from a higher layer (kube/ including fn/).
check upward "includes fn/fn_pod.h from a higher layer" \
	sed -i '0,/#include "base\/buf.h"/s//#include "base\/buf.h"\n#include "fn\/fn_pod.h"/' src/kube/kube_http.c
# Peers (kube/ and mounts/ share a layer).
check peers "mounts/ and kube/ are peers" \
	sed -i '0,/#include "base\/xalloc.h"/s//#include "base\/xalloc.h"\n#include "mounts\/tar.h"/' src/kube/kube_api.c
# A circle inside a layer: fn_output.h already includes fn_pod.h; make fn_pod.c include
# fn_run.h, which includes fn_output.h... and fn_run.c includes fn_pod.h.
check circle "circle among modules" \
	sed -i '0,/#include "base\/xalloc.h"/s//#include "base\/xalloc.h"\n#include "fn\/fn_run.h"/' src/fn/fn_pod.c
# A KRMPOD_ variable read outside the settings module.
check krmpod-var "reads a KRMPOD_ variable" \
	sed -i 's|^const char \*tmp_dir(void)$|const char *tmp_dir(void) /* planted */|; s|getenv("TMPDIR")|getenv("KRMPOD_TMPDIR")|' src/base/fdio.c
# An indirect getenv() that could hide one.
check getenv-indirect "getenv() of a non-literal name" \
	sed -i 's|getenv("TMPDIR")|getenv(name_of_tmpdir)|' src/base/fdio.c
# A REST path outside kube_api.c.
check rest-path "builds a REST path" \
	sed -i 's|"/api/v1/namespaces/"|"/api/v1/namespaces/"|; 0,/^#define POLL_MS 50$/s||#define POLL_MS 50\nstatic const char *planted = "/api/v1/namespaces/x/pods";|' src/cmp/kustomize_run.c
# An include that does not name its folder.
check bare-include "does not name its folder" \
	sed -i '0,/#include "base\/clock.h"/s//#include "clock.h"/' src/fn/fn_pod.c
# A goto.
check goto "goto" \
	sed -i '0,/^\treturn 0;$/s//\tgoto out;\nout:\n\treturn 0;/' src/base/fdio.c
# A file named after another folder.
check folder-prefix "named after another folder (fn/)" \
	mv src/config/request.c src/config/fn_request.c
# A function longer than 60 lines.
check long-function "tmp_dir() is 6" \
	/usr/bin/python3 -c 'import re; p = "src/base/fdio.c"; s = open(p).read(); open(p, "w").write(s.replace("const char *tmp_dir(void)\n{\n", "const char *tmp_dir(void)\n{\n" + "\t(void)0;\n" * 60, 1))'

# exit() in the core.
check exit "calls exit(): only src/cli/ ends the process" \
	sed -i '0,/^\treturn 0;$/s//\texit(0);/' src/base/fdio.c
# _exit() outside a forked child's places.
check under-exit "calls _exit() outside a forked child's places" \
	sed -i '0,/^\treturn 0;$/s//\t_exit(0);/' src/base/fdio.c
# Printing from the core.
check printf "prints to stdout or stderr" \
	sed -i '0,/^\treturn 0;$/s//\tfprintf(stderr, "x");\n\treturn 0;/' src/fn/fn_pod.c
# The environment read in a new place.
check getenv "reads the environment" \
	sed -i '0,/^\treturn 0;$/s//\t(void)getenv("HOME");\n\treturn 0;/' src/fn/fn_pod.c
# A folder without its README, and one whose README says too much.
check readme "src/pod/: no README.md" rm src/pod/README.md
append_line() { printf '%s\n' "$2" >>"$1"; }
check readme-lines "the title, a blank line and three lines" \
	append_line src/kube/README.md "one line more"
# A folder that outgrew its share of src/.
grow() { /usr/bin/python3 -c 'import sys; open(sys.argv[1], "a").write("/* planted */\n" * 3000)' "$1"; }
check folder-share "lines of src/ (" grow src/fn/fn_pod.c

# The diagram in docs/architecture.md and the one layers.py makes must agree.
cp docs/architecture.md "$tmp/architecture.md"
if /usr/bin/python3 scripts/layers.py --check-doc "$tmp/architecture.md"; then
	pass=$((pass + 1))
else
	echo "test_layers: FAIL the diagram of docs/architecture.md does not pass" >&2
	fail=$((fail + 1))
fi
sed -i 's|^   pod/      the pod spec|   pod/      the pod specification|' "$tmp/architecture.md"
if ! out=$(/usr/bin/python3 scripts/layers.py --check-doc "$tmp/architecture.md" 2>&1) &&
	grep -qF "the layer diagram is not what scripts/layers.py --diagram makes" <<<"$out"; then
	pass=$((pass + 1))
else
	echo "test_layers: FAIL an edited diagram passes: $out" >&2
	fail=$((fail + 1))
fi

echo "test_layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
