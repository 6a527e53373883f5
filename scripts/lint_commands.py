#!/usr/bin/python3
"""Every external command the tests and scripts run must come from somewhere. Run by
scripts/lint.sh (`make lint`); docs/testing.md, "A fresh machine".

It lists the commands that the Python files (tests/, bench/, scripts/, and the Python
programs there without a .py suffix) and the shell scripts (scripts/*, e2e/*.sh, the shell
programs under tests/) execute on this machine, and fails on each one that nothing provides.
A command is provided by, in this order:

  - the shell itself: builtins and keywords (SHELL_BUILTINS), or a function the script (or a
    file it sources) defines;
  - the project: a path into the checkout (build/krmpod, scripts/..., a peer that
    scripts/build-peers.sh builds under build/peers/) or a name in PROJECT_COMMANDS;
  - a prerequisite the README names (PREREQUISITES: Go, kubectl; e2e/ also needs Docker and
    kind, e2e/README.md);
  - nothing, for the files named, when the tests there skip themselves without it (OPTIONAL,
    each with its reason);
  - a Debian package, by the table COMMANDS (command -> package), when that package is
    named by scripts/install-test-deps.sh or scripts/install-build-deps.sh (whatever runs
    before the tests), or by an install step of the script that uses it (scripts/realkube's
    ensure_deps, scripts/image-local.sh: they install before they run anything), or is on a
    fresh machine of the project's kind (tests/lint/fresh-machine-packages.txt, committed:
    CI and users' machines have no copy of the list it came from).

A command not in the table fails too: add it to COMMANDS with its package (on Debian,
`dpkg -S "$(command -v NAME)"` names it) and the package to scripts/install-test-deps.sh.
And every package scripts/realkube installs must be named by scripts/install-test-deps.sh as
well: tests/realkube_lifecycle looks at the host (iptables, ipset) before the first
`realkube start` installed anything (issue 28).

What it reads is honest but not complete: in Python, subprocess.run/call/check_call/
check_output/Popen, os.exec*/os.spawn*, shutil.which and asyncio's create_subprocess_*, with
a list, a tuple or a string whose first element is a constant, a name bound to one (module
constants, local assignments, for-loop tuples, `shutil.which("x")`, `os.environ.get(K, "x")`),
and the module's functions that pass their arguments on to those (`def run(*args):
subprocess.run(list(args))`, found to a fixpoint, across the project's own modules); in
shell, the first word of each simple command (in pipelines, lists, $(...), `...`, <(...),
after env/exec/xargs/timeout/nice/..., in `sh -c 'literal'` and `trap 'literal'`). A command
word built from a variable ($KUBECTL, "$ROOT/x") is not resolved; `--list` counts them.
Commands run inside a pod, a chroot or an image (the words after `kubectl exec --`,
`chroot DIR`, `docker run IMAGE`) are not this machine's and are not counted.

  scripts/lint_commands.py                 check (exit 1 on a finding)
  scripts/lint_commands.py --list          every command, where it comes from, where it is used
  scripts/lint_commands.py --root DIR      check another tree (tests/lint/test_commands.sh)
  scripts/lint_commands.py --verify-table  compare COMMANDS with dpkg -S for the commands
                                           installed here (a wrong row is a finding)
"""
import argparse
import ast
import os
import re
import subprocess
import sys

BASELINE = "tests/lint/fresh-machine-packages.txt"
# Install scripts whose packages every test and script may count on: install-test-deps.sh
# runs before every tier (`make test-deps`), install-build-deps.sh before every C build
# (scripts/deps.sh).
GLOBAL_INSTALLERS = ["scripts/install-test-deps.sh", "scripts/install-build-deps.sh"]
# Scripts that install packages for their own use before they run anything: what they
# install counts for the files listed (prefixes), and only for those.
SCOPED_INSTALLERS = {
    "scripts/realkube": ["scripts/realkube"],
    # image-local.sh (`make image-local`) installs docker.io, starts dockerd, then runs
    # scripts/base-images.sh and tests/image.
    "scripts/image-local.sh": ["scripts/image-local.sh", "scripts/base-images.sh", "tests/image/"],
    # the linux/arm64 build's host tools: run by release/arm64.mk (arm64-cross-deps, before
    # arm64-test runs tests/arm64) and by scripts/deps.sh musl-arm64
    "scripts/install-cross-deps.sh": ["scripts/install-cross-deps.sh", "release/arm64.mk",
                                      "tests/arm64/", "scripts/deps.sh"],
}
# The install script every other installer's packages must also be in (issue 28).
MAIN_INSTALLER = "scripts/install-test-deps.sh"
MIRRORED_INSTALLER = "scripts/realkube"

# What the README says a machine must have before anything here runs (and so nothing
# installs): command -> (why, path prefixes it may be used in; None: everywhere).
PREREQUISITES = {
    "go": ("README.md: 'Go 1.24 or newer' (/usr/local/go on the project's machines)", None),
    "gofmt": ("part of Go (README.md)", None),
    "kubectl": ("README.md: 'and kubectl'; scripts/install-test-deps.sh stops without it", None),
    "docker": ("e2e/README.md, Prerequisites: Docker", ["e2e/"]),
    "kind": ("e2e/README.md, Prerequisites: kind v0.29.0 or newer", ["e2e/"]),
    "crane": ("e2e/README.md, Prerequisites: crane, skopeo or docker buildx (pin-images.sh only)",
              ["e2e/"]),
    "skopeo": ("e2e/README.md, Prerequisites: crane, skopeo or docker buildx (pin-images.sh only)",
               ["e2e/"]),
}

# Commands a test looks for and, when they are missing, skips itself, saying so (not a gap
# an install step must close, but a test a machine without them does not run): command ->
# (why, the files that may use it). `--list` shows them.
OPTIONAL = {
    "pyspdxtools": ("SPDX's validator from PyPI (spdx-tools), not a Debian package: the SBOM "
                    "test skips without it or KRMPOD_SPDX_VALIDATOR", ["tests/release/"]),
}

