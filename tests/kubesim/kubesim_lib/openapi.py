"""Just enough OpenAPI v3 for kubectl: `kubectl create -f` (default --validate=strict) asks
/openapi/v3 whether the server supports the fieldValidation query parameter for the object's
group-version-kind (it looks for a PATCH operation tagged with x-kubernetes-group-version-kind
that lists the parameter). When it does, kubectl leaves validation to the server, and kubesim
does strict field validation itself. The documents carry no schemas (`kubectl explain` and
client-side schema validation are not supported)."""
import hashlib
import json

RESOURCES = [  # (path of the item, kind, namespaced)
    ("/api/v1/namespaces/{namespace}/pods/{name}", "Pod", True),
    ("/api/v1/namespaces/{namespace}/podtemplates/{name}", "PodTemplate", True),
    ("/api/v1/namespaces/{namespace}/secrets/{name}", "Secret", True),
    ("/api/v1/namespaces/{name}", "Namespace", False),
]
NETWORKING = [
    ("/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}",
     "NetworkPolicy", True),
]
QUERY = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _param(name, where="query", required=False):
    p = {"name": name, "in": where, "schema": {"type": "string", "uniqueItems": True}}
    if required:
        p["required"] = True
    return p


def _op(action, kind, op_id, params, group=""):
    return {"operationId": op_id, "tags": [(group.split(".")[0] or "core") + "_v1"],
            "parameters": params,
            "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": {"group": group, "kind": kind, "version": "v1"}}


def _group_v1(resources, group="", op_group="CoreV1"):
    paths = {}
    for item, kind, namespaced in resources:
        path_params = [_param("name", "path", True)]
        if namespaced:
            path_params.append(_param("namespace", "path", True))
        scope = "Namespaced" if namespaced else ""
        paths[item] = {
            "get": _op("get", kind, "read%s%s%s" % (op_group, scope, kind), path_params, group),
            "patch": _op("patch", kind, "patch%s%s%s" % (op_group, scope, kind),
                         path_params + [_param(q) for q in QUERY], group),
        }
        if namespaced:
            coll = item.rsplit("/", 1)[0]
            paths[coll] = {"post": _op("post", kind, "create%sNamespaced%s" % (op_group, kind),
                                       [_param("namespace", "path", True)] +
                                       [_param(q) for q in QUERY if q != "force"], group)}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (kubesim)", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


DOCS = {"api/v1": _group_v1(RESOURCES),
        "apis/networking.k8s.io/v1": _group_v1(NETWORKING, "networking.k8s.io", "NetworkingV1")}


def etag(doc):
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()


def root():
    return {"paths": {k: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (k, etag(d))}
                      for k, d in DOCS.items()}}


def document(path):
    return DOCS.get(path)
