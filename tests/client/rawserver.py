"""A loopback HTTP server that answers what a test scripts, byte for byte: the hostile or
broken answers (pages, endless lines, huge bodies, silence) no real hub gives. The client
meets it over a real socket."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Self

#: An answer: the bytes to send (then the connection is closed), or None to say nothing
#: and hold the connection open until the server stops.
Answer = Iterable[bytes] | None


def stream_head(content_type: str = "text/event-stream", status: str = "200 OK") -> bytes:
    """A response head for a body that lasts until the connection closes."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n"
    return head.encode()


def sized(body: bytes, status: str = "200 OK", content_type: str = "text/plain") -> bytes:
    """A whole response with a Content-Length."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}"
    return head.encode() + b"\r\nConnection: close\r\n\r\n" + body


class RawServer:
    """Answers connection number ``n`` with ``script(n, head)``; ``heads`` holds each
    request head read (up to its blank line), ``sent`` the bytes each answer got out."""

    def __init__(self, script: Callable[[int, bytes], Answer]) -> None:
        self.script = script
        self.heads: list[bytes] = []
        self.sent: list[int] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/.well-known/mercure"
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 1 << 16:
                    got = conn.recv(65536)
                    if not got:
                        return
                    head += got
            except OSError:
                return
            number = len(self.heads)
            self.heads.append(head)
            self.sent.append(0)
            answer = self.script(number, head)
            if answer is None:
                self._stop.wait(30)
                return
            try:
                for part in answer:
                    if self._stop.is_set():
                        return
                    conn.sendall(part)
                    self.sent[number] += len(part)
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(1)
                while conn.recv(65536):  # let the client read all before the close
                    pass
            except OSError:
                return  # the client hung up: how far it read is in ``sent``

    def header(self, number: int, name: bytes) -> bytes | None:
        """The value of header ``name`` in request ``number`` (None: absent)."""
        for line in self.heads[number].split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._accepting.join(5)
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