# Commands the project itself makes: krmpod's names (argv[0] `docker` is the shim; the tests
# put a link named docker to krmpod first on PATH), the stand-ins of tests/fixtures and
# scripts/, and the peers scripts/build-peers.sh builds (tests call them by path, from
# build/peers/; the names stand here for the places where the path is in a variable).
PROJECT_COMMANDS = {
    "krmpod": "build/krmpod (make)",
    "kubesim": "tests/kubesim/kubesim",
    "direct-docker": "tests/fixtures/direct-docker",
    "krmpod-helper": "tests/fixtures/krmpod-helper",
    "kustomize-standin": "scripts/kustomize-standin",
}

SHELL_BUILTINS = set("""
: . [ alias bg bind break builtin caller cd command compgen complete compopt continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history
jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set
shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait
""".split())
SHELL_KEYWORDS = set("""
if then else elif fi case esac for select while until do done in function time { } ! [[ ]]
coproc
""".split())

# command -> the Debian (bookworm) package that provides it. Checked against dpkg -S here
# with --verify-table.
COMMANDS = {
    # coreutils
    **{c: "coreutils" for c in """
        basename cat chgrp chmod chown cksum comm cp csplit cut date dd df dirname du env
        expand expr factor fmt fold head hostid id install join link ln logname ls md5sum
        mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste pathchk pr
        printenv ptx readlink realpath rm rmdir seq sha1sum sha224sum sha256sum sha384sum
        sha512sum shred shuf sleep sort split stat stdbuf stty sum sync tac tail tee
        timeout touch tr truncate tsort tty uname unexpand uniq unlink users wc who whoami
        yes base64 base32 chroot
    """.split()},
    **{c: "util-linux" for c in """
        flock setpriv setsid nsenter unshare findmnt lsblk mountpoint getopt taskset ionice
        chrt more lscpu prlimit runuser whereis rev uuidgen
    """.split()},
    "mount": "mount", "umount": "mount", "losetup": "mount",
    "logger": "bsdutils", "renice": "bsdutils", "script": "bsdutils",
    "column": "bsdextrautils", "hexdump": "bsdextrautils",
    "pidof": "sysvinit-utils",
    **{c: "procps" for c in "ps pgrep pkill top free uptime vmstat watch sysctl pmap w kill".split()},
    "killall": "psmisc", "fuser": "psmisc", "pstree": "psmisc",
    "grep": "grep", "egrep": "grep", "fgrep": "grep",
    "sed": "sed", "tar": "tar", "gzip": "gzip", "gunzip": "gzip", "zcat": "gzip",
    "find": "findutils", "xargs": "findutils",
    "diff": "diffutils", "cmp": "diffutils",
    "awk": "mawk", "mawk": "mawk",
    "bash": "bash", "sh": "dash", "dash": "dash",
    "which": "debianutils", "run-parts": "debianutils", "tempfile": "debianutils",
    "hostname": "hostname",
    "ldd": "libc-bin", "getent": "libc-bin", "ldconfig": "libc-bin", "iconv": "libc-bin",
    "dpkg": "dpkg", "dpkg-query": "dpkg", "dpkg-deb": "dpkg",
    "apt-get": "apt", "apt-cache": "apt", "apt-config": "apt",
    "perl": "perl-base", "shasum": "perl",
    "xz": "xz-utils", "unxz": "xz-utils", "xzcat": "xz-utils",
    "bzip2": "bzip2", "bunzip2": "bzip2",
    "file": "file",
    "curl": "curl",
    "git": "git",
    "make": "make",
    "python3": "python3-minimal",  # /usr/bin/python3; the package python3 depends on it
    "patch": "patch",
    "strace": "strace",
    "lsof": "lsof",
    "modprobe": "kmod", "lsmod": "kmod",
    # the C toolchain (scripts/install-build-deps.sh)
    "gcc": "gcc", "cc": "gcc", "cpp": "cpp",
    "strip": "binutils", "ar": "binutils", "ld": "binutils", "nm": "binutils",
    "objcopy": "binutils", "objdump": "binutils", "readelf": "binutils", "ranlib": "binutils",
    "musl-gcc": "musl-tools",
    "cmake": "cmake",
    "clang": "clang", "clang-format": "clang-format",
    "shellcheck": "shellcheck",
    "valgrind": "valgrind",
    "openssl": "openssl",
    "debootstrap": "debootstrap",
    "htpasswd": "apache2-utils",
    "docker-registry": "docker-registry",
    "dockerd": "docker.io", "docker": "docker.io",
    # the real cluster's host side (scripts/realkube)
    "ip": "iproute2", "ss": "iproute2", "bridge": "iproute2", "tc": "iproute2",
    "iptables": "iptables", "ip6tables": "iptables", "iptables-save": "iptables",
    "ip6tables-save": "iptables", "iptables-restore": "iptables",
    "ip6tables-restore": "iptables", "iptables-legacy": "iptables", "iptables-nft": "iptables",
    "ipset": "ipset",
    "conntrack": "conntrack",
    "containerd": "containerd", "ctr": "containerd",
    "runc": "runc",
    "busybox": "busybox-static",
    # the linux/arm64 build (scripts/install-cross-deps.sh)
    "qemu-aarch64-static": "qemu-user-static",
    "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu",
    "aarch64-linux-gnu-strip": "binutils-aarch64-linux-gnu",
    "aarch64-linux-gnu-readelf": "binutils-aarch64-linux-gnu",
    # Google's apt repository, on a fresh machine (tests/kptlib.py: /usr/bin/kpt)
    "kpt": "google-cloud-cli-kpt",
}

