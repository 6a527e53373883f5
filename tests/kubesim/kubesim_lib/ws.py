"""A minimal RFC 6455 server side, for the Kubernetes stream protocols (channel.k8s.io)."""
import base64
import hashlib
import struct
import threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


class Closed(Exception):
    pass


class WebSocket:
    def __init__(self, rfile, wfile, connection):
        self.rfile, self.wfile, self.conn = rfile, wfile, connection
        self.wlock = threading.Lock()
        self.closed = False

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.rfile.read(n - len(data))
            if not chunk:
                raise Closed()
            data += chunk
        return data

    def recv_message(self):
        """Returns (opcode, payload) of the next data message (fragments joined), handling
        ping and close. Raises Closed on a close frame or EOF."""
        parts, opcode = [], None
        while True:
            b1, b2 = self._read(2)
            fin, op = b1 & 0x80, b1 & 0x0F
            masked, n = b2 & 0x80, b2 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if masked else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 4096 \
                    else _unmask(payload, mask)
            if op == 0x8:
                try:
                    self.send_frame(0x8, payload[:2])
                except OSError:
                    pass
                raise Closed()
            if op == 0x9:
                self.send_frame(0xA, payload)
                continue
            if op == 0xA:
                continue
            if op != 0:
                opcode = op
            parts.append(payload)
            if fin:
                return opcode, b"".join(parts)

    def send_frame(self, opcode, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | opcode, 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
        with self.wlock:
            if self.closed:
                raise Closed()
            self.wfile.write(head + payload)
            self.wfile.flush()

    def send_binary(self, data):
        self.send_frame(0x2, data)

    def close(self, code=1000):
        try:
            self.send_frame(0x8, struct.pack(">H", code))
        except (OSError, Closed):
            pass
        with self.wlock:
            self.closed = True

    def drain(self, timeout=10):
        """After close(): reads and discards what the peer still sends until its own close
        frame or EOF (at most `timeout` seconds), as a server that closed normally does, so
        that unread data does not turn the close into a TCP reset."""
        import socket
        try:
            self.conn.settimeout(timeout)
            while True:
                b1, b2 = self._read(2)
                n = b2 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._read(8))[0]
                self._read((4 if b2 & 0x80 else 0) + n)
                if b1 & 0x0F == 0x8:
                    return
        except (Closed, OSError, socket.timeout):
            return

    def drop(self):
        """Closes the TCP connection without a WebSocket close (fault injection)."""
        with self.wlock:
            self.closed = True
        try:
            import socket
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.conn.close()
        except OSError:
            pass


def _unmask(payload, mask):
    n = len(payload)
    m = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(m, "big")).to_bytes(n, "big")
