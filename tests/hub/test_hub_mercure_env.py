"""A Go Mercure hub user's environment (SERVER_NAME, MERCURE_EXTRA_DIRECTIVES, the keys, as a
Docker env file sets them) starts this hub with those settings, and what it cannot honour is
one line with exit 2 before anything listens. Hubs here are real processes given nothing
but their environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from tests.hub.hubtest import HUB, PUBLISHER_KEY, SUBSCRIBER_KEY, free_port
from tests.hub.keytest import KeyPair, key_pair

ISSUER = "https://issuer.example"
SUBS = HUB + "/subscriptions"
TOPIC = "https://example.com/books/1"
#: The directives the issue names, as a Mercure user's env file spells them.
DIRECTIVES = "anonymous\ncors_origins *\npublish_origins *\nsubscriptions\nheartbeat 1s\n"
DIRECTIVES += "write_timeout 0s"


class EnvHub:
    """``skipfilter hub`` with no flag at all: only the environment (and a HOME of its own)."""

    def __init__(
        self, tmp_path: Path, env: dict[str, str], *flags: str, port: int | None = None
    ) -> None:
        """``port``: where it should listen (then ``env`` says so); else SERVER_NAME does."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (tmp_path / f"hub-{self.port}.log").open("w+")
        base = {k: os.environ[k] for k in ("PATH", "PYTHONPATH") if k in os.environ}
        environment = env if port else {"SERVER_NAME": f"127.0.0.1:{self.port}", **env}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skipfilter.cli", "hub", "--log-level", "warning", *flags],
            env={**base, "HOME": str(tmp_path), **environment},
            cwd=tmp_path,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(self.url + "/livez", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                said = self.output()
                self.stop()
                raise AssertionError(f"hub did not start: {said}")
            time.sleep(0.1)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def audience(self) -> str:
        return self.url + HUB

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


@pytest.fixture
def hubs(tmp_path: Path) -> Iterator[list[EnvHub]]:
    started: list[EnvHub] = []
    yield started
    for hub in started:
        hub.stop()


def refused(tmp_path: Path, env: dict[str, str], *flags: str) -> str:
    """Run the hub expecting a refusal: exit 2 within seconds, no banner; its one line."""
    base = {k: os.environ[k] for k in ("PATH", "PYTHONPATH") if k in os.environ}
    done = subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", "hub", *flags],
        env={**base, "HOME": str(tmp_path), **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "", done.stdout  # nothing said before the refusal: no banner
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skipfilter hub: "), done.stderr
    return lines[0]


def _raw_lines(
    hub: EnvHub, client: httpx.Client, params: dict[str, str], count: int
) -> list[tuple[float, str]]:
    """(seconds since the response began, line) of the first ``count`` lines of a stream."""
    found = []
    with client.stream("GET", HUB, params=params) as response:
        assert response.status_code == 200, response.read()
        start = time.monotonic()
        for line in response.iter_lines():
            found.append((time.monotonic() - start, line))
            if len(found) == count:
                break
    return found


def test_a_mercure_env_file_starts_the_hub_with_each_of_its_settings(
    tmp_path: Path, hubs: list[EnvHub]
) -> None:
    hub = EnvHub(
        tmp_path,
        {
            "MERCURE_EXTRA_DIRECTIVES": DIRECTIVES,
            "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
            "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY,
            "MERCURE_TRUSTED_ISSUERS": ISSUER,
        },
    )
    hubs.append(hub)
    assert f"http://127.0.0.1:{hub.port}" in hub.output()  # SERVER_NAME is where it listens
    timeout = httpx.Timeout(5, read=10)
    with httpx.Client(base_url=hub.url, timeout=timeout) as client:
        # cors_origins *: any page may read the hub (and, being '*', without credentials)
        origin = {"Origin": "https://app.example"}
        metadata = client.get(f"/.well-known/oauth-protected-resource{HUB}", headers=origin)
        assert metadata.headers.get("access-control-allow-origin") == "*"
        assert metadata.json().get("mercure_subscriptions") is True  # subscriptions
        # anonymous, heartbeat 1s: a subscriber without a token gets a stream, and on it
        # heartbeat comments about a second apart
        lines = _raw_lines(hub, client, {"match": TOPIC}, 3)
        beats = [at for at, line in lines if line.startswith(":")]
        assert len(beats) >= 2, lines
        assert 0.4 < beats[1] - beats[0] < 3.0, lines
        # subscriptions: a subscriber allowed to see them is told of another one
        watcher_token = mint_access_token(
            ISSUER, hub.audience(), SUBSCRIBER_KEY, subscribe=[(SUBS + "/*", "urlpattern")]
        )
        watcher = client.stream(
            "GET",
            HUB,
            params={"match_urlpattern": SUBS + "/*"},
            headers={"Authorization": f"Bearer {watcher_token}"},
        )
        with watcher as response, httpx.Client(base_url=hub.url, timeout=timeout) as other:
            assert response.status_code == 200
            events, seen = EventSource(response).iter_sse(), []
            with other.stream("GET", HUB, params={"match": TOPIC}) as second:
                assert second.status_code == 200
                for event in events:
                    seen.append(json.loads(event.data))
                    if any(d.get("match") == TOPIC for d in seen):
                        break
            assert any(d.get("match") == TOPIC and d["active"] for d in seen), seen
        # publish_origins *: a publisher's cookie is honoured from any page's origin
        token = mint_access_token(ISSUER, hub.audience(), PUBLISHER_KEY, publish=[(TOPIC, "exact")])
        cookies = {"__Secure-mercure_access_token": token}
        form = urlencode({"topic": TOPIC, "data": "hello"}).encode()
        headers = {
            "Origin": "https://elsewhere.example",
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
        }
        assert client.post(HUB, content=form, headers=headers).status_code == 200


def test_without_publish_origins_a_cookie_from_another_origin_is_refused(
    tmp_path: Path, hubs: list[EnvHub]
) -> None:
    """The counterpart of ``publish_origins *`` above: the directive is what allowed it."""
    hub = EnvHub(
        tmp_path,
        {
            "MERCURE_EXTRA_DIRECTIVES": "anonymous",
            "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
            "MERCURE_TRUSTED_ISSUERS": ISSUER,
        },
    )
    hubs.append(hub)
    token = mint_access_token(ISSUER, hub.audience(), PUBLISHER_KEY, publish=[(TOPIC, "exact")])
    headers = {
        "Origin": "https://elsewhere.example",
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"__Secure-mercure_access_token={token}",
    }
    form = urlencode({"topic": TOPIC, "data": "hello"}).encode()
    response = httpx.post(hub.url + HUB, content=form, headers=headers, timeout=5)
    assert response.status_code == 400, response.text
    assert "not allowed to publish with a cookie" in response.text


def test_write_timeout_ends_streams_and_max_request_body_size_bounds_publishes(
    tmp_path: Path, hubs: list[EnvHub]
) -> None:
    hub = EnvHub(
        tmp_path,
        {
            "MERCURE_EXTRA_DIRECTIVES": "anonymous\nwrite_timeout 1500ms\n"
            "max_request_body_size 1KB  # Go's humanize sizes: 1,000 bytes",
            "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
            "MERCURE_TRUSTED_ISSUERS": ISSUER,
        },
    )
    hubs.append(hub)
    with httpx.Client(base_url=hub.url, timeout=httpx.Timeout(5, read=10)) as client:
        start = time.monotonic()
        with client.stream("GET", HUB, params={"match": TOPIC}) as response:
            assert response.status_code == 200
            for _ in response.iter_lines():
                pass
        assert 1.0 < time.monotonic() - start < 6.0  # ended by the hub at 1.5 s
    token = mint_access_token(ISSUER, hub.audience(), PUBLISHER_KEY, publish=[(TOPIC, "exact")])
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    with httpx.Client(base_url=hub.url, timeout=5) as client:

        def publish(size: int) -> httpx.Response:
            body = urlencode({"topic": TOPIC, "data": "x" * size}).encode()
            return client.post(HUB, content=body, headers=headers)

        assert publish(800).status_code == 200
        too_big = publish(1100)
        assert too_big.status_code == 413 and "1000 bytes" in too_big.text, too_big.text


def test_a_file_jwk_set_checks_the_issuers_tokens(tmp_path: Path, hubs: list[EnvHub]) -> None:
    """``jwks_uri file://...`` in an ``issuer`` block (the Go hub's keys mounted as a file)."""
    keys, stranger = key_pair("RS256"), key_pair("RS256")
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [keys.jwk("k1", alg="RS256")]}))
    directives = f"""anonymous
issuer {ISSUER} {{
    publisher {{
        jwks_uri file://{path}
    }}
}}"""
    hub = EnvHub(tmp_path, {"MERCURE_EXTRA_DIRECTIVES": directives})
    hubs.append(hub)
    form = urlencode({"topic": TOPIC, "data": "hello"}).encode()

    def publish(token: str) -> httpx.Response:
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        return httpx.post(hub.url + HUB, content=form, headers=headers, timeout=5)

    def signed(by: KeyPair) -> str:
        grant = [(TOPIC, "exact")]
        return mint_access_token(
            ISSUER, hub.audience(), by.private_pem, publish=grant, algorithm="RS256", kid="k1"
        )

    accepted = publish(signed(keys))
    assert accepted.status_code == 200, accepted.text
    assert publish(signed(stranger)).status_code == 401


