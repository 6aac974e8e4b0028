"""The shipped proxy configurations (deploy/nginx, deploy/caddy) run for real: Debian's nginx
or Caddy as an ordinary user, everything in a temporary directory (configuration, pid, logs,
temp files), on a free loopback port, in front of a hub on another. The proxy tests
(tests/hub/test_hub_proxies.py) and the load test through a proxy
(benchmarks/hub/hub_load.py) use them.

Each shipped file is used as written except for the values a real deployment would also
change (the public name's port, the certificate paths, the hub's address); each substitution
must find its text, so a shipped file that drifts fails here rather than in production.
"""

from __future__ import annotations

import contextlib
import json
import resource
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Protocol

from rigs.ports import restartable_port as free_port
from rigs.selfsigned import Certificate

ROOT = Path(__file__).resolve().parents[1]
NGINX_CONF = ROOT / "deploy" / "nginx" / "skipfilter-hub.conf"
CADDYFILE = ROOT / "deploy" / "caddy" / "Caddyfile"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"
#: The public name the shipped files serve (the browser maps it to 127.0.0.1).
PUBLIC_NAME = "hub.example.com"
_CERT = "/etc/ssl/certs/hub.example.com.pem"
_KEY = "/etc/ssl/private/hub.example.com.key"
_HUB_ADDR = "127.0.0.1:3000"


class Proxy(Protocol):
    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    def requests(self) -> list[dict[str, str]]: ...

    def stop(self) -> None: ...


def substitute(text: str, replacements: dict[str, str]) -> str:
    """Replace each key of ``replacements``; AssertionError when one is not in ``text``."""
    for old, new in replacements.items():
        assert old in text, f"the shipped configuration no longer contains {old!r}"
        text = text.replace(old, new)
    return text


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 15
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"proxy did not start: {log.read_text(errors='replace')}")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


