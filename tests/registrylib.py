"""A real container registry for the tests: Debian's `docker-registry` (distribution 2.8)
on 127.0.0.1, on a free port, with TLS from a CA of its own (made with the openssl CLI),
storage in a temporary directory, and optionally htpasswd or token authentication.

    pki = Pki(tmpdir)                           # a CA and a server certificate, shared
    with Registry(pki, auth="htpasswd", users={"user": "pass"}) as reg:
        manifest, layer = reg.push_artifact("fns/catalog", "v1", MEDIA_TYPE, b"...")
        ...

auth: None (anonymous), "htpasswd" (Basic) or "token" (the distribution token flow, with a
TokenServer below: RS256 JWTs signed with `openssl dgst -sha256 -sign`, the signing
certificate in the JWT's `x5c` header and in the registry's `rootcertbundle`).

The pushes go over http.client with the CA: blobs by the two-step upload (POST, then PUT
with the digest), manifests by PUT. Only the standard library and the openssl CLI.
Debian's package may also run a system registry on port 5000; nothing here uses it.
"""
import base64
import gzip
import hashlib
import http.client
import http.server
import io
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
from urllib.parse import parse_qs, urlsplit

REGISTRY_BIN = "/usr/bin/docker-registry"
HTPASSWD_BIN = "/usr/bin/htpasswd"

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"

TOKEN_SERVICE = "krmpod-test-registry"
TOKEN_ISSUER = "krmpod-test-token-issuer"


def sha256_digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def free_port(addr="127.0.0.1"):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _openssl(args, **kw):
    return subprocess.run(["openssl"] + args, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, **kw)


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Pki:
    """A CA and a server certificate for 127.0.0.1/::1/localhost in `state`, like
    tests/kubesim/kubesim_lib/pki.py; ca, cert, key are file paths."""

    def __init__(self, state, ips=()):
        """ips: addresses the server certificate covers besides 127.0.0.1 and ::1."""
        os.makedirs(state, exist_ok=True)
        self.ca = os.path.join(state, "ca.crt")
        ca_key = os.path.join(state, "ca.key")
        _openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                  "-nodes", "-keyout", ca_key, "-out", self.ca, "-days", "2",
                  "-subj", "/CN=krmpod-test-registry-ca"])
        ext = os.path.join(state, "server.ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost%s\n"
                    % "".join(",IP:" + ip for ip in ips) +
                    "extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n")
        self.key = os.path.join(state, "server.key")
        self.cert = os.path.join(state, "server.crt")
        csr = os.path.join(state, "server.csr")
        _openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                  "-keyout", self.key, "-out", csr, "-subj", "/CN=krmpod-test-registry"])
        _openssl(["x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key,
                  "-CAcreateserial", "-out", self.cert, "-days", "2", "-extfile", ext])

    def client_context(self):
        return ssl.create_default_context(cafile=self.ca)

    def server_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


class TokenSigner:
    """An RSA key and a self-signed certificate for it (the registry's rootcertbundle);
    signs JWTs as distribution 2.8 verifies them (RS256, the certificate in x5c)."""

    def __init__(self, state):
        self.key = os.path.join(state, "token.key")
        self.cert = os.path.join(state, "token.crt")
        _openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key,
                  "-out", self.cert, "-days", "2", "-subj", "/CN=krmpod-test-token-signer"])
        der = _openssl(["x509", "-in", self.cert, "-outform", "DER"]).stdout
        self.x5c = base64.b64encode(der).decode()

    def token(self, subject, access, ttl=300):
        """A JWT for `access`: [(type, name, [actions])]."""
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.x5c]}
        claims = {"iss": TOKEN_ISSUER, "sub": subject, "aud": TOKEN_SERVICE,
                  "exp": now + ttl, "nbf": now - 10, "iat": now, "jti": secrets.token_hex(8),
                  "access": [{"type": t, "name": n, "actions": a} for t, n, a in access]}
        signing_input = (_b64url(json.dumps(header).encode()) + "." +
                         _b64url(json.dumps(claims).encode()))
        sig = _openssl(["dgst", "-sha256", "-sign", self.key],
                       input=signing_input.encode()).stdout
        return signing_input + "." + _b64url(sig)


