"""The 1.0 flags of ``skipfilter hub`` (issuers, resource identifier, public URLs,
compatibility), their validation, and ``skipfilter token --dev`` against a demo hub."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from skipfilter.hub import HubSettings
from skipfilter.hub.frontends.v1.access_tokens import DEV_ISSUER, mint_access_token
from skipfilter.hub.server.cli import add_arguments, settings_from_args
from skipfilter.hub.settings import DEMO_ISSUER, FALLBACK_BASE_URL
from tests.hub.hubtest import HUB, PUBLISHER_KEY, SUBSCRIBER_KEY, HubProcess


def parse(*argv: str, env: dict[str, str] | None = None) -> HubSettings:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return settings_from_args(parser.parse_args(list(argv)), env or {})


def test_help_lists_the_1_0_flags() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", "hub", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for flag in (
        "--issuer",
        "--issuers-file",
        "--resource-identifier",
        "--public-urls",
        "--protocol-version-compatibility",
    ):
        assert flag in out


def test_flags_and_environment_fill_the_settings() -> None:
    settings = parse(
        "--issuer",
        "https://a.example",
        "--publisher-jwt-key",
        PUBLISHER_KEY,
        "--anonymous",
        "--resource-identifier",
        f"https://hub.example.com{HUB}",
        "--public-urls",
        "https://hub.example.com,https://other.example.com",
    )
    assert settings.trusted_issuers == ("https://a.example",)
    assert settings.protocol_version_compatibility is None  # Mercure 1.0 is the default
    assert settings.cookie_name == "__Secure-mercure_access_token"
    assert settings.public_urls == ("https://hub.example.com", "https://other.example.com")
    assert settings.pattern_base_url == f"https://hub.example.com{HUB}"
    env = {
        "MERCURE_TRUSTED_ISSUERS": "https://b.example",
        "MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY,
        "MERCURE_PROTOCOL_VERSION_COMPATIBILITY": "8",
    }
    from_env = parse("--anonymous", env=env)
    assert from_env.trusted_issuers == ("https://b.example",)
    assert from_env.protocol_version_compatibility == 8
    assert parse("--anonymous").pattern_base_url == FALLBACK_BASE_URL


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--publisher-jwt-key", PUBLISHER_KEY], "need the issuer"),
        (["--protocol-version-compatibility", "7"], "protocol_version_compatibility 7"),
        (["--resource-identifier", "hub.example.com"], "absolute"),
        (["--public-urls", "hub.example.com"], "public URL"),
        (
            ["--issuer", "https://a", "--issuer", "https://b", "--publisher-jwt-key", "k" * 32],
            "a key belongs to one issuer",
        ),
        (["--issuer", "https://a", "--issuer", "https://a"], "more than once"),
    ],
)
def test_bad_configurations_are_refused_naming_the_problem(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse("--anonymous", *argv)


def test_an_issuers_file_gives_each_issuer_its_own_keys(tmp_path: Path) -> None:
    (tmp_path / "sub.key").write_text(SUBSCRIBER_KEY)
    path = tmp_path / "issuers.json"
    path.write_text(
        json.dumps(
            {
                "issuers": [
                    {"issuer": "https://a.example", "publisher_key": PUBLISHER_KEY},
                    {"issuer": "https://b.example", "subscriber_key": "@sub.key"},
                ]
            }
        )
    )
    settings = parse("--issuers-file", str(path))
    assert [i.issuer for i in settings.issuers] == ["https://a.example", "https://b.example"]
    assert settings.issuers[1].subscriber_key == SUBSCRIBER_KEY
    bad = tmp_path / "bad.json"
    for document, message in [
        ({"issuers": [{"issuer": "https://a"}]}, "neither publisher nor subscriber"),
        ({"issuers": [{"issuer": "https://a", "publisher_key": "k" * 32, "x": 1}]}, "'x'"),
        ({"issuers": []}, "expected"),
        ([{"issuer": "https://a", "publisher_alg": "none", "publisher_key": "k"}], "none"),
    ]:
        bad.write_text(json.dumps(document))
        with pytest.raises(ValueError, match=message):
            parse("--anonymous", "--issuers-file", str(bad))


def test_two_issuers_each_verified_with_their_own_keys(tmp_path: Path) -> None:
    """Each issuer's tokens are checked with its keys only: A's publisher token signed with
    B's key, or naming B, is refused (a real hub process, Mercure 1.0 only)."""
    other_key = "another-publisher-secret-0123456789abcdef"
    path = tmp_path / "issuers.json"
    path.write_text(
        json.dumps(
            [
                {"issuer": "https://a.example", "publisher_key": PUBLISHER_KEY},
                {"issuer": "https://b.example", "publisher_key": other_key},
            ]
        )
    )
    hub = HubProcess("--anonymous", "--issuers-file", str(path), compatibility=False)
    try:
        audience = hub.url + HUB

        def publish(issuer: str, key: str) -> int:
            token = mint_access_token(issuer, audience, key, publish=[("*", "exact")])
            response = httpx.post(
                hub.url + HUB,
                data={"topic": "https://example.com/1"},
                headers={"Authorization": f"Bearer {token}"},
            )
            return response.status_code

        assert publish("https://a.example", PUBLISHER_KEY) == 200
        assert publish("https://b.example", other_key) == 200
        assert publish("https://a.example", other_key) == 401
        assert publish("https://b.example", PUBLISHER_KEY) == 401
        assert publish("https://c.example", PUBLISHER_KEY) == 401
    finally:
        hub.proc.terminate()
        hub.proc.wait(10)


