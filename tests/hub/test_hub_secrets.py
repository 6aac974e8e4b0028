"""No transport secret in any answer, log line or banner of a real hub process: the Redis
password (and a Sentinel set's two) are hidden wherever the URL or a Redis error is shown,
with the host and port kept; a URL whose password cannot be read is refused in one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hub.hubtest import HUB, PUBLISHER_KEY, free_port, pub_token
from tests.hub.redis_server import RedisServer, redis_available

needs_redis = pytest.mark.skipif(not redis_available(), reason="redis-server is not installed")

PASSWORD = "Kq7wS3cr3tZ9"
SENTINEL_PASSWORD = "Vx4sEnT1nelP8"
SECRETS = (PASSWORD, SENTINEL_PASSWORD)
TOPIC = "https://example.com/books/1"


@contextmanager
def _hub(transport: str) -> Iterator[tuple[str, str, Callable[[], str]]]:
    """A hub process on ``transport`` (with a metrics address): its URL, its metrics URL, and
    what it printed (stdout and stderr), read after SIGTERM."""
    port, metrics = free_port(), free_port()
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous"]
    command += ["--protocol-version-compatibility", "8", "--log-level", "info"]
    command += ["--addr", f"127.0.0.1:{port}", "--metrics-addr", f"127.0.0.1:{metrics}"]
    command += ["--transport", transport]
    with tempfile.TemporaryFile(mode="w+") as log:
        node = subprocess.Popen(
            command,
            env={**os.environ, "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )

        def output() -> str:
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
                node.wait(20)
            log.seek(0)
            return log.read()

        try:
            yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{metrics}/metrics", output
        finally:
            if node.poll() is None:
                node.kill()
                node.wait(10)


def _until(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _says(url: str, path: str, status: int, words: str = "") -> bool:
    try:
        answer = httpx.get(url + path, timeout=5)
    except httpx.TransportError:
        return False
    return answer.status_code == status and words in answer.text


def _shown(answer: httpx.Response) -> str:
    """Everything a client reads of an answer: status, headers, body."""
    headers = "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
    return f"{answer.status_code}\n{headers}\n{answer.text}"


def _surfaces(url: str, metrics_url: str) -> dict[str, httpx.Response]:
    """The answers of every surface a client reaches: the probes, a publish, a subscription
    (one resuming: it needs the transport), the metrics."""
    with httpx.Client(base_url=url, timeout=15) as client:
        answers = {p: client.get(p) for p in ("/livez", "/readyz", "/healthz")}
        answers["publish"] = client.post(
            HUB, data={"topic": TOPIC}, headers={"Authorization": f"Bearer {pub_token()}"}
        )
        with client.stream(
            "GET", HUB, params={"topic": TOPIC}, headers={"Last-Event-ID": "resume-here"}
        ) as subscribed:
            if subscribed.status_code != 200:
                subscribed.read()
            answers["subscribe"] = subscribed
    answers["metrics"] = httpx.get(metrics_url, timeout=15)
    return answers


def _assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        for form in (secret, secret[:6], secret[-6:]):
            assert form not in text, f"{where} shows the password: {text[:2000]}"


def _closed_port() -> int:
    port = free_port()
    with socket.socket() as probe:  # nothing listens there
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return port


@pytest.mark.parametrize("kind", ["redis", "sentinel"])
def test_no_password_in_any_answer_log_or_banner_while_redis_is_down(kind: str) -> None:
    if kind == "redis":
        where = f"127.0.0.1:{_closed_port()}"
        transport = f"redis://:{PASSWORD}@{where}/0"
        banner = f"transport redis://:***@{where}/0"
    else:
        where = f"127.0.0.1:{_closed_port()},127.0.0.1:{_closed_port()}"
        transport = (
            f"redis+sentinel://{PASSWORD}@{where}/hub/0?sentinel_password={SENTINEL_PASSWORD}"
        )
        banner = f"transport redis+sentinel://:***@{where}/hub/0?sentinel_password=***"
    with _hub(transport) as (url, metrics_url, output):
        _until(lambda: _says(url, "/readyz", 503, "waiting for"), 30, "never said it waits")
        answers = _surfaces(url, metrics_url)
        printed = output()
    for name, answer in answers.items():
        _assert_no_secret(name, _shown(answer))
        if name != "/livez":
            assert answer.status_code == 503, (name, answer.text)
    assert where in answers["/readyz"].text  # operators still see what it waits for
    assert "waiting for its transport" in answers["publish"].text
    _assert_no_secret("the process's output", printed)
    assert banner in printed, printed
    assert "cannot start yet" in printed and "Traceback" not in printed, printed


@needs_redis
def test_no_password_in_any_answer_or_log_once_a_serving_hub_loses_redis(
    tmp_path: Path,
) -> None:
    """Redis requires the password (the hub still uses it), then goes away while serving:
    the 503s and errors of the serving paths (lanes, pools, tail) hide it too."""
    with RedisServer(tmp_path) as server:
        with redis.Redis(port=server.port, socket_timeout=10) as admin:
            admin.config_set("requirepass", PASSWORD)
        transport = f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"
        with _hub(transport) as (url, metrics_url, output):
            _until(lambda: _says(url, "/readyz", 200), 30, "not ready with the password")
            published = httpx.post(
                url + HUB,
                data={"topic": TOPIC, "id": "stored"},
                headers={"Authorization": f"Bearer {pub_token()}"},
                timeout=15,
            )
            assert (published.status_code, published.text) == (200, "stored")
            server.stop()
            answers = _surfaces(url, metrics_url)
            printed = output()
    for name, answer in answers.items():
        _assert_no_secret(name, _shown(answer))
    assert answers["publish"].status_code == 503, answers["publish"].text
    assert f"127.0.0.1:{server.port}" in answers["publish"].text  # says where
    assert answers["subscribe"].status_code == 503, answers["subscribe"].text
    _assert_no_secret("the process's output", printed)
    assert "not stored" in printed, printed  # the log said why, without the password


@pytest.mark.parametrize("password", ["Kq7w/S3cr3tZ9", "Kq7w?S3cr3tZ9", "Kq7w#S3cr3tZ9"])
def test_a_password_the_url_cannot_hold_is_refused_in_one_line_before_listening(
    password: str,
) -> None:
    """Unencoded, part of such a password is read as a port or a path: the hub refuses the
    URL (as any configuration mistake: rc 2, one line, before it listens), quoting no part
    of the password and saying how to write it."""
    port = free_port()
    command = [sys.executable, "-m", "skipfilter.cli", "hub", "--anonymous"]
    command += ["--protocol-version-compatibility", "8", "--addr", f"127.0.0.1:{port}"]
    command += ["--transport", f"redis://:{password}@127.0.0.1:6379/0"]
    done = subprocess.run(
        command,
        env={**os.environ, "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert said.count("\n") == 1 and said.startswith("skipfilter hub: --transport"), said
    assert "percent-encode" in said and "127.0.0.1:6379" in said, said
    for part in ("Kq7w", "S3cr3tZ9"):
        assert part not in said, said


# -- the redaction itself, against what a URL can hold -------------------------------------

_PASSWORD_CHARS = st.characters(codec="utf-8", exclude_characters="*\x00")


@settings(max_examples=300, deadline=None)
@given(secret=st.text(_PASSWORD_CHARS, min_size=1, max_size=24), user=st.booleans())
def test_a_url_is_shown_without_its_password_whatever_it_holds(secret: str, user: bool) -> None:
    """Whatever the password holds (percent-encoded or not), the URL as shown, the target's
    url and repr, and a refusal's words hold no trace of it; host and port stay."""
    from skipfilter.hub.transports.redis.url import parse
    from skipfilter.hub.transports.shown import redacted

    password = f"Zq{secret}Zq"  # never a substring of the rest of the URL
    credentials = f"{'alice' if user else ''}:{{}}@"
    for written in (password, quote(password, safe="")):
        url = f"redis://{credentials.format(written)}127.0.0.1:6379/0"
        shown = redacted(url)
        assert password not in shown and written not in shown, shown
        assert shown.endswith("127.0.0.1:6379/0"), shown
        try:
            target = parse(url)
        except ValueError as exc:
            assert written not in str(exc) and password not in str(exc), exc
            assert written != quote(password, safe=""), exc  # encoded: always accepted
            continue
        for text in (target.url, repr(target)):
            assert password not in text and written not in text, text
        if written != password:
            assert target.connect_url == url  # what redis-py reads the password from
        sentinel = parse(f"redis+sentinel://{credentials.format(written)}h:1,h:2/svc")
        assert sentinel.password == password, "the sentinel URL lost its password"
        assert password not in repr(sentinel) and written not in sentinel.url


