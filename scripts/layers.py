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
  - a goto appears (the one cleanup pattern is base/cleanup.h's attributes);
  - a file's name begins with the name of another folder (`config/fn_request.c`): a file is
    named after its own folder's concern;
  - a function is longer than MAX_FUNCTION_LINES lines (its braces included);
  - a folder holds more than MAX_FOLDER_SHARE of the lines of src/ (a room that grew into
    a catch-all: split it by concern);
  - `exit()` is called outside src/cli/, `_exit()` outside the places that fork (EXIT_PLACES),
    `printf`/`puts`/`fprintf(stdout|stderr)` outside src/cli/ and the logging module, or
    getenv() outside src/cli/, the settings module and ENV_PLACES (the core never ends the
    process, prints, or reads the environment behind the request's back).

Each folder has a README.md that introduces it: `# folder/ — what it is`, a blank line, and
three lines. The layer diagram of docs/architecture.md is made from LAYERS and those titles:
`--diagram` prints it, `--check-doc FILE` fails when the block after DIAGRAM_MARKER in FILE
differs (run by scripts/lint.sh).

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
    ["shim", "ops"],
    ["fn"],
    ["admit"],
    ["pool"],
    ["sign"],
    ["catalog"],
    ["pod"],
    ["kube", "mounts", "registry", "agent", "handoff"],
    ["config"],
    ["http"],
    ["base"],
]
SETTINGS_MODULE = "config/"
API_MODULE = "kube/kube_api.c"
CLI = "cli/"
MAX_FUNCTION_LINES = 60
MAX_FOLDER_SHARE = 0.12
# Where a forked child ends with _exit(), without running its parent's atexit handlers.
EXIT_PLACES = {
    "agent/agent_call.c": "the child that execs the function",
    "agent/agent_serve.c": "the child that runs one call of a session",
    "base/fd_cap.c": "the child that relays a bounded stderr",
    "cmp/prestart_janitor.c": "generate's janitor child",
}
# The process environment read outside the settings module, each for what the OS or
# Kubernetes puts there (docs/architecture.md, "Settings").
ENV_PLACES = {
    "agent/agent_call.c": "the function container's own PATH",
    "base/fdio.c": "TMPDIR",
    "config/kubeconfig.c": "KUBECONFIG, HOME and the in-cluster KUBERNETES_SERVICE_*",
}
LOG_MODULE = "base/log.c"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
GETENV = re.compile(r'\bgetenv\s*\(\s*([^)]*)\)')
KRMPOD_READ = re.compile(r'\b(?:getenv|env_get|settings_env)\s*\(\s*(?:[^,()]*,\s*)?"KRMPOD_')
REST_PATH = re.compile(r'"(/api/v1\b|/apis/|/version\b)')
GOTO = re.compile(r'\bgoto\b')
EXIT = re.compile(r'(?<![\w.>])exit\s*\(')
UNDER_EXIT = re.compile(r'(?<![\w.>])_exit\s*\(')
PRINT = re.compile(r'(?<![\w.>])(?:printf|puts|putchar|vprintf)\s*\(|\bfprintf\s*\(\s*std(?:out|err)\b')
ANY_GETENV = re.compile(r'(?<![\w.>])(?:secure_)?getenv\s*\(')
FUNCTION_NAME = re.compile(r'(\w+)\s*\(')


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


DIAGRAM_MARKER = "<!-- the layers, made by scripts/layers.py --diagram; make lint checks it -->"
README_TITLE = re.compile(r"^# (\w+)/ — (\S.*)$")


def folder_readme(root, folder):
    """(title, problems) of src/FOLDER/README.md."""
    path = os.path.join(root, folder, "README.md")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().rstrip("\n").split("\n")
    except OSError:
        return None, [f"src/{folder}/: no README.md that introduces the folder"]
    m = README_TITLE.match(lines[0])
    if not m or m.group(1) != folder:
        return None, [f"src/{folder}/README.md:1: the first line must be "
                      f"\"# {folder}/ — what it is\""]
    if len(lines) != 5 or lines[1] != "" or not all(lines[2:]):
        return m.group(2), [f"src/{folder}/README.md: the title, a blank line and three "
                            "lines that introduce the folder"]
    return m.group(2), []


def diagram(root):
    """The layer diagram, from LAYERS and the folders' README titles."""
    rows = []
    for row in LAYERS:  # peers: one line each, no │ between them
        rows.append("\n".join(f"   {f + '/':<9} {folder_readme(root, f)[0] or '?'}"
                              for f in row))
    return "\n    │\n".join(rows) + "\n"


def check_doc(root, doc):
    """Problems when the diagram block of doc is not diagram(root)."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    i = text.find(DIAGRAM_MARKER + "\n```\n")
    if i < 0:
        return [f"{doc}: no layer diagram after the line {DIAGRAM_MARKER}"]
    start = i + len(DIAGRAM_MARKER) + 5
    end = text.find("```", start)
    if text[start:end] != diagram(root):
        return [f"{doc}: the layer diagram is not what scripts/layers.py --diagram makes "
                "(paste its output)"]
    return []


def folder_shares(root):
    """A problem for each folder that holds more than MAX_FOLDER_SHARE of the lines."""
    lines = {}
    for folder, _, path in sources(root):
        with open(path, encoding="utf-8") as f:
            lines[folder] = lines.get(folder, 0) + f.read().count("\n")
    total = sum(lines.values()) or 1
    return [f"src/{folder}/: {n} of the {total} lines of src/ ({100 * n / total:.1f}%): at "
            f"most {100 * MAX_FOLDER_SHARE:.0f}%; split it into rooms by concern"
            for folder, n in sorted(lines.items()) if n > MAX_FOLDER_SHARE * total]


def long_functions(rel, raw):
    """(line, name, length) of each function longer than MAX_FUNCTION_LINES: a definition is
    written (clang-format) with its opening and closing braces alone in column 0."""
    out, start, lines = [], None, raw.split("\n")
    for i, line in enumerate(lines):
        if line == "{":
            start = i
        elif line == "}" and start is not None:
            n = i - start + 1
            j = start - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = FUNCTION_NAME.search(lines[j])
            if n > MAX_FUNCTION_LINES:
                out.append((j + 1, m.group(1) if m else "?", n))
            start = None
    return out


def process_calls(rel, lines):
    """exit, _exit, printing and getenv where the core must not have them."""
    problems = []
    if rel.startswith(CLI):
        return problems
    for lineno, line in enumerate(lines, 1):
        if EXIT.search(line):
            problems.append(f"src/{rel}:{lineno}: calls exit(): only src/{CLI} ends the "
                            "process; return an error instead")
        if UNDER_EXIT.search(line) and rel not in EXIT_PLACES:
            problems.append(f"src/{rel}:{lineno}: calls _exit() outside a forked child's "
                            "places (EXIT_PLACES in scripts/layers.py)")
        if PRINT.search(line) and rel != LOG_MODULE:
            problems.append(f"src/{rel}:{lineno}: prints to stdout or stderr: write through "
                            f"the logging module (src/{LOG_MODULE}) or a descriptor handed "
                            "down")
        if (ANY_GETENV.search(line) and not rel.startswith(SETTINGS_MODULE) and
                rel not in ENV_PLACES):
            problems.append(f"src/{rel}:{lineno}: reads the environment: settings come from "
                            f"src/{SETTINGS_MODULE} (or add the place to ENV_PLACES, and to "
                            "docs/architecture.md, with its reason)")
    return problems


def check(root):
    problems, graph = [], {}
    folders = {f for f in os.listdir(root) if os.path.isdir(os.path.join(root, f))}
    for folder in sorted(folders):
        problems += folder_readme(root, folder)[1]
    for folder, name, path in sources(root):
        rel = f"{folder}/{name}"
        mod = f"{folder}/{os.path.splitext(name)[0]}"
        graph.setdefault(mod, set())
        rank = rank_of(folder)
        if rank is None:
            problems.append(f"src/{rel}: folder {folder}/ is not a layer "
                            "(add it to LAYERS in scripts/layers.py and to docs/architecture.md)")
            continue
        prefix = re.split(r"[_.]", name, 1)[0]
        if prefix != folder and prefix in folders:
            problems.append(f"src/{rel}: named after another folder ({prefix}/): name a file "
                            f"after its own folder's concern")
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
        for lineno, fname, n in long_functions(rel, raw):
            problems.append(f"src/{rel}:{lineno}: {fname}() is {n} lines long: at most "
                            f"{MAX_FUNCTION_LINES}; split it into steps with names")
        problems += process_calls(rel, lines)
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
    problems += folder_shares(root)
    cycle = find_cycle(graph)
    if cycle:
        problems.append("circle among modules: " + " -> ".join(cycle))
    return problems, graph


def main(argv):
    root = "src"
    graph_only = diagram_only = False
    docs = []
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--graph":
            graph_only = True
        elif a == "--diagram":
            diagram_only = True
        elif a == "--check-doc" and args:
            docs.append(args.pop(0))
        else:
            print(f"usage: {argv[0]} [--root DIR] [--graph | --diagram] [--check-doc FILE]",
                  file=sys.stderr)
            return 2
    if diagram_only:
        sys.stdout.write(diagram(root))
        return 0
    problems, graph = check(root)
    for doc in docs:
        problems += check_doc(root, doc)
    if graph_only:
        for m in sorted(graph):
            print(f"{m}: {' '.join(sorted(graph[m]))}")
        return 0
    for p in problems:
        print(f"layers: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
