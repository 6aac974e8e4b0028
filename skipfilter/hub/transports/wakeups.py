"""Wake-ups between the processes that share one SQLite history: after a commit, the
writer tells every follower at once that there is something new to read.

Each process binds a unix datagram socket named by its pid in a folder next to the
history file; a wake-up is one empty datagram sent, without blocking, to every socket
there but its own. A socket nobody holds (its process died) refuses the
datagram and is removed; a full one already has a wake-up waiting. A lost wake-up only
delays: followers also poll (``sqlite_follow``).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import socket
import tempfile
import time

#: Seconds the list of peers is kept before the folder is listed again (a worker started
#: meanwhile is found by the followers' poll until then).
_LIST_EVERY = 0.5
#: Transports opened in this process (each has a socket of its own).
_opened = itertools.count()
#: Longest path a unix socket's address may hold (Linux: 108 bytes with the final NUL).
_MAX_ADDRESS = 100


def wake_folder(history: str) -> str:
    """The folder of ``history``'s wake-up sockets: beside the file, or (when that path is
    too long for a socket address) in the temporary folder, named by the file's path."""
    path = os.path.abspath(history)
    beside = f"{path}.wake"
    if len(beside) + 12 <= _MAX_ADDRESS:
        return beside
    digest = hashlib.sha256(path.encode()).hexdigest()[:20]
    return os.path.join(tempfile.gettempdir(), f"skipfilter-wake-{digest}")


class Wakeups:
    """This process's wake-up socket in ``folder``, and the way to wake every process's.

    Event loop only: the follower reads ``fileno`` and ``drain``s it; the writer calls
    ``wake_all``.
    """

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        # named by pid (and which of this process's transports: tests open several)
        self.path = os.path.join(folder, f"{os.getpid()}.{next(_opened)}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a process with this pid before, now gone
        self._inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._inbox.bind(self.path)
        self._inbox.setblocking(False)
        self._outbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._outbox.setblocking(False)
        self._peers: list[str] = []
        self._listed_at = -_LIST_EVERY
        self.closed = False

    def wake_all(self) -> None:
        """Wake every other process's follower on this history. O(processes)."""
        now = time.monotonic()
        if now - self._listed_at >= _LIST_EVERY:
            self._peers = self._list()
            self._listed_at = now
        for peer in self._peers:
            if peer != self.path:  # this process reads right after its own commits
                self.wake(peer)

    def wake(self, peer: str) -> None:
        """One wake-up to ``peer``'s socket; one nobody holds is removed."""
        try:
            self._outbox.sendto(b"", peer)
        except BlockingIOError:
            pass  # its inbox is full: a wake-up already waits there
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):  # its process died
                os.unlink(peer)
            self._listed_at = -_LIST_EVERY
        except OSError:
            pass  # a wake-up lost only delays (the followers poll)

    def fileno(self) -> int:
        """The inbox, readable when a wake-up waits (for the loop's ``add_reader``)."""
        return self._inbox.fileno()

    def drain(self) -> None:
        """Take every wake-up waiting (several commits, one read)."""
        with contextlib.suppress(OSError):
            while True:
                self._inbox.recv(1)

    def close(self) -> None:
        """Remove this process's socket and close both (after the follower stopped)."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._outbox.close()
        self._inbox.close()

    def _list(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return [self.path]
        return [os.path.join(self.folder, name) for name in names if name[:1].isdigit()]
