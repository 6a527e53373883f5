#!/usr/bin/python3
"""The shape of src/, checked (docs/architecture.md, "Layers"). Run by scripts/lint.sh.

Fails (exit 1, one line per finding, naming the file and line) when:
  - an #include of a project header does not name its folder ("base/buf.h");
  - a file includes a header from a higher layer, or from another folder of its own layer;
  - a circle appears among modules (a module is a folder/name pair: name.c with name.h);
  - a KRMPOD_* variable is read outside the settings module (src/config/), or
    getenv() is called with anything but a string literal outside it (an indirect read could
    hide a KRMPOD_* name);
  - a Kubernetes REST path ("/api/v1...", "/apis/...", "/version") is written outside
    src/kube/kube_api.c;
  - a goto appears (the one cleanup pattern is base/cleanup.h's attributes).

`scripts/layers.py --graph` prints the module graph instead (for docs/architecture.md).
`--root DIR` checks another tree (tests/lint/test_layers.sh plants violations in a copy).
"""
import os
import re
import sys

# Top to bottom. A folder may include its own headers and those of every lower layer.
# Folders on one line are peers: neither may include the other.
LAYERS = [
    ["cli"],
    ["cmp"],
    ["shim"],
    ["fn"],
    ["sign"],
    ["catalog"],
    ["pod"],
    ["kube", "mounts", "registry", "agent"],
    ["config"],
    ["base"],
]
SETTINGS_MODULE = "config/"
API_MODULE = "kube/kube_api.c"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
GETENV = re.compile(r'\bgetenv\s*\(\s*([^)]*)\)')
KRMPOD_READ = re.compile(r'\b(?:getenv|env_get|settings_env)\s*\(\s*(?:[^,()]*,\s*)?"KRMPOD_')
REST_PATH = re.compile(r'"(/api/v1\b|/apis/|/version\b)')
GOTO = re.compile(r'\bgoto\b')


def rank_of(folder):
    for i, row in enumerate(LAYERS):
        if folder in row:
            return i
    return None


def strip_comments(text):
    """Blanks out C comments, keeping line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def sources(root):
    for folder in sorted(os.listdir(root)):
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                yield folder, name, os.path.join(d, name)


def find_cycle(graph):
    """A list of modules forming a circle, or None (depth-first, colours)."""
    colour, stack = {}, []

    def visit(m):
        colour[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if colour.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if colour.get(t) is None:
                c = visit(t)
                if c:
                    return c
        stack.pop()
        colour[m] = 2
        return None

    for m in sorted(graph):
        if colour.get(m) is None:
            c = visit(m)
            if c:
                return c
    return None


def check(root):
    problems, graph = [], {}
    for folder, name, path in sources(root):
        rel = f"{folder}/{name}"
        mod = f"{folder}/{os.path.splitext(name)[0]}"
        graph.setdefault(mod, set())
        rank = rank_of(folder)
        if rank is None:
            problems.append(f"src/{rel}: folder {folder}/ is not a layer "
                            "(add it to LAYERS in scripts/layers.py and to docs/architecture.md)")
            continue
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        code = strip_comments(raw)
        for lineno, line in enumerate(raw.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if "/" not in inc:
                problems.append(f"src/{rel}:{lineno}: #include \"{inc}\" does not name its "
                                "folder (write \"folder/name.h\")")
                continue
            tfolder = inc.split("/", 1)[0]
            tmod = os.path.splitext(inc)[0]
            trank = rank_of(tfolder)
            if trank is None:
                problems.append(f"src/{rel}:{lineno}: #include \"{inc}\": no such layer")
                continue
            if trank < rank:
                problems.append(f"src/{rel}:{lineno}: includes {inc} from a higher layer "
                                f"({tfolder}/ is above {folder}/; dependencies point down only)")
            elif trank == rank and tfolder != folder:
                problems.append(f"src/{rel}:{lineno}: includes {inc}: {tfolder}/ and {folder}/ "
                                "are peers, which must not depend on each other")
            if tmod != mod:
                graph[mod].add(tmod)
        lines = code.splitlines()
        for lineno, line in enumerate(lines, 1):
            if not rel.startswith(SETTINGS_MODULE):
                if KRMPOD_READ.search(line):
                    problems.append(f"src/{rel}:{lineno}: reads a KRMPOD_ variable: settings "
                                    f"are read in src/{SETTINGS_MODULE} only and handed down")
                for g in GETENV.finditer(line):
                    if not g.group(1).strip().startswith('"'):
                        problems.append(f"src/{rel}:{lineno}: getenv() of a non-literal name "
                                        f"outside src/{SETTINGS_MODULE}")
            if GOTO.search(line):
                problems.append(f"src/{rel}:{lineno}: uses goto: release resources with the "
                                "cleanup attributes of base/cleanup.h (docs/architecture.md)")
            if rel != API_MODULE and REST_PATH.search(line):
                problems.append(f"src/{rel}:{lineno}: builds a REST path: paths are built in "
                                f"src/{API_MODULE} only")
    cycle = find_cycle(graph)
    if cycle:
        problems.append("circle among modules: " + " -> ".join(cycle))
    return problems, graph


def main(argv):
    root = "src"
    graph_only = False
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--graph":
            graph_only = True
        else:
            print(f"usage: {argv[0]} [--root DIR] [--graph]", file=sys.stderr)
            return 2
    problems, graph = check(root)
    if graph_only:
        for m in sorted(graph):
            print(f"{m}: {' '.join(sorted(graph[m]))}")
        return 0
    for p in problems:
        print(f"layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