EXEC_FUNCS = {
    ("subprocess", "run"), ("subprocess", "call"), ("subprocess", "check_call"),
    ("subprocess", "check_output"), ("subprocess", "Popen"),
    ("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
}
WHICH_FUNCS = {("shutil", "which")}


class Use:
    def __init__(self, cmd, path, line):
        self.cmd, self.path, self.line = cmd, path, line


# ------------------------------------------------------------------------- shell
class ShellWord:
    def __init__(self, text, line, dynamic, assign=False):
        self.text, self.line, self.dynamic, self.assign = text, line, dynamic, assign


class ShellLexer:
    """Tokens of a shell script: ShellWord, operator strings ('\\n', ';', '&&', '|', '(',
    ')', ';;', ...) and ('redir', op). Command substitutions, backticks and process
    substitutions are collected in .subs as (text, line) to be parsed on their own;
    here-document bodies are skipped."""

    OPS = ["&&", "||", ";;&", ";;", ";&", "|&", "|", "&", ";", "(", ")"]

    def __init__(self, text, line=1):
        self.s, self.i, self.line = text, 0, line
        self.subs, self.toks, self.heredocs = [], [], []

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self, n=1):
        for _ in range(n):
            if self.i < len(self.s):
                if self.s[self.i] == "\n":
                    self.line += 1
                self.i += 1

    def tokens(self):
        while self.i < len(self.s):
            c = self.peek()
            if c == "\\" and self.peek(1) == "\n":
                self.adv(2)
            elif c in " \t\r":
                self.adv()
            elif c == "\n":
                self.toks.append(("\n", self.line))
                self.adv()
                if self.heredocs:
                    self.skip_heredocs()
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.adv()
            elif c == "(" and self.peek(1) == "(":  # (( arithmetic ))
                self.adv(2)
                self.skip_balanced("(", ")", depth=2)
                self.toks.append((ShellWord("((", self.line, True), self.line))
            elif c in "<>" or (c.isdigit() and self.redir_after_digits()):
                self.redirection()
            elif c == "&" and self.peek(1) == ">":
                self.adv(2)
                if self.peek() == ">":
                    self.adv()
                self.toks.append((("redir", "&>"), self.line))
            else:
                for op in self.OPS:
                    if self.s.startswith(op, self.i):
                        self.toks.append((op, self.line))
                        self.adv(len(op))
                        break
                else:
                    self.toks.append((self.word(), self.line))
        return self.toks

    def redir_after_digits(self):
        j = self.i
        while j < len(self.s) and self.s[j].isdigit():
            j += 1
        return j < len(self.s) and self.s[j] in "<>"

    def redirection(self):
        line = self.line
        while self.peek().isdigit():
            self.adv()
        c = self.peek()
        if c in "<>" and self.peek(1) == "(":  # process substitution
            self.adv(2)
            start = self.i
            self.skip_balanced("(", ")")
            self.subs.append((self.s[start:self.i - 1], line))
            self.toks.append((ShellWord("<(", line, True), line))
            return
        if self.s.startswith("<<<", self.i):
            self.adv(3)
            self.toks.append((("redir", "<<<"), line))
            return
        if self.s.startswith("<<", self.i):
            self.adv(2)
            strip = False
            if self.peek() == "-":
                self.adv()
                strip = True
            while self.peek() in " \t":
                self.adv()
            w = self.word()
            self.heredocs.append((w.text, strip))
            return
        self.adv()
        while self.peek() in "<>&|":
            self.adv()
        self.toks.append((("redir", c), line))

    def skip_heredocs(self):
        for delim, strip in self.heredocs:
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                ln = self.s[self.i:end]
                self.adv(end - self.i + 1)
                if (ln.lstrip("\t") if strip else ln) == delim:
                    break
        self.heredocs = []

    def skip_balanced(self, open_, close, depth=1):
        """Skips to the matching close (quotes respected); nested $( ) become subs."""
        while self.i < len(self.s) and depth > 0:
            c = self.peek()
            if c == "\\":
                self.adv(2)
            elif c == "'":
                self.adv()
                while self.i < len(self.s) and self.peek() != "'":
                    self.adv()
                self.adv()
            elif c == '"':
                self.adv()
                self.dquoted()
            elif c == "$" and self.peek(1) == "(" and self.peek(2) != "(":
                self.adv(2)
                line, start = self.line, self.i
                self.skip_balanced("(", ")")
                self.subs.append((self.s[start:self.i - 1], line))
            elif c == "`":
                self.backtick()
            elif c == open_:
                depth += 1
                self.adv()
            elif c == close:
                depth -= 1
                self.adv()
            else:
                self.adv()

    def backtick(self):
        self.adv()
        line, start = self.line, self.i
        while self.i < len(self.s) and self.peek() != "`":
            if self.peek() == "\\":
                self.adv()
            self.adv()
        self.subs.append((self.s[start:self.i], line))
        self.adv()

    def dollar(self):
        """At a $: returns True (an expansion: the word is dynamic)."""
        if self.peek(1) == "(" and self.peek(2) == "(":
            self.adv(3)
            self.skip_balanced("(", ")", depth=2)
        elif self.peek(1) == "(":
            self.adv(2)
            line, start = self.line, self.i
            self.skip_balanced("(", ")")
            self.subs.append((self.s[start:self.i - 1], line))
        elif self.peek(1) == "{":
            self.adv(2)
            self.skip_balanced("{", "}")
        elif self.peek(1) == "'":  # $'...'
            self.adv(2)
            while self.i < len(self.s) and self.peek() != "'":
                if self.peek() == "\\":
                    self.adv()
                self.adv()
            self.adv()
            return False
        else:
            self.adv()
            if re.match(r"[A-Za-z_]", self.peek()):
                while re.match(r"[A-Za-z0-9_]", self.peek()):
                    self.adv()
            elif self.peek() and self.peek() in "@*#?$!-0123456789":
                self.adv()
            else:
                return False  # a lone $
        return True

    def dquoted(self):
        """Inside "...", after the opening quote; returns (text, dynamic)."""
        out, dyn = [], False
        while self.i < len(self.s) and self.peek() != '"':
            c = self.peek()
            if c == "\\":
                out.append(self.peek(1))
                self.adv(2)
            elif c == "$":
                dyn = self.dollar() or dyn
                out.append("$")
            elif c == "`":
                self.backtick()
                dyn = True
            else:
                out.append(c)
                self.adv()
        self.adv()
        return "".join(out), dyn

    def word(self):
        line, out, dyn = self.line, [], False
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\r\n;&|<>" or (c in "()" and not out):
                break
            if c == "(":
                text = "".join(out)
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=$", text):  # a=( ... )
                    self.adv()
                    self.skip_balanced("(", ")")
                    return ShellWord(text, line, True, assign=True)
                if text and text[-1] in "@?*+!":  # extglob
                    self.adv()
                    self.skip_balanced("(", ")")
                    out.append("(...)")
                    dyn = True
                    continue
                break
            if c == ")":
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    self.adv(2)
                    continue
                out.append(self.peek(1))
                self.adv(2)
            elif c == "'":
                self.adv()
                start = self.i
                while self.i < len(self.s) and self.peek() != "'":
                    self.adv()
                out.append(self.s[start:self.i])
                self.adv()
            elif c == '"':
                self.adv()
                t, d = self.dquoted()
                out.append(t)
                dyn = dyn or d
            elif c == "$":
                dyn = self.dollar() or dyn
                out.append("$")
            elif c == "`":
                self.backtick()
                dyn = True
            else:
                out.append(c)
                self.adv()
        text = "".join(out)
        assign = bool(re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", text))
        return ShellWord(text, line, dyn, assign)


SEPARATORS = {"\n", ";", "&", "&&", "||", "|", "|&", "(", ")", ";;", ";&", ";;&"}


class ShellScan:
    """Command words of one shell text; calls found(word_text, line) for each command."""

    def __init__(self, functions, found, dynamic):
        self.functions, self.found, self.dynamic = functions, found, dynamic

    def scan(self, text, line=1):
        lx = ShellLexer(text, line)
        toks = lx.tokens()
        self.scan_tokens(toks)
        for sub, ln in lx.subs:
            self.scan(sub, ln)

    def scan_tokens(self, toks):
        i, n = 0, len(toks)
        cmd_pos, case_pattern = True, []  # case_pattern: a stack, True where patterns come next
        while i < n:
            t, line = toks[i]
            if isinstance(t, tuple):  # a redirection: its target is no command
                i += 2 if i + 1 < n and isinstance(toks[i + 1][0], ShellWord) else 1
                continue
            if isinstance(t, str):
                if t in (";;", ";&", ";;&") and case_pattern:
                    case_pattern[-1] = True
                cmd_pos = True
                i += 1
                continue
            w = t
            if case_pattern and case_pattern[-1] and cmd_pos:
                if w.text == "esac":
                    case_pattern.pop()
                    cmd_pos = False
                    i += 1
                    continue
                # a pattern list up to its ')'
                while i < n and toks[i][0] != ")":
                    i += 1
                case_pattern[-1] = False
                i += 1
                cmd_pos = True
                continue
            if not cmd_pos:
                i += 1
                continue
            if w.assign:
                i += 1
                continue
            if not w.dynamic and w.text in ("for", "select"):
                while i < n and not (isinstance(toks[i][0], ShellWord) and toks[i][0].text == "do"):
                    i += 1
                i += 1
                continue
            if not w.dynamic and w.text == "case":
                while i < n and not (isinstance(toks[i][0], ShellWord) and toks[i][0].text == "in"):
                    i += 1
                i += 1
                case_pattern.append(True)
                continue
            if not w.dynamic and w.text == "[[":
                while i < n and not (isinstance(toks[i][0], ShellWord) and toks[i][0].text == "]]"):
                    i += 1
                i += 1
                cmd_pos = False
                continue
            if not w.dynamic and w.text == "function":
                i += 2
                continue
            if not w.dynamic and w.text in SHELL_KEYWORDS:
                i += 1
                continue
            if w.text == "((":
                i += 1
                cmd_pos = False
                continue
            # name() { ... }: a function definition
            if i + 2 < n and toks[i + 1][0] == "(" and toks[i + 2][0] == ")":
                i += 3
                continue
            args = []
            j = i + 1
            while j < n and not (isinstance(toks[j][0], str) and toks[j][0] in SEPARATORS):
                if isinstance(toks[j][0], tuple):
                    j += 2
                    continue
                args.append(toks[j][0])
                j += 1
            self.command(w, args)
            i = j
            cmd_pos = False

    def command(self, w, args):
        if w.dynamic:
            self.dynamic(w.text, w.line)
            return
        name = w.text
        if name in SHELL_BUILTINS or name in self.functions:
            if name in ("exec", "builtin") and args:
                self.command(args[0], args[1:])
            elif name == "command" and args and args[0].text not in ("-v", "-V"):
                k = 1 if args[0].text == "-p" else 0
                if k < len(args):
                    self.command(args[k], args[k + 1:])
            elif name == "trap" and args and not args[0].dynamic and \
                    args[0].text not in ("", "-") and not args[0].text.startswith("-"):
                self.scan(args[0].text, args[0].line)
            elif name == "time" and args:
                self.command(args[0], args[1:])
            return
        self.found(name, w.line)
        base = os.path.basename(name)
        rest = None
        if base in ("env",):
            k = 0
            while k < len(args) and (args[k].assign or args[k].text.startswith("-")):
                k += 2 if args[k].text in ("-u", "-C", "-S") else 1
            rest = args[k:]
        elif base in ("nohup", "setsid", "stdbuf", "ionice", "nice", "sudo", "xargs", "taskset",
                      "unshare", "setpriv"):
            # options, then the command (options taking a value: the common ones)
            k = 0
            takes = {"nice": {"-n"}, "xargs": {"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"},
                     "ionice": {"-c", "-n", "-p"}, "sudo": {"-u", "-g"}, "taskset": set(),
                     "stdbuf": {"-i", "-o", "-e"}}.get(base, set())
            while k < len(args) and args[k].text.startswith("-"):
                k += 2 if args[k].text in takes else 1
            if base == "taskset" and k < len(args):
                k += 1  # the mask
            rest = args[k:]
        elif base == "timeout":
            k = 0
            while k < len(args) and args[k].text.startswith("-"):
                k += 2 if args[k].text in ("-s", "-k", "--signal", "--kill-after") else 1
            rest = args[k + 1:]
        elif base in ("sh", "bash", "dash") and len(args) >= 2 and args[0].text == "-c" \
                and not args[1].dynamic:
            self.scan(args[1].text, args[1].line)
        if rest:
            self.command(rest[0], rest[1:])


SHELL_SHEBANG = re.compile(r"^#!\s*(/usr/bin/env\s+)?(/usr)?(/bin/)?(ba|da)?sh\b")
PY_SHEBANG = re.compile(r"^#!\s*(/usr/bin/env\s+)?\S*python3?\b")
FUNC_DEF = re.compile(r"^\s*(?:function\s+([A-Za-z_][\w:-]*)|([A-Za-z_][\w:-]*)\s*\(\s*\))", re.M)
SOURCE = re.compile(r"^\s*(?:\.|source)\s+.*?([\w.-]+)[\"']?\s*(?:#.*)?$", re.M)


def shell_functions(path, text, seen=None):
    seen = seen or set()
    seen.add(path)
    names = {a or b for a, b in FUNC_DEF.findall(text)}
    # functions of the files it sources (by their name, in its own folder)
    for m in SOURCE.findall(text):
        other = os.path.join(os.path.dirname(path), m)
        if os.path.isfile(other) and other not in seen:
            with open(other, errors="replace") as f:
                names |= shell_functions(other, f.read(), seen)
    return names


# ------------------------------------------------------------------------ python
def dotted(node):
    """'a.b.c' for Name/Attribute chains, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class PyModule:
    def __init__(self, path, rel, tree):
        self.path, self.rel, self.tree = path, rel, tree
        self.assigns = {}   # module-level name -> [value nodes]
        self.imports = {}   # local name -> ("module", stem) or ("name", stem, name)
        self.functions = {}  # name -> FunctionDef (module level; Class.method for methods)
        self.parent, self.calls, nodes = {}, [], list(ast.walk(tree))
        for node in nodes:
            for ch in ast.iter_child_nodes(node):
                self.parent[ch] = node
        for node in tree.body:
            self.collect_top(node)
        self.bindings = {}  # scope (a function, or None) -> {name: [value nodes]}
        self.calls = [n for n in nodes if isinstance(n, ast.Call)]
        self.scope_of = {c: self.enclosing(c) for c in self.calls}
        for node in nodes:
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.bind(node, t.id, [node.value], assign=True)
            elif isinstance(node, (ast.For, ast.comprehension)) and \
                    isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple, ast.List)):
                self.bind(node, node.target.id, list(node.iter.elts))
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.imports[a.asname or a.name.split(".")[0]] = ("module", a.name.split(".")[-1]
                                                                       if a.asname else a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                mod = (node.module or "").split(".")[-1]
                for a in node.names:
                    self.imports[a.asname or a.name] = ("name", mod, a.name)

    def bind(self, node, name, values, assign=False):
        """Names bound in a function (any depth) or, for loops only, at module level
        (module assignments are self.assigns)."""
        scope = self.enclosing(node) if not isinstance(node, ast.comprehension) else \
            self.enclosing(self.parent.get(node, node))
        if scope is None and assign:
            return
        self.bindings.setdefault(scope, {}).setdefault(name, []).extend(values)
        # a function nested in another sees its own bindings only, as before

    def collect_top(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for b in node.body:
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions[node.name + "." + b.name] = b
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.assigns.setdefault(t.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            self.assigns.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.If, ast.Try)):
            for b in node.body + getattr(node, "orelse", []) + [
                    x for h in getattr(node, "handlers", []) for x in h.body]:
                self.collect_top(b)

    def enclosing(self, node, kinds=(ast.FunctionDef, ast.AsyncFunctionDef)):
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, kinds):
                return node
        return None

    def class_of(self, fn):
        c = self.enclosing(fn, (ast.ClassDef,))
        return c.name if c is not None else None


class PyScan:
    def __init__(self, modules, found, dynamic):
        self.modules = modules  # rel -> PyModule
        self.by_stem = {}
        for m in modules.values():
            self.by_stem.setdefault(os.path.splitext(os.path.basename(m.rel))[0], []).append(m)
        self.found, self.dynamic = found, dynamic
        # (module rel, function key) -> ("argv"|"cmd", positional index, param name)
        self.wrappers = {}

    # -- resolving names and modules
    def module_named(self, stem, near):
        cands = self.by_stem.get(stem, [])
        if not cands:
            return None
        here = os.path.dirname(near.rel)
        cands = sorted(cands, key=lambda m: (os.path.dirname(m.rel) != here,
                                             not here.startswith(os.path.dirname(m.rel)),
                                             m.rel))
        return cands[0]

    def function_for(self, mod, func, scope):
        """The (module, key) a call's func expression names, or None."""
        if isinstance(func, ast.Name):
            if func.id in mod.functions:
                return mod, func.id
            imp = mod.imports.get(func.id)
            if imp and imp[0] == "name":
                m = self.module_named(imp[1], mod)
                if m and imp[2] in m.functions:
                    return m, imp[2]
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            base = func.value.id
            if base == "self" and scope is not None:
                cls = mod.class_of(scope)
                if cls and cls + "." + func.attr in mod.functions:
                    return mod, cls + "." + func.attr
                return None
            imp = mod.imports.get(base)
            if imp:
                stem = imp[1] if imp[0] == "module" else imp[2]
                m = self.module_named(stem, mod)
                if m and func.attr in m.functions:
                    return m, func.attr
        return None

    def values_of(self, mod, name, scope, depth):
        """Value nodes a name may hold: local assignments and for-loop items in its function,
        else module-level ones, else an imported name's."""
        vals = []
        while scope is not None:  # the function, then the functions around it
            vals = [(mod, v, scope) for v in mod.bindings.get(scope, {}).get(name, [])]
            if vals:
                return vals
            scope = mod.enclosing(scope)
        for v in mod.assigns.get(name, []):
            vals.append((mod, v, None))
        vals += [(mod, v, None) for v in mod.bindings.get(None, {}).get(name, [])]
        if not vals:
            imp = mod.imports.get(name)
            if imp and imp[0] == "name":
                m = self.module_named(imp[1], mod)
                if m:
                    vals += [(m, v, None) for v in m.assigns.get(imp[2], [])]
        return vals

    def strings(self, mod, node, scope, depth=0):
        """The strings an expression may be: a list, [] when it cannot be said."""
        if depth > 8 or node is None:
            return []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            out = []
            for m, v, sc in self.values_of(mod, node.id, scope, depth):
                out += self.strings(m, v, sc, depth + 1)
            return out
        if isinstance(node, ast.Attribute):
            d = dotted(node)
            if d == "sys.executable":
                return ["python3"]
            if isinstance(node.value, ast.Name):
                imp = mod.imports.get(node.value.id)
                if imp:
                    m = self.module_named(imp[1] if imp[0] == "module" else imp[2], mod)
                    if m:
                        out = []
                        for v in m.assigns.get(node.attr, []):
                            out += self.strings(m, v, None, depth + 1)
                        return out
            return []
        if isinstance(node, ast.BoolOp):
            out = []
            for v in node.values:
                out += self.strings(mod, v, scope, depth + 1)
            return out
        if isinstance(node, ast.IfExp):
            return self.strings(mod, node.body, scope, depth + 1) + \
                self.strings(mod, node.orelse, scope, depth + 1)
        if isinstance(node, ast.Call):
            d = dotted(node.func)
            if d in ("shutil.which",) and node.args:
                return self.strings(mod, node.args[0], scope, depth + 1)
            if d in ("os.environ.get", "os.getenv") and len(node.args) >= 2:
                return self.strings(mod, node.args[1], scope, depth + 1)
            if d in ("os.path.realpath", "os.path.abspath", "str") and node.args:
                return self.strings(mod, node.args[0], scope, depth + 1)
        return []

    def first_of_argv(self, mod, node, scope, depth=0):
        """The first element's expression of an argv expression, as a list of
        (module, node, scope) candidates."""
        if depth > 8 or node is None:
            return []
        if isinstance(node, (ast.List, ast.Tuple)):
            if node.elts and not isinstance(node.elts[0], ast.Starred):
                return [(mod, node.elts[0], scope)]
            if node.elts:
                return self.first_of_argv(mod, node.elts[0].value, scope, depth + 1)
            return []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.first_of_argv(mod, node.left, scope, depth + 1)
        if isinstance(node, ast.Call) and dotted(node.func) in ("list", "tuple") and node.args:
            return self.first_of_argv(mod, node.args[0], scope, depth + 1)
        if isinstance(node, ast.Name):
            out = []
            for m, v, sc in self.values_of(mod, node.id, scope, depth):
                out += self.first_of_argv(m, v, sc, depth + 1)
            return out
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [(mod, node, scope)]
        return []

    # -- wrappers: functions whose parameter reaches an exec call's argv
    def param_flow(self, fn, node):
        """('argv'|'cmd', index, name) when node is built from a parameter of fn."""
        a = fn.args
        params = [p.arg for p in a.posonlyargs + a.args]
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        var = a.vararg.arg if a.vararg else None
        if isinstance(node, ast.Call) and dotted(node.func) in ("list", "tuple") and node.args:
            node = node.args[0]
        if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Starred):
            node = node.elts[0].value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and \
                isinstance(node.left, ast.Name):
            node = node.left
        if isinstance(node, ast.Name):
            if node.id == var:
                return ("cmd", len(params), node.id)
            if node.id in params:
                return ("argv", params.index(node.id), node.id)
        return None

    def argv_node(self, call, kind, index, pname):
        if kind == "cmd":
            return call.args[index] if len(call.args) > index and \
                not isinstance(call.args[index], ast.Starred) else None
        if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
            return call.args[index]
        for kw in call.keywords:
            if kw.arg == pname:
                return kw.value
        return None

    def exec_argv(self, mod, call, scope):
        """For a call: (argv node, kind, shell) when it executes a command, else None.
        kind: 'argv' (the node is an argv list or a command string), 'cmd' (the node is the
        command), 'which'."""
        d = dotted(call.func)
        if d:
            parts = d.split(".")
            if len(parts) >= 2 and (parts[-2], parts[-1]) in EXEC_FUNCS or \
                    (len(parts) == 1 and mod.imports.get(d, ("",))[0] == "name" and
                     (mod.imports[d][1], mod.imports[d][2]) in EXEC_FUNCS):
                shell = any(kw.arg == "shell" and isinstance(kw.value, ast.Constant) and
                            kw.value.value for kw in call.keywords) or \
                    parts[-1] == "create_subprocess_shell"
                node = call.args[0] if call.args else next(
                    (kw.value for kw in call.keywords if kw.arg == "args"), None)
                kind = "cmd" if parts[-1] == "create_subprocess_exec" else "argv"
                return node, kind, shell
            if len(parts) >= 2 and (parts[-2], parts[-1]) in WHICH_FUNCS and call.args:
                return call.args[0], "which", False
            if len(parts) == 2 and parts[0] == "os" and re.match(r"(exec|spawn)[lv]p?e?$", parts[1]):
                k = 1 if parts[1].startswith("spawn") else 0
                return (call.args[k] if len(call.args) > k else None), "cmd", False
        target = self.function_for(mod, call.func, scope)
        if target:
            w = self.wrappers.get((target[0].rel, target[1]))
            if w:
                return self.argv_node(call, w[0], w[1], w[2]), w[0], False
        return None

    def find_wrappers(self):
        changed = True
        while changed:
            changed = False
            for mod in self.modules.values():
                for call in mod.calls:
                    fn = mod.scope_of[call]
                    if fn is None:
                        continue
                    e = self.exec_argv(mod, call, fn)
                    if not e or e[1] == "which" or e[0] is None:
                        continue
                    flow = self.param_flow(fn, e[0])
                    if not flow:
                        continue
                    if e[1] == "cmd" and flow[0] == "argv":
                        flow = ("cmd", flow[1], flow[2])
                    key = fn.name
                    cls = mod.class_of(fn)
                    if cls:
                        key = cls + "." + fn.name
                    if (mod.rel, key) not in self.wrappers:
                        self.wrappers[(mod.rel, key)] = flow
                        changed = True

    def scan(self):
        self.find_wrappers()
        for mod in self.modules.values():
            for call in mod.calls:
                scope = mod.scope_of[call]
                e = self.exec_argv(mod, call, scope)
                if not e:
                    continue
                node, kind, shell = e
                if node is None:
                    continue
                if scope is not None and self.param_flow(scope, node) and \
                        (mod.rel, mod.class_of(scope) + "." + scope.name if mod.class_of(scope)
                         else scope.name) in self.wrappers:
                    continue  # inside a wrapper: its callers say what runs
                if kind in ("cmd", "which"):
                    firsts = [(mod, node, scope)]
                else:
                    firsts = self.first_of_argv(mod, node, scope)
                got = False
                for m, n, sc in firsts:
                    for s in self.strings(m, n, sc):
                        got = True
                        if shell or (kind == "argv" and isinstance(n, ast.Constant) and
                                     n is node and " " in s):
                            self.shell_text(s, mod.rel, call.lineno)
                        else:
                            self.found(s, mod.rel, call.lineno)
                if not got:
                    self.dynamic(mod.rel, call.lineno)

    def shell_text(self, text, rel, line):
        ShellScan(set(), lambda c, _l: self.found(c, rel, line),
                  lambda _t, _l: self.dynamic(rel, line)).scan(text)