class Nginx:
    """deploy/nginx/skipfilter-hub.conf inside a minimal nginx.conf of a temporary prefix."""

    def __init__(
        self, directory: Path, cert: Certificate, hub_port: int, connections: int = 1024
    ) -> None:
        self.directory = directory
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        # each stream holds two descriptors (browser side, hub side): within the hard limit
        files = min(3 * connections + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        site = substitute(
            NGINX_CONF.read_text(),
            {
                "listen 443 ssl http2;": f"listen 127.0.0.1:{self.port} ssl http2;",
                _CERT: str(cert.cert),
                _KEY: str(cert.key),
                f"server {_HUB_ADDR};": f"server 127.0.0.1:{hub_port};",
            },
        )
        (directory / "site.conf").write_text(site)
        self.access = directory / "access.log"
        self.log = directory / "error.log"
        fields = ('"$request_method" "$request_uri" "$server_protocol" "$status" '
                  '"$http_last_event_id"')  # fmt: skip
        (directory / "nginx.conf").write_text(
            f"""
worker_processes auto;  # as Debian's nginx.conf
worker_rlimit_nofile {files};
pid {directory}/nginx.pid;
error_log {self.log} warn;
events {{ worker_connections {files}; }}
http {{
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    log_format fields '{fields}';
    access_log {self.access} fields;
    include {directory}/site.conf;
}}
"""
        )
        self.process = subprocess.Popen(
            [NGINX, "-p", str(directory), "-c", str(directory / "nginx.conf"),
             "-e", str(self.log), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),  # noqa: SIM115 - nginx holds it
        )  # fmt: skip
        _wait_listening(self.port, self.process, self.log)

    def requests(self) -> list[dict[str, str]]:
        """The access log: method, uri, protocol, status, last_event_id per request."""
        names = ("method", "uri", "protocol", "status", "last_event_id")
        found = []
        for line in self.access.read_text().splitlines():
            values = [v for i, v in enumerate(line.split('"')) if i % 2]
            found.append(dict(zip(names, values, strict=True)))
        return found

    def stop(self) -> None:
        _stop(self.process)


class Caddy:
    """deploy/caddy/Caddyfile behind a global block for an ordinary user (no admin endpoint,
    no redirect listener on :80, storage in the temporary directory, HTTP/1.1 and 2)."""

    def __init__(
        self, directory: Path, cert: Certificate, hub_port: int, connections: int = 1024
    ) -> None:
        self.directory = directory
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        self.access = directory / "access.log"
        self.log = directory / "caddy.log"
        site = substitute(
            CADDYFILE.read_text(),
            {
                f"{_CERT} {_KEY}": f"{cert.cert} {cert.key}",
                f"reverse_proxy {_HUB_ADDR} {{": f"reverse_proxy 127.0.0.1:{hub_port} {{",
                f"{PUBLIC_NAME} {{\n": f"{PUBLIC_NAME} {{\n\tlog {{\n\t\toutput file "
                f"{self.access}\n\t\tformat json\n\t}}\n",
            },
        )
        (directory / "Caddyfile").write_text(
            f"""{{
	admin off
	auto_https disable_redirects
	https_port {self.port}
	http_port {free_port()}
	storage file_system {directory}/data
	skip_install_trust
	servers {{
		protocols h1 h2
	}}
}}
"""
            + site
        )
        environment = {
            "HOME": str(directory),
            "XDG_DATA_HOME": str(directory / "data"),
            "XDG_CONFIG_HOME": str(directory / "config"),
            "PATH": "/usr/bin:/bin",
        }
        self.process = subprocess.Popen(
            [CADDY, "run", "--config", str(directory / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),  # noqa: SIM115 - caddy holds it
            env=environment,
            cwd=directory,
        )
        _wait_listening(self.port, self.process, self.log)

    def requests(self) -> list[dict[str, str]]:
        """The access log: method, uri, protocol, status, last_event_id per request."""
        found: list[dict[str, str]] = []
        if not self.access.exists():
            return found
        for line in self.access.read_text().splitlines():
            entry = json.loads(line)
            request = entry.get("request", {})
            headers = {k.lower(): v for k, v in request.get("headers", {}).items()}
            found.append(
                {
                    "method": request.get("method", ""),
                    "uri": request.get("uri", ""),
                    "protocol": request.get("proto", ""),
                    "status": str(entry.get("status", "")),
                    "last_event_id": (headers.get("last-event-id") or [""])[0],
                }
            )
        return found

    def stop(self) -> None:
        _stop(self.process)


PROXIES: dict[str, type[Nginx] | type[Caddy]] = {"nginx": Nginx, "caddy": Caddy}


def split_proxy(variant: str) -> tuple[str, str | None]:
    """``new+v0~nginx`` -> (``new+v0``, ``nginx``): a load-test variant and the proxy its
    clients go through (None: straight to the hub; ``tls``: straight, the hub serving TLS)."""
    rest, _, proxy = variant.partition("~")
    if proxy and proxy not in (*PROXIES, "tls"):
        raise ValueError(f"unknown proxy {proxy!r} in {variant!r} (tls or {sorted(PROXIES)})")
    return rest, proxy or None


def hub_tls(directory: Path) -> tuple[list[str], list[str]]:
    """``~tls``, no proxy: the hub serves TLS itself (a fresh self-signed certificate);
    returns the hub's flags and the load clients'."""
    from rigs.selfsigned import self_signed

    cert = self_signed(directory / "tls")
    return ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key)], ["--tls"]


def front(name: str, directory: Path, hub_port: int, connections: int) -> tuple[Proxy, list[str]]:
    """Start proxy ``name`` (its shipped file, a fresh self-signed certificate) in front of
    the hub on ``hub_port``; returns it and the load clients' flags to go through it."""
    from rigs.selfsigned import self_signed

    cert = self_signed(directory / "tls", PUBLIC_NAME)
    proxy: Proxy = PROXIES[name](directory / name, cert, hub_port, connections)
    host = f"{PUBLIC_NAME}:{proxy.port}"
    return proxy, ["--port", str(proxy.port), "--tls", "--host", host]
