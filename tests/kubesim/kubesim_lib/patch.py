"""PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch (treated as a merge patch:
maps merge, lists are replaced; enough for labels, annotations, images and deadlines) and JSON
patch (RFC 6902)."""
import copy

MERGE = ("application/merge-patch+json", "application/strategic-merge-patch+json")
JSON_PATCH = "application/json-patch+json"


class PatchError(Exception):
    pass


def merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):  # strategic merge directives ($patch, $retainKeys, ...)
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    for p in parts:
        if isinstance(doc, list):
            try:
                doc = doc[int(p)]
            except (ValueError, IndexError):
                raise PatchError("path element %r not found" % p)
        elif isinstance(doc, dict) and p in doc:
            doc = doc[p]
        else:
            raise PatchError("path element %r not found" % p)
    return doc


def json_patch(doc, ops):
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise PatchError("a JSON patch is a list of operations")
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if not parts:
            raise PatchError("cannot %s the whole object" % kind)
        parent, last = _walk(doc, parts[:-1]), parts[-1]
        if kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError("testing value %s failed" % op.get("path"))
        elif kind == "remove":
            _walk(doc, parts)
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif kind in ("add", "replace"):
            if kind == "replace":
                _walk(doc, parts)
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op.get("value"))
                elif kind == "add":
                    parent.insert(int(last), op.get("value"))
                else:
                    parent[int(last)] = op.get("value")
            elif isinstance(parent, dict):
                parent[last] = op.get("value")
            else:
                raise PatchError("cannot %s below a scalar" % kind)
        else:
            raise PatchError("unsupported JSON patch operation %r" % kind)
    return doc