# ------------------------------------------------------------------------- files
def files_to_scan(root):
    py, sh, mk = [], [], []

    def add(path):
        rel = os.path.relpath(path, root)
        if path.endswith(".py"):
            py.append(rel)
            return
        if path.endswith(".sh"):
            sh.append(rel)
            return
        if path.endswith(".mk") or os.path.basename(path) == "Makefile":
            mk.append(rel)
            return
        try:
            with open(path, "rb") as f:
                first = f.readline(200).decode(errors="replace")
        except OSError:
            return
        if SHELL_SHEBANG.match(first):
            sh.append(rel)
        elif PY_SHEBANG.match(first):
            py.append(rel)

    for top in ("scripts", "bench", "e2e", "tests", "release"):
        d = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(d):
            rel = os.path.relpath(dirpath, root)
            # tests/tools: Go modules of the peers; fuzz corpora and recorded data: no code
            dirnames[:] = sorted(x for x in dirnames if x not in ("__pycache__",) and
                                 os.path.join(rel, x) not in (
                                     "tests/tools", "tests/fuzz/corpus", "tests/fuzz/crashes",
                                     "tests/conformance/data"))
            for fn in sorted(filenames):
                if top == "e2e" and dirpath == d and not fn.endswith(".sh"):
                    continue
                add(os.path.join(dirpath, fn))
    if os.path.isfile(os.path.join(root, "Makefile")):
        mk.insert(0, "Makefile")
    return py, sh, mk