def parse_scope(scope):
    """"repository:fns/catalog:pull,push" -> ("repository", "fns/catalog", ["pull", "push"])."""
    kind, _, rest = scope.partition(":")
    name, _, actions = rest.rpartition(":")
    return kind, name, [a for a in actions.split(",") if a]


class TokenServer:
    """The registry's token service over HTTPS: GET /token?service=…&scope=… answers
    {"token": JWT} granting pull for the scopes asked, to `users` by Basic authentication
    (401 for wrong ones) and, when `anonymous` is set, to anyone without credentials.
    Every request is recorded in `requests` as (path, Authorization header or None)."""

    def __init__(self, pki, signer, users, anonymous=False):
        self.signer, self.users, self.anonymous = signer, dict(users or {}), anonymous
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Authorization")))
                code, body = server.answer(self.path, self.headers.get("Authorization"))
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = pki.server_context().wrap_socket(self.httpd.socket,
                                                             server_side=True)
        self.port = self.httpd.server_address[1]
        self.realm = "https://127.0.0.1:%d/token" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path, authorization):
        u = urlsplit(path)
        q = parse_qs(u.query)
        if u.path != "/token" or q.get("service") != [TOKEN_SERVICE]:
            return 400, {"details": "unknown service"}
        subject = ""
        if authorization:
            scheme, _, cred = authorization.partition(" ")
            user, _, password = base64.b64decode(cred).decode().partition(":")
            if scheme != "Basic" or self.users.get(user) != password:
                return 401, {"details": "incorrect username or password"}
            subject = user
        elif not self.anonymous:
            return 401, {"details": "credentials required"}
        access = [parse_scope(s) for s in q.get("scope", [])]
        access = [(k, n, [a for a in acts if a == "pull"]) for k, n, acts in access]
        return 200, {"token": self.signer.token(subject, access), "expires_in": 300}

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class RegistryError(Exception):
    pass


