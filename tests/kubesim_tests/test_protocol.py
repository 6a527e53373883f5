"""The stream protocol below kubectl: WebSocket v5.channel.k8s.io as krmpod speaks it
(channel bytes, stdin EOF as FF 00, the Status on channel 3), here on an init container."""
import base64
import json
import os
import socket
import struct

from test_init_volumes import container, pod, state, statuses


class WS:
    def __init__(self, ks, path, protocol="v5.channel.k8s.io"):
        raw = socket.create_connection((ks.host, ks.port), timeout=10)
        self.sock = ks.ctx.wrap_socket(raw, server_hostname=ks.host)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            "GET %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n\r\n"
            % (path, ks.host, ks.port, ks.token, key, protocol)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        self.status_line = head.split(b"\r\n")[0].decode()
        self.head = head.decode()
        self.buf = b""

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

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def messages(self):
        """(opcode, payload) until the server's close frame or EOF."""
        while True:
            try:
                b1, b2 = self._read(2)
            except EOFError:
                return
            n = b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if b1 & 0x0F == 8:
                return
            yield b1 & 0x0F, payload


def collect(ws):
    out = {1: b"", 2: b""}
    statuses_ = []
    for op, msg in ws.messages():
        assert op == 2, "every message is binary"
        if msg[0] in out:
            out[msg[0]] += msg[1:]
        elif msg[0] == 3:
            statuses_.append(json.loads(msg[1:]))
    return out, statuses_


def test_v5_attach_to_init_container(ks):
    ks.create_pod(pod("proto", [
        container("unpack", image="cat", command=["sh", "-c", "cat; echo unpacked >&2"],
                  stdin=True),
    ], [container("fn", args=["map"])], volumes=()))
    ks.wait_pod("proto", lambda p: state(statuses(p)["unpack"])[0] == "running")
    ws = WS(ks, "/api/v1/namespaces/default/pods/proto/attach?container=unpack&stdin=true"
                "&stdout=true&stderr=true&tty=false")
    assert ws.status_line.startswith("HTTP/1.1 101"), ws.head
    assert "Sec-WebSocket-Protocol: v5.channel.k8s.io" in ws.head
    data = os.urandom(70000)
    for i in range(0, len(data), 30000):
        ws.send(b"\x00" + data[i:i + 30000])
    ws.send(b"\xff\x00")  # stdin EOF: the init container's stdin closes (stdinOnce)
    out, sts = collect(ws)
    assert out[1] == data
    assert out[2] == b"unpacked\n"
    assert sts == [{"metadata": {}, "status": "Success"}]
    p = ks.wait_phase("proto", "Succeeded")
    assert state(statuses(p)["unpack"])[1]["exitCode"] == 0


def test_v5_exec_status_carries_the_exit_code(ks):
    ks.create_pod(pod("protoexec", [], [container("main", image="sleep")], volumes=()))
    ks.wait_phase("protoexec", "Running")
    ws = WS(ks, "/api/v1/namespaces/default/pods/protoexec/exec?container=main&command=sh"
                "&command=-c&command=exit+4&stdout=true&stderr=true")
    assert ws.status_line.startswith("HTTP/1.1 101"), ws.head
    _, sts = collect(ws)
    assert len(sts) == 1 and sts[0]["reason"] == "NonZeroExitCode"
    assert sts[0]["details"]["causes"] == [{"reason": "ExitCode", "message": "4"}]


def test_attach_errors_before_and_after_the_upgrade(ks):
    """As the real API server answers (tests/conformance/data/errors.json and
    pod_image_pull_failure.json): what the API server checks itself (the pod, the container
    name, the node) is a Status before the upgrade; a container the kubelet does not know as
    running is a 500 Status on channel 3 after it, following the ready message."""
    ks.create_pod(pod("protowait", [container("init", image="sleep")],
                      [container("main", image="cat")], volumes=()))
    ks.wait_pod("protowait", lambda p: state(statuses(p)["init"])[0] == "running")
    for path, code, text in (
            ("protowait/attach?container=nope", 400,
             "container nope is not valid for pod protowait"),
            ("missing/attach?container=main", 404, 'pods "missing" not found')):
        ws = WS(ks, "/api/v1/namespaces/default/pods/" + path)
        assert ws.status_line.startswith("HTTP/1.1 %d" % code), (path, ws.head)
        n = int(next(line.split(":")[1] for line in ws.head.split("\r\n")
                     if line.lower().startswith("content-length:")))
        body = json.loads(ws._read(n))
        assert body["kind"] == "Status" and body["code"] == code, body
        assert text in body["message"], (path, body)
    # the only main container is the default one, init containers or not
    for path in ("protowait/attach?container=main&stdin=true&stdout=true",
                 "protowait/attach?stdout=true"):
        ws = WS(ks, "/api/v1/namespaces/default/pods/" + path)
        assert ws.status_line.startswith("HTTP/1.1 101"), (path, ws.head)
        msgs = [m for _, m in ws.messages()]
        assert msgs[0] == b"\x01", msgs  # ready: an empty message on stdout
        assert msgs[1][0] == 3 and len(msgs) == 2, msgs
        st = json.loads(msgs[1][1:])
        assert (st["code"], st["reason"]) == (500, "InternalError"), st
        assert st["message"] == ("Internal error occurred: unable to upgrade connection: "
                                 "container main not found in pod protowait_default"), st


def test_unknown_stream_protocol_is_403_with_an_empty_body(ks):
    ks.create_pod(pod("protov", [], [container("main", image="sleep")], volumes=()))
    ks.wait_phase("protov", "Running")
    ws = WS(ks, "/api/v1/namespaces/default/pods/protov/attach?container=main&stdout=true",
            protocol="v9.channel.k8s.io")
    assert ws.status_line.startswith("HTTP/1.1 403"), ws.head
    assert "content-length: 0" in ws.head.lower(), ws.head