_BAD_SENTINELS = ["h", "h:", "h:x", "h:0", "h:65536", ":26379", "h:-1", "[::1]", "h: 1"]


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(_PASSWORD_CHARS, min_size=1, max_size=24),
    user=st.booleans(),
    bad=st.sampled_from(_BAD_SENTINELS),
    first=st.booleans(),
)
def test_a_bad_sentinel_address_is_refused_without_quoting_a_password(
    secret: str, user: bool, bad: str, first: bool
) -> None:
    """A sentinel that is not HOST:PORT: the refusal names it, and holds no trace of the
    data servers' password nor of the sentinels' own (``?sentinel_password=``)."""
    from skipfilter.hub.transports.redis.url import parse

    password = f"Zq{secret}Zq"
    sentinel_password = f"Yx{secret}Yx"
    credentials = f"{'alice' if user else ''}:{{}}@"
    hosts = f"{bad},h:26379" if first else f"h:26379,{bad}"
    for written in (password, quote(password, safe="")):
        url = (
            f"redis+sentinel://{credentials.format(written)}{hosts}/svc/0"
            f"?sentinel_password={quote(sentinel_password, safe='')}"
        )
        with pytest.raises(ValueError) as refused:
            parse(url)
        said = str(refused.value)
        for secret_form in (password, written, sentinel_password, quote(sentinel_password)):
            assert secret_form not in said, said
        if written != password:  # encoded, the URL is read up to its sentinels
            assert f"sentinel {bad!r} is not HOST:PORT" in said, said


def test_query_secrets_are_hidden_and_the_rest_kept() -> None:
    from skipfilter.hub.transports.redis.url import parse
    from skipfilter.hub.transports.shown import redacted

    url = "redis+sentinel://u:p%40ss@h:1,h:2/svc/0?sentinel_password=s3&replicas=2&password=x"
    assert redacted(url) == (
        "redis+sentinel://u:***@h:1,h:2/svc/0?sentinel_password=***&replicas=2&password=***"
    )
    assert redacted("redis://h:1/0?prefix=a@b") == "redis://h:1/0?prefix=a@b"
    assert redacted("redis://:pa/ss@h:1/0") == "redis://***@h:1/0"
    assert redacted("redis://u@h:1/0") == "redis://:***@h:1/0"  # maybe a bare password
    target = parse(f"redis://:{PASSWORD}@h:1/0")
    said = f"Error connecting to redis://:{quote(PASSWORD)}@h:1/0: AUTH {PASSWORD} failed"
    assert target.scrub(said) == "Error connecting to redis://***@h:1/0: AUTH *** failed"