def make_recipes(text):
    """(shell text, line) of each recipe of a makefile: its tab-led lines with their
    continuations, make's own expansions ($(VAR), $@, ...) turned into a variable the shell
    scan counts as unresolved, $$ into $."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("\t") and not lines[i].lstrip().startswith("#"):
            start, body = i + 1, lines[i][1:]
            while body.endswith("\\") and i + 1 < len(lines):
                i += 1
                body += "\n" + lines[i].lstrip("\t")
            yield unmake(body.lstrip("@-+ \t")), start
        else:  # a variable or a rule line: its continuations are no recipe
            while lines[i].endswith("\\") and i + 1 < len(lines):
                i += 1
        i += 1


def unmake(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "$" and i + 1 < len(s):
            n = s[i + 1]
            if n == "$":
                out.append("$")
                i += 2
                continue
            if n in "({":
                close, depth, j = ")" if n == "(" else "}", 1, i + 2
                while j < len(s) and depth:
                    depth += {n: 1, close: -1}.get(s[j], 0)
                    j += 1
                out.append("${MAKEVAR}")
                i = j
                continue
            out.append("${MAKEVAR}")
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def packages_named(path):
    """The Debian package names an install script names: `for pkg in ...; do` lists and
    need+=(...) arrays (words without a $)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return set()
    text = text.replace("\\\n", " ")
    out = set()
    for m in re.finditer(r"\bfor\s+pkg\s+in\s+([^;\n]*)", text):
        out |= {w for w in m.group(1).split() if re.match(r"^[a-z0-9][a-z0-9.+-]+$", w)}
    for m in re.finditer(r"\bneed\+=\(([^)]*)\)", text):
        out |= {w for w in m.group(1).split() if re.match(r"^[a-z0-9][a-z0-9.+-]+$", w)}
    return out