class Registry:
    """`docker-registry serve CONFIG` on 127.0.0.1:port with TLS. host is "127.0.0.1:PORT";
    ca is the CA file to trust. auth: None, "htpasswd" or "token" (users: {name: password};
    anonymous: whether the token service gives anonymous pull tokens)."""

    def __init__(self, pki, auth=None, users=None, anonymous=False, addr="127.0.0.1"):
        """addr: the address it listens on (the certificate must cover it: Pki's ips)."""
        self.addr = addr
        if not os.access(REGISTRY_BIN, os.X_OK):
            raise RegistryError("%s is missing: run scripts/install-test-deps.sh "
                                "(Debian's docker-registry)" % REGISTRY_BIN)
        self.pki, self.auth, self.users = pki, auth, dict(users or {})
        self.ca = pki.ca
        self.state = tempfile.mkdtemp(prefix="krmpod-registry-")
        self.ctx = pki.client_context()
        self.proc = self.token_server = self.signer = None
        try:
            self._start(anonymous)
        except Exception:
            self.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _auth_config(self, anonymous):
        if self.auth == "htpasswd":
            path = os.path.join(self.state, "htpasswd")
            with open(path, "w") as f:
                for user, password in self.users.items():
                    f.write(subprocess.run([HTPASSWD_BIN, "-Bbn", user, password], check=True,
                                           capture_output=True, text=True).stdout.strip() + "\n")
            return {"htpasswd": {"realm": "krmpod-test", "path": path}}
        if self.auth == "token":
            self.signer = TokenSigner(self.state)
            self.token_server = TokenServer(self.pki, self.signer, self.users, anonymous)
            return {"token": {"realm": self.token_server.realm, "service": TOKEN_SERVICE,
                              "issuer": TOKEN_ISSUER, "rootcertbundle": self.signer.cert}}
        if self.auth is None:
            return None
        raise ValueError("auth: None, 'htpasswd' or 'token'")

    def _start(self, anonymous):
        self.port = free_port(self.addr)
        self.host = "%s:%d" % (self.addr, self.port)
        config = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {"filesystem": {"rootdirectory": os.path.join(self.state, "data")},
                        "delete": {"enabled": True}},
            "http": {"addr": self.host, "secret": secrets.token_hex(16),
                     "tls": {"certificate": self.pki.cert, "key": self.pki.key}},
        }
        auth = self._auth_config(anonymous)
        if auth:
            config["auth"] = auth
        path = os.path.join(self.state, "config.yml")
        with open(path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.log_path = os.path.join(self.state, "registry.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", path], stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=self.state)
        self._wait_ready()

    def _wait_ready(self, timeout=15):
        until = time.time() + timeout
        while time.time() < until:
            if self.proc.poll() is not None:
                raise RegistryError("docker-registry exited with %d: %s"
                                    % (self.proc.returncode, self.log_text()))
            try:
                status, _, _ = self.request("GET", "/v2/", auth=False)
                if status in (200, 401):
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        raise RegistryError("docker-registry did not answer on %s: %s"
                            % (self.host, self.log_text()))

    def log_text(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self, keep_state=False):
        """Stops the registry (and its token service); removes its state unless kept."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.token_server:
            self.token_server.stop()
            self.token_server = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None
        if not keep_state and self.state:
            shutil.rmtree(self.state, ignore_errors=True)
            self.state = None

    # --- Requests --------------------------------------------------------------------

    def _authorization(self, repo):
        if self.auth == "htpasswd":
            user, password = next(iter(self.users.items()))
            return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        if self.auth == "token":
            scope = [("repository", repo or "", ["pull", "push"])]
            return "Bearer " + self.signer.token("pusher", scope)
        return None

    def request(self, method, path, body=None, headers=None, repo=None, auth=True):
        """(status, headers (lowercase names), body) of one request."""
        hdrs = dict(headers or {})
        authorization = self._authorization(repo) if auth else None
        if authorization:
            hdrs["Authorization"] = authorization
        conn = http.client.HTTPSConnection(self.addr, self.port, context=self.ctx, timeout=30)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def _ok(self, want, method, path, **kw):
        status, headers, data = self.request(method, path, **kw)
        if status != want:
            raise RegistryError("%s %s: %d %s" % (method, path, status, data[:500]))
        return headers, data

    # --- Pushing ---------------------------------------------------------------------

    def push_blob(self, repo, data):
        """Uploads data (POST, then PUT with the digest); returns its digest."""
        digest = sha256_digest(data)
        headers, _ = self._ok(202, "POST", "/v2/%s/blobs/uploads/" % repo, repo=repo)
        loc = urlsplit(headers["location"])
        path = loc.path + "?" + (loc.query + "&" if loc.query else "") + "digest=" + digest
        self._ok(201, "PUT", path, body=data, repo=repo,
                 headers={"Content-Type": "application/octet-stream"})
        return digest

    def push_manifest(self, repo, reference, media_type, manifest):
        """PUTs a manifest (a dict or bytes) as reference (tag or digest); returns its
        digest (checked against the registry's Docker-Content-Digest)."""
        body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
        headers, _ = self._ok(201, "PUT", "/v2/%s/manifests/%s" % (repo, reference), body=body,
                              repo=repo, headers={"Content-Type": media_type})
        digest = sha256_digest(body)
        if headers.get("docker-content-digest") != digest:
            raise RegistryError("the registry computed %s for the manifest, not %s"
                                % (headers.get("docker-content-digest"), digest))
        return digest

    def _descriptor(self, repo, media_type, data):
        return {"mediaType": media_type, "digest": self.push_blob(repo, data),
                "size": len(data)}

    def push_artifact(self, repo, tag, media_type, data, config_media_type=OCI_CONFIG):
        """An OCI artifact: an image manifest with the empty config "{}" (of
        config_media_type) and one layer of media_type holding data. Returns (manifest
        digest, layer digest)."""
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                    "config": self._descriptor(repo, config_media_type, b"{}"),
                    "layers": [self._descriptor(repo, media_type, data)]}
        digest = self.push_manifest(repo, tag, OCI_MANIFEST, manifest)
        return digest, manifest["layers"][0]["digest"]

    def _image_manifest(self, repo, config, arch):
        blob = json.dumps({"architecture": arch, "os": "linux", "config": config,
                           "rootfs": {"type": "layers", "diff_ids": []}}).encode()
        return {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": self._descriptor(repo, OCI_CONFIG, blob),
                "layers": [self._descriptor(repo, OCI_LAYER_GZIP, empty_layer())]}

    def push_image(self, repo, tag, config, index=False, other_config=None):
        """An image whose config's `config` is `config` (Entrypoint, Cmd, Env, WorkingDir,
        User). With index: an OCI index under the tag with a linux/arm64 image (its config
        other_config, by default Entrypoint ["/arm64"]) first, then the linux/amd64 one.
        Returns (the tag's digest, the amd64 manifest's digest, its config's digest)."""
        amd64 = self._image_manifest(repo, config, "amd64")
        if not index:
            d = self.push_manifest(repo, tag, OCI_MANIFEST, amd64)
            return d, d, amd64["config"]["digest"]
        arm64 = self._image_manifest(repo, other_config or {"Entrypoint": ["/arm64"]}, "arm64")
        entries = []
        for arch, m in (("arm64", arm64), ("amd64", amd64)):
            body = json.dumps(m).encode()
            digest = self.push_manifest(repo, sha256_digest(body), OCI_MANIFEST, body)
            entries.append({"mediaType": OCI_MANIFEST, "digest": digest, "size": len(body),
                            "platform": {"architecture": arch, "os": "linux"}})
        idx = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
        return (self.push_manifest(repo, tag, OCI_INDEX, idx), entries[1]["digest"],
                amd64["config"]["digest"])


