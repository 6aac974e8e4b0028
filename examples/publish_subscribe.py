"""Publish with ``Publisher``, receive with ``subscribe``, and restart the hub in between:
the subscriber reconnects with the last id it got and misses nothing.

Run it:  python examples/publish_subscribe.py
It starts a Mercure 1.0 hub (``skipfilter hub``) on a free loopback port with a SQLite
history, publishes three updates, stops the hub with SIGTERM (it drains: streams end, so
clients resume), publishes three more while it starts again (the publisher retries the
connection, as nothing was sent), and prints what the subscriber received.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx

from skipfilter.client import Publisher, Update, subscribe

KEY = "an-example-secret-of-at-least-32-bytes!"
ISSUER = "https://issuer.example"
TOPIC = "https://example.com/books/1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_hub(port: int, history: str) -> subprocess.Popen[bytes]:
    """``skipfilter hub`` trusting ISSUER's publishers, anonymous subscribers allowed."""
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", f"127.0.0.1:{port}"]
    command += ["--issuer", ISSUER, "--anonymous", "--history", history, "--heartbeat", "0"]
    command += ["--log-level", "warning", "--shutdown-timeout", "2"]
    hub = subprocess.Popen(
        command,
        env={**os.environ, "MERCURE_PUBLISHER_JWT_KEY": KEY},
    )
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).raise_for_status()
            return hub
        except httpx.HTTPError:
            time.sleep(0.05)
    hub.kill()
    raise SystemExit("the hub did not start")


def main() -> int:
    port = int(os.environ.get("PORT") or free_port())
    hub_url = f"http://127.0.0.1:{port}/.well-known/mercure"
    history = os.path.join(tempfile.mkdtemp(), "history.sqlite3")
    hub = start_hub(port, history)
    received: list[Update] = []
    subscription = subscribe(hub_url, match=[TOPIC], reconnect_delay=0.2)

    def receive() -> None:
        for update in subscription:
            received.append(update)
            if len(received) == 6:
                subscription.close()

    reader = threading.Thread(target=receive)
    reader.start()
    with Publisher(hub_url, key=KEY, issuer=ISSUER, reconnect_for=20) as publisher:
        while subscription.connections == 0:  # subscribed before the first publish
            time.sleep(0.01)
        sent = [publisher.publish(TOPIC, f"before {i}") for i in range(3)]
        hub.send_signal(signal.SIGTERM)  # drains: the stream ends, the subscriber retries
        hub.wait(10)
        new_hub: list[subprocess.Popen[bytes]] = []
        restarted = threading.Thread(target=lambda: new_hub.append(start_hub(port, history)))
        restarted.start()  # the publishes below wait for it (connection refused: retried)
        sent += [publisher.publish(TOPIC, f"after {i}") for i in range(3)]
        restarted.join()
    reader.join(20)
    subscription.close()
    for process in new_hub:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
    for update in received:
        print(update.id, update.data, "(gap)" if update.gap else "")
    ok = [u.id for u in received] == sent and not any(u.gap for u in received)
    verdict = "nothing missed" if ok else "MISSED OR REORDERED"
    print(verdict, f"({subscription.connections} connections)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