def test_a_file_jwk_set_that_cannot_be_read_is_refused_at_start(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    directives = (
        f"anonymous\nissuer {ISSUER} {{\n publisher {{\n  jwks_uri file://{missing}\n }}\n}}"
    )
    env = {"MERCURE_EXTRA_DIRECTIVES": directives, "SERVER_NAME": f"127.0.0.1:{free_port()}"}
    line = refused(tmp_path, env)
    assert str(missing) in line, line


@pytest.mark.parametrize(
    ("directives", "named"),
    [
        ("anonymous\nfrobnicate 3", "line 2: frobnicate: not a directive this hub has"),
        ("anonymous\ntransport bolt {\n  path /data/mercure.db\n}", "transport bolt"),
        ("anonymous\nheartbeat soon", "heartbeat 'soon' is not a duration"),
        ("anonymous\nmax_request_body_size 0", "max_request_body_size 0"),
        ("anonymous\nprotocol_version_compatibility 7", "protocol_version_compatibility 7"),
        ("anonymous extra", "anonymous takes no argument"),
        ('anonymous\ncors_origins "https://a.example', "a quote is never closed"),
    ],
)
def test_what_this_hub_does_not_have_is_one_line_naming_it_with_exit_2(
    tmp_path: Path, directives: str, named: str
) -> None:
    line = refused(tmp_path, {"MERCURE_EXTRA_DIRECTIVES": directives})
    assert named in line, line
    assert "MERCURE_EXTRA_DIRECTIVES" in line


def test_skipfilter_addr_is_the_listen_address_and_a_flag_wins(
    tmp_path: Path, hubs: list[EnvHub]
) -> None:
    ports = [free_port() for _ in range(4)]
    env = {"MERCURE_EXTRA_DIRECTIVES": "anonymous", "SERVER_NAME": f"127.0.0.1:{ports[1]}"}
    # SKIPFILTER_ADDR (this hub's own variable) wins over SERVER_NAME
    hubs.append(
        EnvHub(tmp_path, {**env, "SKIPFILTER_ADDR": f"127.0.0.1:{ports[0]}"}, port=ports[0])
    )
    # and --addr over both
    env["SKIPFILTER_ADDR"] = f"127.0.0.1:{ports[3]}"
    hubs.append(EnvHub(tmp_path, env, "--addr", f"127.0.0.1:{ports[2]}", port=ports[2]))
    for unused in (ports[1], ports[3]):
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{unused}/livez", timeout=1)


# -- reading the variables (no hub) ---------------------------------------------------


def test_server_name_is_read_as_a_caddy_site_address() -> None:
    from skipfilter.hub.server.mercure_env import SiteAddress  # here: the hub tests run on old code

    assert SiteAddress.parse(":80").listen(tls=False) == "0.0.0.0:80"
    assert SiteAddress.parse("localhost").listen(tls=False) == "localhost:80"
    assert SiteAddress.parse("localhost").listen(tls=True) == "localhost:443"
    assert SiteAddress.parse("127.0.0.1:3914").listen(tls=False) == "127.0.0.1:3914"
    assert SiteAddress.parse("[::1]:3914").listen(tls=False) == "[::1]:3914"
    site = SiteAddress.parse("hub.example.com")
    assert site.listen(tls=True) == "0.0.0.0:443"  # Caddy binds every interface for a name
    assert site.public_url(tls=True) == "https://hub.example.com"
    assert SiteAddress.parse("http://hub.example.com:8080").public_url(tls=True) == (
        "http://hub.example.com:8080"
    )
    assert SiteAddress.parse("127.0.0.1:3914").public_url(tls=False) is None  # loopback
    with pytest.raises(ValueError, match="obtains no certificate"):
        SiteAddress.parse("https://hub.example.com").listen(tls=False)
    for bad, why in [
        ("ftp://x", "scheme"),
        ("x.example/path", "path"),
        ("*.example.com", "wildcard"),
        ("x:99999", "port"),
    ]:
        with pytest.raises(ValueError, match=why):
            SiteAddress.parse(bad)


def test_directives_follow_caddyfile_lexing() -> None:
    from skipfilter.hub.server.mercure_env import parse_directives, read_environment

    text = (
        '# a comment line\ncors_origins "https://a.example" `https://b.example` # trailing\n'
        'cookie_name "my#cookie"\nissuer https://i.example {\n  authorization_server\n}\n'
    )
    found = parse_directives(text)
    assert [(d.name, d.args) for d in found] == [
        ("cors_origins", ("https://a.example", "https://b.example")),
        ("cookie_name", ("my#cookie",)),
        ("issuer", ("https://i.example",)),
    ]
    assert [(d.name, d.line) for d in found[2].block] == [("authorization_server", 5)]
    env = read_environment(
        {"MERCURE_EXTRA_DIRECTIVES": "subscriber_jwt {env.SECRET} HS384", "SECRET": "s3"}
    )
    assert env.env == {"MERCURE_SUBSCRIBER_JWT_KEY": "s3", "MERCURE_SUBSCRIBER_JWT_ALG": "HS384"}


@given(st.integers(0, 10**6), st.sampled_from(["", "b", "kb", "KiB", "MB", "mib", "G"]))
def test_sizes_read_as_go_humanize_reads_them(number: int, unit: str) -> None:
    from skipfilter.hub.server.mercure_env import parse_size

    scale = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "g": 10**9}
    assert parse_size(f"{number}{unit}") == number * scale[unit.lower()]
    assert parse_size(f"{number} {unit}".strip()) == number * scale[unit.lower()]
