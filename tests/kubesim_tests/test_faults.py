"""kubesim's fault injection (tests/kubesim/README.md, "Faults") seen at the wire: what a
client gets when a fault fires. The faults' effect on krmpod is tests/integration's."""
import os
import struct
import time

from test_init_volumes import container, pod
from test_protocol import WS


def test_drop_attach_mid_stream(ks):
    """drop_attach with drop_attach_bytes: the connection goes after exactly that much
    output, with neither a Status nor a close frame (a client must not take it for the end);
    the container's stdin closes with it (stdinOnce), so the function ends."""
    ks.create_pod(pod("protodrop", [], [container("main", image="cat", stdin=True)],
                      volumes=()))
    ks.wait_phase("protodrop", "Running")
    ks.faults(drop_attach=1, drop_attach_bytes=5000)
    ws = WS(ks, "/api/v1/namespaces/default/pods/protodrop/attach?container=main&stdin=true"
                "&stdout=true&stderr=true")
    assert ws.status_line.startswith("HTTP/1.1 101"), ws.head
    data = os.urandom(20000)
    for i in range(0, len(data), 4000):
        try:
            ws.send(b"\x00" + data[i:i + 4000])
        except OSError:  # the drop can come while the rest is still being sent
            break
    out, frames = b"", []
    while True:
        try:
            b1, b2 = ws._read(2)
        except (EOFError, OSError):
            break
        n = b2 & 0x7F
        if n == 126:
            n = struct.unpack(">H", ws._read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", ws._read(8))[0]
        payload = ws._read(n)
        frames.append((b1 & 0x0F, payload[:1]))
        if b1 & 0x0F == 2 and payload[:1] == b"\x01":
            out += payload[1:]
    assert out == data[:5000], (len(out), frames[-3:])
    assert all(op == 2 and ch in (b"\x01", b"\x02") for op, ch in frames), \
        "no Status (channel 3) and no close frame: %r" % frames[-3:]
    ks.wait_phase("protodrop", "Succeeded")
    assert ks.api("GET", "/kubesim/faults")[1]["drop_attach"] == 0



def test_http_delays(ks):
    """http_delays: the next matching requests are answered that much later; others are not,
    and the counter counts down."""
    ks.faults(http_delays=[{"ms": 600, "count": 1, "method": "GET", "path_contains": "/version"}])
    t0 = time.monotonic()
    code, _ = ks.api("GET", "/api/v1/namespaces/default/pods")
    assert code == 200 and time.monotonic() - t0 < 0.5  # not matching: at once
    t0 = time.monotonic()
    code, body = ks.api("GET", "/version")
    assert code == 200 and body["major"] == "1"
    assert time.monotonic() - t0 >= 0.6
    t0 = time.monotonic()
    ks.api("GET", "/version")
    assert time.monotonic() - t0 < 0.5  # the count is used up
    assert ks.api("GET", "/kubesim/faults")[1]["http_delays"][0]["count"] == 0
