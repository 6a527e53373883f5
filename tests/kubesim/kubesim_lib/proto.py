"""Decoding of the few Kubernetes protobuf request bodies kubectl sends (typed clients post
`application/vnd.kubernetes.protobuf`; `kubectl auth can-i` does). Responses stay JSON, which
kubectl also accepts. Wire format only: no schema compiler needed."""

MAGIC = b"k8s\x00"


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf):
    """{field number: [value, ...]}; length-delimited values are bytes, varints ints."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = bytes(buf[i:i + n]), i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wt)
        out.setdefault(num, []).append(v)
    return out


def _str(f, n):
    v = f.get(n)
    return v[-1].decode() if v else ""


def unwrap(body):
    """(apiVersion, kind, raw message) of a k8s protobuf envelope."""
    if not body.startswith(MAGIC):
        raise ValueError("not a Kubernetes protobuf message (no k8s\\0 prefix)")
    env = fields(body[len(MAGIC):])
    tm = fields(env.get(1, [b""])[-1])
    return _str(tm, 1), _str(tm, 2), env.get(2, [b""])[-1]


def access_review(raw):
    """A SelfSubjectAccessReview message as its JSON form (spec only)."""
    spec = fields(fields(raw).get(2, [b""])[-1])
    out = {"spec": {}}
    if 1 in spec:
        ra = fields(spec[1][-1])
        out["spec"]["resourceAttributes"] = {
            k: _str(ra, n) for n, k in ((1, "namespace"), (2, "verb"), (3, "group"),
                                        (4, "version"), (5, "resource"), (6, "subresource"),
                                        (7, "name")) if _str(ra, n)}
    if 2 in spec:
        na = fields(spec[2][-1])
        out["spec"]["nonResourceAttributes"] = {"path": _str(na, 1), "verb": _str(na, 2)}
    return out


def decode(body):
    """The JSON form of a protobuf request body kubesim understands."""
    api_version, kind, raw = unwrap(body)
    if kind == "SelfSubjectAccessReview":
        obj = access_review(raw)
    elif kind == "SelfSubjectReview":
        obj = {}
    else:
        raise ValueError("kubesim cannot decode protobuf %s; send JSON" % (kind or "objects"))
    obj.update({"apiVersion": api_version, "kind": kind, "metadata": {}})
    return obj
