"""``skipfilter hub`` and ``skipfilter token`` flags as people expect them: Mercure's durations,
grouped help with defaults, refusals that name the flag, and where the history is kept."""

from __future__ import annotations

import argparse
import base64
import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skipfilter.hub.server.cli import add_arguments, settings_from_args
from skipfilter.hub.server.flags import parse_duration, show_duration
from tests.hub.cli_run import refusal, skipfilter
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, free_port, pub_token

SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}


@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(SECONDS))), min_size=1, max_size=4
    ),
    st.booleans(),
)
def test_a_go_duration_is_the_sum_of_its_parts(
    parts: list[tuple[int, str]], negative: bool
) -> None:
    text = ("-" if negative else "") + "".join(f"{n}{unit}" for n, unit in parts)
    expected = sum(n * SECONDS[unit] for n, unit in parts) * (-1 if negative else 1)
    assert parse_duration(text) == pytest.approx(expected)


@given(st.integers(0, 10**7))
def test_a_shown_duration_reads_back(seconds: int) -> None:
    assert parse_duration(show_duration(float(seconds))) == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("40s", 40), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("1.5h", 5400), ("7", 7)],
)
def test_every_duration_flag_takes_mercure_durations_and_plain_seconds(
    text: str, seconds: float
) -> None:
    """Was: --heartbeat 40s dumped the usage (the flags took a float of seconds)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = ["--heartbeat", "--dispatch-timeout", "--write-timeout", "--header-timeout"]
    flags += ["--body-timeout", "--node-ttl", "--shutdown-timeout", "--jwks-refresh"]
    argv = [part for flag in flags for part in (flag, text)]
    args = parser.parse_args(["--anonymous", *argv])
    for flag in flags:
        assert getattr(args, flag[2:].replace("-", "_")) == pytest.approx(seconds), flag
    settings = settings_from_args(args, {})
    assert settings.heartbeat == pytest.approx(seconds)
    assert settings.write_timeout == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--heartbeat", "40x"], "argument --heartbeat: '40x' is not a duration"),
        (["--heartbeat=-1s"], "argument --heartbeat: '-1s': must be at least 0s"),
        (["--write-timeout", "1h-"], "argument --write-timeout"),
        (["--shutdown-timeout", "0"], "argument --shutdown-timeout: '0': must be more than 0"),
    ],
)
def test_a_bad_duration_is_one_line_naming_the_flag(argv: list[str], says: str) -> None:
    line = refusal(skipfilter("hub", "--anonymous", *argv))
    assert says in line and "--help" in line


def test_a_heartbeat_in_go_syntax_is_kept(processes: list[HubProcess]) -> None:
    """A stream of a hub run with --heartbeat 300ms gets heartbeats at that pace."""
    hub = HubProcess("--anonymous", "--history", ":memory:", "--heartbeat", "300ms")
    processes.append(hub)
    comments = 0
    with (
        httpx.Client(base_url=hub.url, timeout=10) as client,
        client.stream("GET", HUB, params={"topic": "https://example.com/1"}) as response,
    ):
        started = time.monotonic()
        for line in response.iter_lines():
            comments += line.startswith(":")
            if comments == 3:
                break
    assert time.monotonic() - started < 5  # the default, 40 s, would give none


def test_hub_help_groups_its_flags_and_shows_their_defaults() -> None:
    """Was: 40 flags in one list, most defaults hidden."""
    found = skipfilter("hub", "--help")
    assert found.returncode == 0, found.stderr
    out = found.stdout
    for group in ("listening:", "tokens and identity:", "history and transport:", "timeouts:"):
        assert f"\n{group}\n" in out, group
    addr = out.index("\n  --addr")
    assert out.index("\nlistening:") < addr < out.index("\ntokens and identity:")
    flat = " ".join(out.split())
    for shown in (
        "(default 127.0.0.1:3000)",
        "time between heartbeats (default 40s)",
        "(default 10m)",
        "replay (default 100000)",
        "(default 4096)",
    ):
        assert shown in flat, shown
    assert "(default None)" not in flat and "(default False)" not in flat
    assert "``" not in out  # no reStructuredText


def _claims(token: str) -> dict[str, object]:
    body = token.split(".")[1]
    claims: dict[str, object] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return claims


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--ttl", "-5"], "argument --ttl: '-5': must be more than 0"),
        (["--ttl", "0"], "argument --ttl: '0': must be more than 0"),
        (["--ttl", "soon"], "argument --ttl: 'soon' is not a duration"),
        (["--payload", "notjson"], "--payload is not JSON"),
        (["--payload", "[1]"], "--payload must be a JSON object, got list"),
    ],
)
def test_token_refusals_name_the_flag(argv: list[str], says: str) -> None:
    """Was: --ttl -5 printed an expired token, exit 0; --payload notjson 'Expecting value'."""
    line = refusal(skipfilter("token", "--dev", *argv), prefix="skipfilter token: ")
    assert says in line


def test_token_ttl_takes_durations() -> None:
    found = skipfilter("token", "--dev", "--ttl", "1h30m")
    assert found.returncode == 0, found.stderr
    claims = _claims(found.stdout.strip())
    assert claims["exp"] == claims["iat"] + 5400  # type: ignore[operator]


def test_the_no_subscriber_key_refusal_names_anonymous() -> None:
    found = skipfilter(
        "hub",
        "--protocol-version-compatibility",
        "8",
        "--addr",
        f"127.0.0.1:{free_port()}",
        env={"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY},
    )
    line = refusal(found)
    assert "--anonymous" in line and "MERCURE_SUBSCRIBER_JWT_KEY" in line


def test_the_default_history_is_the_state_directory_and_the_start_says_so(
    tmp_path: Path,
    state_home: Path,
    processes: list[HubProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was: skipfilter-hub.sqlite3 (with -wal and -shm) in whatever folder the hub ran from.
    Now one file per port under $XDG_STATE_HOME/skipfilter, named at start, kept across a
    restart on that port."""
    monkeypatch.chdir(tmp_path)  # the folder the hub runs from
    port = free_port()
    env = {"MERCURE_PUBLISHER_JWT_KEY": PUBLISHER_KEY}
    args = ("--anonymous", "--protocol-version-compatibility", "8")
    first = HubProcess(*args, env=env, port=port)
    processes.append(first)
    expected = state_home / "skipfilter" / f"hub-{port}.sqlite3"
    headers = {"Authorization": f"Bearer {pub_token()}"}
    answer = httpx.post(
        first.url + HUB, data={"topic": "https://example.com/1"}, headers=headers, timeout=10
    )
    assert answer.status_code == 200, answer.text
    assert f"history {expected}" in first.kill()
    with sqlite3.connect(expected) as db:
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    assert list(tmp_path.iterdir()) == []  # nothing left where it ran
    second = HubProcess(*args, env=env, port=port)
    processes.append(second)
    with (
        httpx.Client(base_url=second.url, timeout=10) as client,
        client.stream(
            "GET",
            HUB,
            params={"topic": "https://example.com/1"},
            headers={"Last-Event-ID": "earliest"},
        ) as response,
    ):
        ids: list[str] = []
        for line in response.iter_lines():
            if line.startswith("id: "):
                ids.append(line)
                break
    assert ids == [f"id: {answer.text}"]
