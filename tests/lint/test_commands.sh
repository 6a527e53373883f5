#!/usr/bin/env bash
# The command lint (scripts/lint_commands.py) must fail on each kind of gap it exists for.
# Each case plants one change in a copy of the tree (Makefile, scripts/, tests/, bench/, e2e/) and
# expects a non-zero exit and a message naming the command and where it runs; the unchanged
# copy, and a copy with a script that runs only builtins and its own functions, must pass.
# Run by scripts/lint.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

fresh_copy() {
	rm -rf "$tmp/tree"
	mkdir -p "$tmp/tree"
	cp -r Makefile scripts tests bench e2e "$tmp/tree/"
}
lint() { /usr/bin/python3 scripts/lint_commands.py --root "$tmp/tree" 2>&1; }

# NAME WANT-RC WANT-MESSAGE... (after the tree was planted)
expect() {
	local name=$1 want_rc=$2 out rc=0 w ok=1
	shift 2
	out=$(lint) || rc=$?
	[ "$rc" -eq "$want_rc" ] || ok=0
	for w in "$@"; do grep -qF -- "$w" <<<"$out" || ok=0; done
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
	else
		echo "test_commands: FAIL $name: rc=$rc (want $want_rc), want messages: $*" >&2
		echo "$out" >&2
		fail=$((fail + 1))
	fi
}

# The unchanged tree passes.
fresh_copy
expect unchanged 0 "lint_commands: ok"

# A Python test running a command no package in the table provides.
fresh_copy
cat >"$tmp/tree/tests/test_planted.py" <<'EOF'
import subprocess

def test_x():
    subprocess.run(["frobnicate-tool", "--all"], check=True)
EOF
expect python-unknown 1 "tests/test_planted.py:4" "runs \`frobnicate-tool\`" "add \"frobnicate-tool\""

# The pattern of issue 28: a local wrapper `run(*args)` and the command from a loop's tuple.
fresh_copy
cat >"$tmp/tree/tests/test_planted.py" <<'EOF'
import subprocess


def run(*args):
    return subprocess.run(list(args), stdout=subprocess.PIPE)


def state():
    for tool in ("frob-tables", "frob6tables"):
        run(tool, "-S")
EOF
expect python-wrapper 1 "tests/test_planted.py:10" "runs \`frob-tables\`" "runs \`frob6tables\`"

# A wrapper in another module, called by module name with an argv list.
fresh_copy
cat >"$tmp/tree/tests/plantedlib.py" <<'EOF'
import subprocess


def sh(argv, **kw):
    return subprocess.check_output(argv, **kw)
EOF
cat >"$tmp/tree/tests/test_planted.py" <<'EOF'
import plantedlib

TOOL = "frob-remote"


def test_y():
    plantedlib.sh([TOOL, "x"])
EOF
expect python-module-wrapper 1 "tests/test_planted.py:7" "runs \`frob-remote\`"

# A shell script: a command inside $(...) in a pipeline, after env, in sh -c '...'.
fresh_copy
cat >"$tmp/tree/scripts/planted.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
helper() { echo "$1"; }
x=$(helper a | frob-sort -u)
env FOO=1 frob-env --x
sh -c 'frob-inner arg'
echo "$x"
EOF
expect shell 1 "scripts/planted.sh:4" "runs \`frob-sort\`" "scripts/planted.sh:5" "runs \`frob-env\`" "runs \`frob-inner\`"

# A Makefile recipe (after make's own variables and a continuation line); a variable's
# continuation line is no recipe.
fresh_copy
n=$(wc -l <Makefile)
cat >>"$tmp/tree/Makefile" <<'EOF'

planted:
	@echo "$(VERSION)"; $(PYTHON) -V && \
		frob-make --x
PLANTED := a \
	frob-not-a-command
EOF
expect makefile 1 "runs \`frob-make\`" "Makefile:$((n + 4))"
if grep -q frob-not-a-command <<<"$(lint)"; then
	echo "test_commands: FAIL makefile: a variable's continuation line was read as a recipe" >&2
	fail=$((fail + 1))
fi

# Builtins, keywords, the script's own functions, case patterns, here-documents, [[ ]]:
# no command, so the lint still passes.
fresh_copy
cat >"$tmp/tree/scripts/planted.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
frob_fn() { local a=$1; printf '%s\n' "$a"; }
case "${1:-}" in
frob-pattern) frob_fn x ;;
*) : ;;
esac
while read -r line; do [[ $line == frob-in-test ]] && break; done <<EOF2
frob-heredoc-word
EOF2
for w in frob-a frob-b; do echo "$w"; done
trap - EXIT
EOF
expect no-false-positive 0 "lint_commands: ok"

# A known command whose package no install script names any more: issue 28 itself,
# iptables taken out of install-test-deps.sh (realkube still installs it, but only when it
# starts: the lifecycle test looks at iptables before that).
fresh_copy
sed -i 's/ iptables / /' "$tmp/tree/scripts/install-test-deps.sh"
expect package-dropped 1 "tests/realkube_lifecycle/test_lifecycle.py:" "runs \`iptables\` (Debian package iptables), which no install script provides" \
	"scripts/realkube installs iptables, which scripts/install-test-deps.sh does not"

# A prerequisite of e2e/ only (kind) used by a test.
fresh_copy
printf 'import subprocess\nsubprocess.run(["kind", "get", "clusters"])\n' >"$tmp/tree/tests/test_planted.py"
expect prerequisite-scope 1 "tests/test_planted.py:2" "runs \`kind\`"

# An optional command (tests skip without it) outside the files that may use it so.
fresh_copy
printf 'import shutil\nTOOL = shutil.which("pyspdxtools")\n' >"$tmp/tree/tests/test_planted.py"
expect optional-scope 1 "tests/test_planted.py:2" "runs \`pyspdxtools\`"

# The fresh-machine baseline missing.
fresh_copy
rm "$tmp/tree/tests/lint/fresh-machine-packages.txt"
expect baseline-missing 2 "tests/lint/fresh-machine-packages.txt" "git checkout"

echo "test_commands: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