def empty_layer():
    """A gzipped empty tar archive, deterministic."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT):
        pass
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as z:
        z.write(raw.getvalue())
    return out.getvalue()


class HttpsFileServer:
    """A local HTTPS server (python ssl + http.server) serving `files` ({path: bytes});
    404 for other paths; `redirects` ({path: location}, may be changed while it runs)
    answer 302."""

    def __init__(self, pki, files, redirects=None):
        self.files, self.redirects = dict(files), dict(redirects or {})
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Authorization")))
                if self.path in server.redirects:
                    self.send_response(302)
                    self.send_header("Location", server.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = server.files.get(self.path)
                self.send_response(200 if data is not None else 404)
                data = data if data is not None else b"not found\n"
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = pki.server_context().wrap_socket(self.httpd.socket,
                                                             server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class FixtureRegistry:
    """A stand-in registry, for exec mode on kubesim: it answers the distribution API's
    manifest and blob reads for ANY repository and tag whose last path component names an
    executable in `images_dir` (kubesim's fixtures: `example.com/fns/cat:v1` is `cat`), with
    an image whose config says Entrypoint [that executable's path]; anything else is 404.
    A manifest asked for by digest is served only when it is that image's (content-addressed,
    as a registry must). Over TLS from `pki`; anonymous. Requests are counted in
    `requests`. The real registry client is tested against Debian's docker-registry
    (tests/registry_tests); this only serves kubesim's fixture images under every name the
    tests give them."""

    def __init__(self, pki, images_dir):
        self.images_dir = images_dir
        self.requests = []
        reg = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", ctype="application/json", digest=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if digest:
                    self.send_header("Docker-Content-Digest", digest)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_GET(self):
                reg.requests.append(self.path)
                status, body, ctype, digest = reg.answer(self.path)
                self._send(status, body, ctype, digest)

            do_HEAD = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = pki.server_context().wrap_socket(self.httpd.socket,
                                                             server_side=True)
        self.port = self.httpd.server_address[1]
        self.host = "127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def image(self, name):
        """(manifest bytes, config bytes) of fixture `name`, or None."""
        path = os.path.join(self.images_dir, name)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return None
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Entrypoint": [path]},
                             "rootfs": {"type": "layers", "diff_ids": []}}).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": sha256_digest(config),
                       "size": len(config)},
            "layers": []}).encode()
        return manifest, config

    def answer(self, path):
        not_found = (404, json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN",
                                                  "message": "unknown"}]}).encode(),
                     "application/json", None)
        p = urlsplit(path).path
        if p == "/v2/":
            return 200, b"{}", "application/json", None
        for kind in ("/manifests/", "/blobs/"):
            if kind in p:
                repo, ref = p[len("/v2/"):].split(kind, 1)
                break
        else:
            return not_found
        img = self.image(repo.rsplit("/", 1)[-1])
        if img is None:
            return not_found
        manifest, config = img
        if kind == "/blobs/":
            return ((200, config, "application/octet-stream", ref)
                    if ref == sha256_digest(config) else not_found)
        if ref.startswith("sha256:") and ref != sha256_digest(manifest):
            return not_found
        return 200, manifest, OCI_MANIFEST, sha256_digest(manifest)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class RedirectingRegistry:
    """A registry that wants Basic credentials (`users`) and keeps its blobs on a second
    host, as registries keep them on a CDN or object store (issue 29):

      - the front, https://127.0.0.1:P1: /v2/... asks for Basic credentials (401 with a
        Basic challenge), then serves manifests from `backend` (an anonymous Registry) and
        answers a blob GET 307 to the storage host;
      - the storage host, https://localhost:P2 (another authority; the Pki certificate
        covers it): a blob GET without its token answers 401 with its own challenge,
        `Bearer realm="https://localhost:P2/token"`; /token gives a token to anyone, or with
        `storage_users` only to those; a blob GET with the token serves the backend's blob.

    With storage_basic, the storage host asks for Basic credentials instead (a blob GET
    without `storage_users`' answers 401 `Basic realm="storage"`).

    Every request each host saw is kept, with its Authorization, in `front_requests` and
    `storage_requests`."""

    def __init__(self, pki, backend, users, storage_users=None, storage_basic=False):
        self.storage_basic = storage_basic
        self.backend, self.users = backend, dict(users)
        self.storage_users = dict(storage_users) if storage_users else None
        self.front_requests, self.storage_requests = [], []
        self.tokens = set()
        outer = self

        def basic_ok(header, users):
            if not header or not header.startswith("Basic "):
                return False
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return users.get(user) == password

        class Front(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                auth = self.headers.get("Authorization")
                outer.front_requests.append((self.path, auth))
                if not basic_ok(auth, outer.users):
                    return self._send(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                                      [("WWW-Authenticate", 'Basic realm="front"')])
                if "/blobs/" in self.path:
                    digest = self.path.rsplit("/", 1)[1]
                    repo = self.path[len("/v2/"):self.path.index("/blobs/")]
                    return self._send(307, headers=[("Location", "%s/store/%s/%s" % (
                        outer.storage_url, repo, digest))])
                r = outer.backend.request("GET", self.path, headers={
                    "Accept": self.headers.get("Accept", "*/*")}, auth=False)
                self._send(r[0], r[2], [(k, v) for k, v in r[1].items()
                                        if k in ("content-type", "docker-content-digest")])

        class Storage(Front):
            def do_GET(self):
                auth = self.headers.get("Authorization")
                outer.storage_requests.append((self.path, auth))
                if self.path.startswith("/token"):
                    if outer.storage_users is not None and not basic_ok(
                            auth, outer.storage_users):
                        return self._send(401, b"storage credentials wanted")
                    token = "storage-" + secrets.token_hex(8)
                    outer.tokens.add(token)
                    return self._send(200, json.dumps({"token": token}).encode(),
                                      [("Content-Type", "application/json")])
                if outer.storage_basic:
                    if not basic_ok(auth, outer.storage_users or {}):
                        return self._send(401, b"", [("WWW-Authenticate",
                                                      'Basic realm="storage"')])
                elif not (auth and auth.startswith("Bearer ") and auth[7:] in outer.tokens):
                    return self._send(401, b"", [("WWW-Authenticate",
                                                  'Bearer realm="%s/token",service="storage"'
                                                  % outer.storage_url)])
                repo, _, digest = self.path[len("/store/"):].rpartition("/")
                r = outer.backend.request("GET", "/v2/%s/blobs/%s" % (repo, digest), auth=False)
                self._send(r[0], r[2])

        self.servers = []
        for handler, addr in ((Front, "127.0.0.1"), (Storage, "127.0.0.1")):
            httpd = http.server.ThreadingHTTPServer((addr, 0), handler)
            httpd.socket = pki.server_context().wrap_socket(httpd.socket, server_side=True)
            threading.Thread(target=httpd.serve_forever, daemon=True).start()
            self.servers.append(httpd)
        self.host = "127.0.0.1:%d" % self.servers[0].server_address[1]
        self.storage_host = "localhost:%d" % self.servers[1].server_address[1]
        self.storage_url = "https://" + self.storage_host

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        for httpd in self.servers:
            httpd.shutdown()
            httpd.server_close()