def read_baseline(root):
    path = os.path.join(root, BASELINE)
    pkgs = set()
    with open(path) as f:
        for ln in f:
            ln = ln.split("#", 1)[0].strip()
            if ln:
                pkgs.add(ln.split()[0].split(":")[0])
    return pkgs


def classify(cmd):
    """('project', why) / ('command', name) / ('skip', why)."""
    if "/" in cmd:
        if cmd.startswith("/"):
            # an absolute path to a system program: its name
            if re.match(r"^/(usr/)?(local/)?(s?bin)/[^/]+$", cmd):
                return "command", os.path.basename(cmd)
            if cmd.startswith("/usr/lib/cni/"):
                return "command", cmd
            if cmd.startswith("/usr/local/go/bin/"):
                return "command", os.path.basename(cmd)
            return "skip", "an absolute path outside the system's bin folders"
        return "project", "a path into the checkout"
    if not re.match(r"^[A-Za-z0-9_.+-][A-Za-z0-9_.+:-]*$", cmd):
        return "skip", "not a command name"
    return "command", cmd


def provider(cmd, rel, global_pkgs, scoped_pkgs, baseline):
    """(ok, where-it-comes-from) for a command used in file rel."""
    if cmd in PROJECT_COMMANDS:
        return True, "project: " + PROJECT_COMMANDS[cmd]
    if cmd in PREREQUISITES:
        why, scope = PREREQUISITES[cmd]
        if scope is None or any(rel.startswith(p) for p in scope):
            return True, "prerequisite: " + why
    if cmd in OPTIONAL and any(rel.startswith(p) for p in OPTIONAL[cmd][1]):
        return True, "optional: " + OPTIONAL[cmd][0]
    pkg = COMMANDS.get(cmd)
    if pkg is None:
        if cmd.startswith("/usr/lib/cni/"):  # the CNI plugins, run by path
            pkg = "containernetworking-plugins"
        else:
            return False, None
    for inst, pkgs in global_pkgs.items():
        if pkg in pkgs:
            return True, "%s (%s)" % (pkg, inst)
    for inst, (pkgs, scope) in scoped_pkgs.items():
        if pkg in pkgs and any(rel == p or rel.startswith(p) for p in scope):
            return True, "%s (%s, before it runs anything)" % (pkg, inst)
    if pkg in baseline:
        return True, "%s (a fresh machine has it: %s)" % (pkg, BASELINE)
    return False, pkg


