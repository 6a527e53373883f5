"""A small Kubernetes API client for the conformance recorder and its replay (stdlib only):
plain requests, watch streams, pod logs and WebSocket attach, against either the real cluster
(client certificate or bearer token) or kubesim. It keeps everything an answer is made of:
status code, headers, raw body, and for streams the events or messages in order."""
import base64
import http.client
import json
import os
import socket
import ssl
import struct
import time
from urllib.parse import urlparse


class Answer:
    """One HTTP answer: code, lower-cased headers, raw body, and the body decoded when JSON."""

    def __init__(self, code, headers, body):
        self.code, self.headers, self.body = code, headers, body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def __repr__(self):
        return "<Answer %d %r>" % (self.code, self.body[:300])


class Client:
    """server: https URL; ca: CA file; cert/key: client certificate files (admin), or token."""

    def __init__(self, server, ca, cert=None, key=None, token=None):
        u = urlparse(server)
        self.server, self.ca = server, ca
        self.host, self.port = u.hostname, u.port or 443
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca)
        if cert:
            self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["http/1.1"])

    def with_token(self, token):
        """The same server with only a bearer token (no client certificate)."""
        return Client(self.server, self.ca, token=token)

    def _headers(self, extra=None):
        h = {"Accept": "application/json", "User-Agent": "krmpod-conformance"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def _conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, ctype="application/json", timeout=30):
        """One request; body may be a dict (sent as JSON), bytes or None."""
        conn = self._conn(timeout)
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        headers = self._headers({"Content-Type": ctype} if data is not None else None)
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        return Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, raw.decode())

    def watch(self, path, on_event, timeout=60):
        """A watch stream: on_event(event dict, monotonic arrival time) for every line until
        it returns True, the stream ends, or `timeout`. Returns (Answer without body for a
        200, or the full error Answer; whether the stream ended by itself)."""
        conn = self._conn(timeout)
        conn.request("GET", path, headers=self._headers())
        r = conn.getresponse()
        headers = {k.lower(): v for k, v in r.getheaders()}
        if r.status != 200:
            a = Answer(r.status, headers, r.read().decode())
            conn.close()
            return a, True
        ended = False
        buf = b""
        try:
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    ended = True
                    break
                buf += chunk
                stop = False
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip() and on_event(json.loads(line), time.monotonic()):
                        stop = True
                        break
                if stop:
                    break
        except socket.timeout:
            pass
        conn.close()
        return Answer(200, headers, ""), ended

    def attach(self, path, protocols=("v5.channel.k8s.io",), stdin=None, timeout=30,
               read=True):
        """A WebSocket attach (or exec): the handshake answer, then for a 101 the messages
        as [(opcode, channel or None, payload bytes)] until the server closes (read=False:
        none, the connection is closed after the handshake). stdin bytes, if given, go out
        as one channel-0 message followed by the v5 close (FF 00)."""
        raw = socket.create_connection((self.host, self.port), timeout=timeout)
        sock = self.ctx.wrap_socket(raw, server_hostname=self.host)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (self.host, self.port),
                 "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                 "Sec-WebSocket-Version: 13",
                 "Sec-WebSocket-Protocol: " + ", ".join(protocols),
                 "User-Agent: krmpod-conformance"]
        if self.token:
            lines.append("Authorization: Bearer " + self.token)
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        ws = _WS(sock)
        head = ws.read_head()
        status_line, _, rest = head.partition("\r\n")
        code = int(status_line.split()[1])
        headers = {}
        for line in rest.split("\r\n"):
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if code != 101:
            body = ws.read_body(headers)
            sock.close()
            return Answer(code, headers, body.decode(errors="replace")), []
        if not read:
            sock.close()
            return Answer(101, headers, ""), []
        if stdin is not None:
            try:
                if stdin:
                    ws.send(b"\x00" + stdin)
                ws.send(b"\xff\x00")
            except (ssl.SSLError, OSError):
                pass  # the server already ended the stream; read what it sent
        msgs = []
        try:
            for op, payload in ws.messages():
                msgs.append((op, payload[0] if payload and op == 2 else None,
                             payload[1:] if op == 2 else payload))
        except (socket.timeout, ssl.SSLError, OSError):
            msgs.append(("timeout", None, b""))
        sock.close()
        return Answer(101, headers, ""), msgs


class _WS:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head.decode()

    def read_body(self, headers):
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(self.buf) < n:
                self._fill()
            return self.buf[:n]
        if headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while True:
                while b"\r\n" not in self.buf:
                    self._fill()
                size_line, self.buf = self.buf.split(b"\r\n", 1)
                n = int(size_line.split(b";")[0], 16)
                while len(self.buf) < n + 2:
                    self._fill()
                out += self.buf[:n]
                self.buf = self.buf[n + 2:]
                if n == 0:
                    return out
        try:
            while True:
                self._fill()
        except (EOFError, OSError):
            return self.buf

    def _read(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, payload, opcode=2):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + body)

    def messages(self):
        """(opcode, payload) of each data message until a close frame or EOF; fragments are
        joined, pings answered."""
        parts, first_op = b"", None
        while True:
            try:
                b1, b2 = self._read(2)
            except EOFError:
                return
            op, n = b1 & 0x0F, b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if op == 8:
                return
            if op == 9:
                self.send(payload, 10)
                continue
            if op == 10:
                continue
            if op != 0:
                first_op, parts = op, b""
            parts += payload
            if b1 & 0x80:
                yield first_op, parts
                parts = b""