def test_token_dev_is_trusted_by_a_demo_hub(tmp_path: Path) -> None:
    """``skipfilter token --dev`` mints for the issuer a ``--demo`` hub (``make run``)
    trusts without issuer flags, signed with ``$MERCURE_PUBLISHER_JWT_KEY``."""
    assert DEV_ISSUER == DEMO_ISSUER
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    hub = HubProcess(
        "--demo", "--history", str(tmp_path / "demo.sqlite3"), env=env, compatibility=False
    )
    try:
        host = f"localhost:{hub.port}"
        token = subprocess.run(
            [
                sys.executable,
                "-m",
                "skipfilter.cli",
                "token",
                "--dev",
                "--aud",
                f"http://{host}{HUB}",
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**env, "PATH": "/usr/bin:/bin"},
        ).stdout.strip()
        response = httpx.post(
            hub.url + HUB,
            data={"topic": "https://example.com/1", "data": "x"},
            headers={"Authorization": f"Bearer {token}", "Host": host},
        )
        assert response.status_code == 200, response.text
    finally:
        hub.proc.terminate()
        hub.proc.wait(10)


# -- what the hub says before it listens -------------------------------------------------

SHORT = "short"
KEY_ENV = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["--anonymous", "--issuer", "https://x.example"], {}, "MERCURE_PUBLISHER_JWT_KEY"),
        (["--anonymous", "--transport", "localhost:6379"], {}, "use redis://HOST:PORT/DB"),
        (["--anonymous", "--history", "/nonexistent/dir/h.sqlite3"], {}, "--history"),
        (
            ["--anonymous", "--issuer", "https://x.example", "--addr", "0.0.0.0:1"],
            KEY_ENV,
            "--public-urls https://HUB.EXAMPLE",
        ),
        (
            ["--anonymous", "--issuer", "https://x.example"],
            {"MERCURE_PUBLISHER_JWT_KEY": SHORT},
            "publisher_key: an HMAC secret needs at least 32 bytes",
        ),
    ],
)
def test_start_up_mistakes_are_one_line_with_the_fix_before_the_banner(
    argv: list[str], env: dict[str, str], says: str, tmp_path: Path
) -> None:
    """Exit 2, one line naming the mistake and its fix, nothing listened on, no traceback."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MERCURE_")}
    found = subprocess.run(
        [sys.executable, "-m", "skipfilter.cli", "hub", "--addr", "127.0.0.1:1", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env={**clean, **env},
        cwd=tmp_path,
    )
    assert found.returncode == 2, found.stdout + found.stderr
    assert found.stdout == ""  # no banner
    lines = found.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("skipfilter hub: "), found.stderr
    assert says in lines[0]


def test_a_loopback_hub_knows_who_it_is_whatever_the_host_and_says_so(tmp_path: Path) -> None:
    """Without --public-urls or --resource-identifier, a token minted for another hub that
    shares the issuer and keys is not accepted by naming that hub in Host, and neither the
    challenge nor the metadata echo that host: the hub is http://localhost:PORT (its address
    answers as itself). The start says which identity it took, and that subscriber tokens
    will not be read."""
    issuer = "https://issuer.example"
    hub = HubProcess(
        "--anonymous",
        "--issuer",
        issuer,
        "--history",
        str(tmp_path / "h.sqlite3"),
        env=KEY_ENV,
        compatibility=False,
    )
    try:
        other = "hub-b.example:3000"
        own = f"http://localhost:{hub.port}{HUB}"

        def token(audience: str) -> str:
            return mint_access_token(issuer, audience, PUBLISHER_KEY, publish=[("*", "exact")])

        stolen = token(f"http://{other}{HUB}")
        form = {"topic": "https://example.com/1", "data": "x"}
        with httpx.Client(base_url=hub.url, timeout=10) as client:
            replayed = client.post(
                HUB, data=form, headers={"Authorization": f"Bearer {stolen}", "Host": other}
            )
            assert replayed.status_code == 401, replayed.text
            challenge = replayed.headers["www-authenticate"]
            assert other not in challenge and f"localhost:{hub.port}" in challenge
            metadata = client.get(
                f"/.well-known/oauth-protected-resource{HUB}", headers={"Host": other}
            )
            assert metadata.status_code == 200 and metadata.json()["resource"] == own
            for name in (f"localhost:{hub.port}", f"127.0.0.1:{hub.port}"):
                mine = token(f"http://{name}{HUB}")
                answer = client.post(
                    HUB, data=form, headers={"Authorization": f"Bearer {mine}", "Host": name}
                )
                assert answer.status_code == 200, answer.text
                refused = client.post(
                    HUB, data=form, headers={"Authorization": f"Bearer {stolen}", "Host": name}
                )
                assert refused.status_code == 401
            for host in (other, "127.0.0.1", "x"):  # any other Host: localhost's identity
                answer = client.post(
                    HUB,
                    data=form,
                    headers={"Authorization": f"Bearer {token(own)}", "Host": host},
                )
                assert answer.status_code == 200, (host, answer.text)
        output = hub.output()
        assert f"identity {own}" in output
        assert "subscriber tokens will not be read" in output
        assert "MERCURE_SUBSCRIBER_JWT_KEY" in output
    finally:
        hub.proc.terminate()
        hub.proc.wait(10)
    with_keys = HubProcess(
        "--anonymous",
        "--issuer",
        issuer,
        "--public-urls",
        "http://hub-b.example:3000",
        "--history",
        str(tmp_path / "k.sqlite3"),
        env={**KEY_ENV, "MERCURE_SUBSCRIBER_JWT_KEY": SUBSCRIBER_KEY},
        compatibility=False,
    )
    try:
        output = with_keys.output()
        assert "subscriber tokens will not be read" not in output
        assert "identity" not in output  # told who it is
    finally:
        with_keys.proc.terminate()
        with_keys.proc.wait(10)