def collect(root):
    uses, dynamic = [], {}

    def found(cmd, rel, line):
        uses.append(Use(cmd, rel, line))

    def dyn(rel, line):
        dynamic.setdefault(rel, []).append(line)

    py, sh, mk = files_to_scan(root)
    modules = {}
    problems = []
    for rel in py:
        try:
            with open(os.path.join(root, rel), errors="replace") as f:
                tree = ast.parse(f.read(), rel)
        except SyntaxError as e:
            problems.append("%s:%s: cannot parse (%s): the command lint needs valid Python"
                            % (rel, e.lineno, e.msg))
            continue
        modules[rel] = PyModule(os.path.join(root, rel), rel, tree)
    PyScan(modules, found, dyn).scan()
    for rel in sh:
        path = os.path.join(root, rel)
        with open(path, errors="replace") as f:
            text = f.read()
        funcs = shell_functions(path, text)
        ShellScan(funcs, lambda c, ln, rel=rel: found(c, rel, ln),
                  lambda _t, ln, rel=rel: dyn(rel, ln)).scan(text)
    for rel in mk:
        with open(os.path.join(root, rel), errors="replace") as f:
            text = f.read()
        for body, line in make_recipes(text):
            funcs = shell_functions(rel, body)
            ShellScan(funcs, lambda c, ln, rel=rel: found(c, rel, ln),
                      lambda _t, ln, rel=rel: dyn(rel, ln)).scan(body, line)
    return uses, dynamic, problems, len(py), len(sh) + len(mk)


