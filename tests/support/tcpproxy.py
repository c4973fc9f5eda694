"""A loopback TCP proxy between Kafka clients and one broker listener, for network faults.

It forwards bytes both ways and reads the Kafka request framing on the way in (a 4-byte
size, then api_key, api_version, correlation_id), so a test can act at one precise
request: the nth request of an API key (CreateTopics is 19) is

- `cut`: forwarded, its response never returned, and the connection closed once the
  broker has had time to act on it (the request may have taken effect);
- `hold`: forwarded, and every byte the broker sends back on that connection held for
  `hold_seconds` (past the client's request timeout);
- `dark`: never forwarded; from then on the proxy forwards nothing on any connection, old
  or new, until `restore()` (a network partition: connections open, nothing answers).

Each fault fires once. A broker that clients must reach only through the proxy advertises
the proxy's port (devkafka's ListenerSpec.advertised_port).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass

HOST = "127.0.0.1"
CREATE_TOPICS = 19
FAULTS = ("cut", "hold", "dark")


@dataclass
class _Armed:
    fault: str
    api_key: int
    nth: int
    hold_seconds: float


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.discard_responses = False
        self.hold_until = 0.0

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class KafkaProxy:
    """Listens on HOST:`port` and forwards to HOST:`upstream_port` (settable until start)."""

    def __init__(self, port: int, upstream_port: int | None = None) -> None:
        self.port = port
        self.upstream_port = upstream_port
        self.requests: Counter[int] = Counter()
        self.fired: list[str] = []
        self._armed: _Armed | None = None
        self._dark = threading.Event()
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._server: socket.socket | None = None
        self._stopped = threading.Event()

    # -- control ----------------------------------------------------------------------

    def start(self) -> None:
        if self.upstream_port is None:
            raise ValueError("no upstream port")
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((HOST, self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    def arm(self, fault: str, nth: int = 1, api_key: int = CREATE_TOPICS,
            hold_seconds: float = 0.0) -> None:
        """Fire `fault` at the `nth` request of `api_key` counted from now (forgets what
        fired before)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (known: {', '.join(FAULTS)})")
        with self._lock:
            self.requests[api_key] = 0
            self.fired.clear()
            self._armed = _Armed(fault, api_key, nth, hold_seconds)

    def reset(self) -> None:
        """As it was started: nothing armed or fired, no request counted, no dark spell."""
        with self._lock:
            self._armed = None
            self.fired.clear()
            self.requests.clear()
        self.restore()

    def restore(self) -> None:
        """End a `dark` spell: drop its silent connections, forward new ones again."""
        with self._lock:
            links, self._links = self._links, []
            self._dark.clear()
        for link in links:
            link.close()

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.close()
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            link.close()

    # -- forwarding -------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._server is not None
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection((HOST, self.upstream_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            link = _Link(client, upstream)
            with self._lock:
                self._links.append(link)
            threading.Thread(target=self._requests, args=(link,), daemon=True).start()
            threading.Thread(target=self._responses, args=(link,), daemon=True).start()

    def _requests(self, link: _Link) -> None:
        buffer = b""
        try:
            while True:
                data = link.client.recv(65536)
                if not data:
                    break
                buffer += data
                while len(buffer) >= 4:
                    size = struct.unpack(">i", buffer[:4])[0]
                    if len(buffer) < 4 + size:
                        break
                    frame, buffer = buffer[:4 + size], buffer[4 + size:]
                    if not self._forward_request(link, frame):
                        return
        except OSError:
            pass
        finally:
            if not self._dark.is_set():
                link.close()

    def _forward_request(self, link: _Link, frame: bytes) -> bool:
        """Forward one request frame, acting on an armed fault; False: stop reading."""
        if self._dark.is_set():
            return True  # swallowed: nothing reaches the broker
        api_key = struct.unpack(">h", frame[4:6])[0]
        with self._lock:
            self.requests[api_key] += 1
            armed = self._armed
            fire = (armed is not None and armed.api_key == api_key
                    and self.requests[api_key] == armed.nth)
            if fire:
                self._armed = None
                assert armed is not None
                self.fired.append(armed.fault)
        if fire and armed is not None and armed.fault == "dark":
            self._dark.set()
            return True
        if fire and armed is not None and armed.fault == "cut":
            link.discard_responses = True
        if fire and armed is not None and armed.fault == "hold":
            link.hold_until = time.monotonic() + armed.hold_seconds
        link.upstream.sendall(frame)
        if fire and armed is not None and armed.fault == "cut":
            time.sleep(2.0)  # the broker acts on the request; its answer is dropped
            link.close()
            return False
        return True

    def _responses(self, link: _Link) -> None:
        try:
            while True:
                data = link.upstream.recv(65536)
                if not data:
                    break
                wait = link.hold_until - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if link.discard_responses or self._dark.is_set():
                    continue
                link.client.sendall(data)
        except OSError:
            pass
        finally:
            if not self._dark.is_set():
                link.close()
