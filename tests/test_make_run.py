"""``make run`` as a newcomer meets it: the hub command the Makefile runs, then the subscribe
and publish commands it prints, pasted into a fresh shell exactly as printed.

The demo holds the public development key, so ``skipfilter token --dev`` (in the printed
publish command) mints a token it accepts with no set-up; the key is refused anywhere but
on loopback, where nobody else can use it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import jwt
import pytest

from skipfilter.hub.server.demo_hints import demo_commands
from skipfilter.hub.server.preflight import preflight
from skipfilter.hub.settings import DEV_KEY, HubSettings
from tests.hub.hubtest import HUB, free_port
from tests.hub.keytest import RoleKeys

ROOT = Path(__file__).resolve().parent.parent
#: A shell a newcomer opens: no MERCURE_* variables, no .venv/bin on PATH.
CLEAN_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MERCURE_")},
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}


def make_dry_run(target: str, *variables: str) -> list[str]:
    """The commands ``make TARGET`` runs (setting up .venv left out), as make prints them."""
    done = subprocess.run(
        ["make", "-n", "-s", "-o", ".venv/.installed-hub", "-o", ".venv/.installed-bench",
         "-o", ".venv/.installed", "-o", "system-deps", target, *variables],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return done.stdout.splitlines()


def _wait_for(
    log: Path, pattern: str, proc: subprocess.Popen[bytes], seconds: float
) -> re.Match[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(), re.M)
        if found:
            return found
        assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not printed in {seconds} s: {log.read_text()}")


def _reread(file: IO[str]) -> str:
    """All a file holds so far, read again from its start."""
    file.seek(0)
    return file.read()


def test_make_run_prints_commands_that_work_as_printed(tmp_path: Path) -> None:
    """The Makefile's own hub command line on a free port; the printed subscribe command
    (curl) receives what the printed publish command (curl with ``skipfilter token --dev``)
    publishes, both run by ``bash -c`` exactly as printed, with nothing set beforehand."""
    port = free_port()
    lines = make_dry_run("run", f"PY={sys.executable}")
    hint = next(line for line in lines if "export PATH" in line)
    assert "skipfilter token --dev" in hint
    command = next(line for line in lines if "skipfilter.cli hub" in line)
    env = {**CLEAN_ENV, "HUB_ADDR": f"127.0.0.1:{port}", "HUB_HISTORY": str(tmp_path / "d.db")}
    log = tmp_path / "hub.log"
    with log.open("w") as out:
        hub = subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        subscribe = _wait_for(log, r"^skipfilter hub: subscribe: (curl .*)$", hub, 30)[1]
        publish = _wait_for(log, r"^skipfilter hub: publish: (curl .*)$", hub, 5)[1]
        assert f":{port}/" in subscribe and f":{port}/" in publish
        assert "token --dev" in publish
        with tempfile.TemporaryFile("w+") as received:
            subscriber = subprocess.Popen(
                ["bash", "-c", f"exec {subscribe}"], cwd=tmp_path, env=CLEAN_ENV,
                stdout=received, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 20
                while not _reread(received).startswith(":"):
                    assert time.monotonic() < deadline, "the subscribe command never connected"
                    time.sleep(0.05)
                published = subprocess.run(
                    ["bash", "-c", publish], cwd=tmp_path, env=CLEAN_ENV,
                    capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                assert published.returncode == 0, published.stderr
                assert published.stdout.startswith("urn:uuid:"), published.stdout
                deadline = time.monotonic() + 20
                while "data: hello" not in _reread(received):
                    assert time.monotonic() < deadline, received.read()
                    time.sleep(0.05)
                received.seek(0)
                assert f"id: {published.stdout.strip()}" in received.read()
            finally:
                subscriber.kill()
                subscriber.wait(10)
    finally:
        hub.terminate()
        hub.wait(15)


@pytest.mark.parametrize(
    "keys",
    [
        {"publisher_key": DEV_KEY},
        {"publisher_key": "x" * 40, "subscriber_key": DEV_KEY},
    ],
)
def test_the_development_key_is_refused_off_loopback(keys: RoleKeys) -> None:
    """Anyone reaching a hub that holds the public key could mint its tokens: a listener
    other machines reach is refused even with an identity (``public_urls``), loopback is not."""
    settings = HubSettings(public_urls=("https://hub.example",), demo=True, anonymous=True, **keys)
    for addr in ("0.0.0.0:3000", "192.0.2.7:3000", "[::]:3000", "hub.example:3000"):
        with pytest.raises(ValueError, match=r"development key .* is public"):
            preflight(settings, addr)
    for addr in ("127.0.0.1:3000", "[::1]:3000", "localhost:3000"):
        preflight(settings, addr)


def test_a_demo_hub_off_loopback_says_why_before_the_banner(tmp_path: Path) -> None:
    """``skipfilter hub --demo`` on every interface: exit 2, one line, nothing served."""
    done = subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", "hub", "--demo", "--addr",
         f"0.0.0.0:{free_port()}", "--public-urls", "https://hub.example",
         "--history", str(tmp_path / "d.db")],
        env=CLEAN_ENV, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "development key" in done.stderr and "subscribe at" not in done.stdout


def test_token_dev_matches_a_demo_hub_without_set_up(tmp_path: Path) -> None:
    """``skipfilter token --dev`` with no key anywhere signs with the demo's key."""
    done = subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", "token", "--dev"],
        env=CLEAN_ENV, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    claims = jwt.decode(
        done.stdout.strip(), DEV_KEY, algorithms=["HS256"], audience=f"http://localhost:3000{HUB}"
    )
    assert claims["iss"] == "https://localhost"


def test_make_run_tls_names_its_certificate_wherever_the_command_is_pasted() -> None:
    """``make run-tls`` passes ``.hub-demo-tls/cert.pem`` (relative); the printed commands
    name it absolutely, so they work from another shell's folder."""
    settings = HubSettings(demo=True, anonymous=True, publisher_key=DEV_KEY)
    audience = f"https://localhost:3443{HUB}"
    lines = demo_commands(settings, "https://localhost", audience, "", ".hub-demo-tls/cert.pem")
    cert = str(Path(".hub-demo-tls/cert.pem").resolve())
    assert all(f"curl --cacert {cert} " in line for line in lines)
    assert f"token --dev --aud {audience})" in lines[1]