def verify_table():
    """Each COMMANDS row against dpkg -S, for the commands installed on this machine."""
    bad = 0
    for cmd, pkg in sorted(COMMANDS.items()):
        found = None
        for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin"):
            p = os.path.join(d, cmd)
            if os.path.exists(p):
                r = subprocess.run(["dpkg", "-S", p], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
                if r.returncode == 0:
                    found = {x.strip().split(":")[0] for ln in r.stdout.splitlines()
                             if not ln.startswith("diversion ")
                             for x in ln.split(": ", 1)[0].split(",")}
                    break
        if found is None:
            continue
        # a diversion or an alternative: accept the package that owns the real file
        if pkg not in found:
            print("lint_commands: table row %s -> %s, but dpkg -S says %s"
                  % (cmd, pkg, ", ".join(sorted(found))), file=sys.stderr)
            bad += 1
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--verify-table", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.verify_table:
        return 1 if verify_table() else 0
    try:
        baseline = read_baseline(root)
    except OSError as e:
        print("lint_commands: cannot read the fresh-machine baseline %s (%s): it is committed "
              "with the repository; restore it with git checkout %s"
              % (BASELINE, e.strerror, BASELINE), file=sys.stderr)
        return 2
    global_pkgs = {p: packages_named(os.path.join(root, p)) for p in GLOBAL_INSTALLERS}
    for p, pkgs in global_pkgs.items():
        if not pkgs:
            print("lint_commands: %s names no package (a `for pkg in ...` list): cannot tell "
                  "what it installs" % p, file=sys.stderr)
            return 2
    scoped_pkgs = {p: (packages_named(os.path.join(root, p)), scope)
                   for p, scope in SCOPED_INSTALLERS.items()}
    uses, dynamic, problems, npy, nsh = collect(root)

    findings = list(problems)
    table = {}  # cmd -> [provider, ok, [uses]]
    for u in uses:
        kind, name = classify(u.cmd)
        if kind == "skip":
            continue
        if kind == "project":
            table.setdefault("(project paths)", ["the checkout", True, []])[2].append(u)
            continue
        ok, where = provider(name, u.path, global_pkgs, scoped_pkgs, baseline)
        key = name if ok else (name, where)  # a scope decides per file: group by verdict
        ent = table.setdefault(key, [where, ok, []])
        ent[2].append(u)
    for key, (where, ok, us) in sorted(table.items(), key=lambda kv: str(kv[0])):
        if ok:
            continue
        name = key[0]
        locs = ", ".join("%s:%d" % (u.path, u.line) for u in us[:4]) + \
            (" and %d more" % (len(us) - 4) if len(us) > 4 else "")
        if where is None:
            findings.append(
                "%s: runs `%s`, a command the lint does not know: add \"%s\": \"<debian "
                "package>\" to COMMANDS in scripts/lint_commands.py (dpkg -S \"$(command -v %s)\" "
                "names it) and the package to scripts/install-test-deps.sh" % (locs, name, name, name))
        elif where.startswith("a prerequisite of"):
            findings.append("%s: runs `%s`, which is %s" % (locs, name, where))
        else:
            findings.append(
                "%s: runs `%s` (Debian package %s), which no install script provides and a "
                "fresh machine lacks: add %s to scripts/install-test-deps.sh"
                % (locs, name, where, where))
    # every package realkube installs, install-test-deps.sh installs too
    main_pkgs = global_pkgs.get(MAIN_INSTALLER, set())
    mirrored = scoped_pkgs.get(MIRRORED_INSTALLER, (set(), None))[0]
    for pkg in sorted(mirrored - main_pkgs):
        findings.append(
            "%s installs %s, which %s does not: tests that look at the host before the first "
            "`realkube start` (tests/realkube_lifecycle) would not find it; add %s to %s"
            % (MIRRORED_INSTALLER, pkg, MAIN_INSTALLER, pkg, MAIN_INSTALLER))

    if args.list:
        print("%-22s %-5s %-70s %s" % ("command", "uses", "provided by", "first use"))
        for key, (where, ok, us) in sorted(table.items(), key=lambda kv: str(kv[0])):
            name = key if isinstance(key, str) else key[0]
            print("%-22s %-5d %-70s %s:%d" % (name, len(us), (where or "NOTHING") if ok else
                                               "NOTHING: " + str(where), us[0].path, us[0].line))
        nd = sum(len(v) for v in dynamic.values())
        print("\n%d command words built from variables were not resolved (%d files); "
              "the most: %s" % (nd, len(dynamic), ", ".join(
                  "%s (%d)" % (k, len(v)) for k, v in
                  sorted(dynamic.items(), key=lambda kv: -len(kv[1]))[:5])))
    for f in findings:
        print("lint_commands: " + f, file=sys.stderr)
    if findings:
        print("lint_commands: %d problem(s) above (%d Python files, %d shell scripts and makefiles read)"
              % (len(findings), npy, nsh), file=sys.stderr)
        return 1
    ncmd = len([k for k in table if isinstance(k, str)])
    print("lint_commands: ok: %d commands in %d Python files and %d shell scripts and makefiles, "
          "each provided"
          % (ncmd, npy, nsh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
