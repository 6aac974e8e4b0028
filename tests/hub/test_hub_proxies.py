"""The shipped proxy configurations (deploy/nginx, deploy/caddy), run by Debian's nginx and
Caddy in front of a real hub, driven by Debian's Chromium: a page holds 12 EventSources on
one origin, all receiving (over HTTP/1.1 a browser opens at most 6 per origin: the control
below shows the hub alone capping there); the subscriber token travels in draft-08's
``__Secure-`` cookie over HTTPS; the page publishes through the proxy; the hub drains behind
it (SIGTERM) and every EventSource resumes on the restarted hub with the last id it got.

One Chromium serves every test of this module.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rigs.proxies import CADDY, NGINX, PROXIES, PUBLIC_NAME, Proxy
from rigs.selfsigned import Certificate, self_signed
from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from skipfilter.hub.http.demo import demo_issuer
from skipfilter.hub.settings import HubSettings
from tests.hub.browsertest import CHROMEDRIVER, CHROMIUM, chromium
from tests.hub.hubtest import HUB, PUBLISHER_KEY, HubProcess, free_port

# `make test` installs them (make system-deps); under CI their absence is a failure.
_MISSING = [p for p in (CHROMIUM, CHROMEDRIVER, NGINX, CADDY) if not Path(p).exists()]
pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("CI") and bool(_MISSING), reason=f"not installed: {_MISSING}"
    ),
    pytest.mark.xdist_group("proxies"),  # one worker, one Chromium for the module
]

SOURCES = 12
TOPIC = "https://example.com/books/1"
COOKIE = "__Secure-mercure_access_token"

_OPEN = """
const [count, query] = arguments;
window.got = [];
window.sources = [];
for (let i = 0; i < count; i++) {
  window.got.push([]);
  const source = new EventSource("/.well-known/mercure?" + query);
  source.onmessage = (event) => window.got[i].push(event.lastEventId + " " + event.data);
  window.sources.push(source);
}
"""
_PUBLISH = """
const [topic, data, done] = arguments;
const body = new URLSearchParams({topic, data, private: "on"});
fetch("/.well-known/mercure", {method: "POST", body,
  headers: {Authorization: "Bearer " + document.getElementById("token").value}})
  .then((r) => r.text().then((text) => done([r.status, text.trim()])))
  .catch((error) => done([0, String(error)]));
"""


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed(tmp_path_factory.mktemp("tls"), PUBLIC_NAME)


@pytest.fixture(scope="module")
def browser(certificate: Certificate) -> Iterator[Any]:
    """Chromium resolving the public name to 127.0.0.1 and trusting the test certificate."""
    extra = (
        f"--host-resolver-rules=MAP {PUBLIC_NAME} 127.0.0.1",
        f"--ignore-certificate-errors-spki-list={certificate.spki_sha256()}",
    )
    with chromium(extra) as driver:
        driver.set_script_timeout(20)
        yield driver


def _wait(browser: Any, script: str, expected: Any, timeout: float = 20) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(browser, timeout, poll_frequency=0.1).until(
            lambda b: b.execute_script(script) == expected
        )
    except TimeoutException:
        seen = browser.execute_script(script)
        raise AssertionError(f"{script!r} is {seen!r}, waited for {expected!r}") from None


def _hub(tmp_path: Path, port: int, public: str) -> HubProcess:
    return HubProcess(
        "--demo", "--cookie-name", COOKIE, "--publisher-jwt-key", PUBLISHER_KEY,
        "--public-urls", public, "--resource-identifier", public + HUB,
        "--history", str(tmp_path / "history.sqlite3"), "--shutdown-timeout", "5",
        compatibility=False, port=port,
    )  # fmt: skip


@pytest.mark.parametrize("proxy_name", sorted(PROXIES))
def test_behind_the_shipped_proxy_a_page_holds_12_event_sources_over_http2(
    tmp_path: Path, certificate: Certificate, browser: Any, proxy_name: str
) -> None:
    hub_port = free_port()
    proxy: Proxy = PROXIES[proxy_name](tmp_path / proxy_name, certificate, hub_port)
    public = f"https://{PUBLIC_NAME}:{proxy.port}"
    hub = _hub(tmp_path, hub_port, public)
    try:
        browser.get(public + "/")
        held = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
        cookie = {c["name"]: c for c in held if c["domain"] == PUBLIC_NAME}[COOKIE]
        assert cookie["secure"] and cookie["httpOnly"]
        assert (
            browser.execute_script(
                "return performance.getEntriesByType('navigation')[0].nextHopProtocol"
            )
            == "h2"
        )
        # 12 streams on one origin, all open: HTTP/1.1 would hold 6 back
        browser.execute_script(_OPEN, SOURCES, "match=" + TOPIC)
        opened = "return window.sources.filter((s) => s.readyState === 1).length"
        _wait(browser, opened, SOURCES)
        # a private update, published by the page through the proxy: only a subscriber
        # whose cookie carried its token may receive it
        status, first = browser.execute_async_script(_PUBLISH, TOPIC, "first")
        assert status == 200, first
        assert first.startswith("urn:uuid:")
        received = "return window.got.map((g) => g.join('|'))"
        _wait(browser, received, [f"{first} first"] * SOURCES)
        fetched = browser.execute_script(
            "return performance.getEntriesByType('resource')"
            ".filter((e) => e.initiatorType === 'fetch').map((e) => e.nextHopProtocol)"
        )
        assert fetched == ["h2"]

        # the hub drains behind the proxy, and comes back on the same port and history
        hub.proc.send_signal(signal.SIGTERM)
        assert hub.proc.wait(15) in (0, -signal.SIGTERM), hub.output()  # uvicorn re-raises
        assert "exiting now" not in hub.output()  # drained before its deadline
        # every EventSource reconnects while the hub is down (Chromium retries after 3 s):
        # the proxy must not answer that with an error status, or the browser gives up
        browser.execute_script("return new Promise((done) => setTimeout(done, 4000))")
        connecting = "return window.sources.filter((s) => s.readyState === 0).length"
        assert browser.execute_script(connecting) == SOURCES
        hub = _hub(tmp_path, hub_port, public)
        second = _publish_through(proxy, public, "second")
        _wait(browser, received, [f"{first} first|{second} second"] * SOURCES, timeout=30)
        assert browser.execute_script(opened) == SOURCES

        # proxies log a request once its response ends: drain the hub again, then read
        browser.execute_script("window.sources.forEach((s) => s.close())")
        hub.proc.send_signal(signal.SIGTERM)
        hub.proc.wait(15)
        streams = _logged_streams(proxy, 2 * SOURCES)
        assert all(r["protocol"] == "HTTP/2.0" for r in streams), streams
        resumed = [r for r in streams if r["last_event_id"] == first]
        assert len(resumed) >= SOURCES, streams  # each came back with the last id it got
    finally:
        browser.execute_script("(window.sources || []).forEach((s) => s.close())")
        hub.kill()
        proxy.stop()


def _logged_streams(proxy: Proxy, count: int, timeout: float = 10) -> list[dict[str, str]]:
    """The stream requests of the proxy's access log, once it holds ``count`` of them."""
    deadline = time.monotonic() + timeout
    while True:
        streams = [r for r in proxy.requests() if r["uri"].startswith(HUB + "?")]
        if len(streams) >= count or time.monotonic() > deadline:
            return streams
        time.sleep(0.1)


def _publish_through(proxy: Proxy, public: str, data: str) -> str:
    """Publish a private update over HTTPS through ``proxy`` (HTTP/1.1, as a backend would)."""
    token = mint_access_token(
        demo_issuer(HubSettings(anonymous=True)), public + HUB, PUBLISHER_KEY,
        publish=[("*", "exact")],
    )  # fmt: skip
    headers = {"Authorization": f"Bearer {token}", "Host": public.removeprefix("https://")}
    form = {"topic": TOPIC, "data": data, "private": "on"}
    url = f"https://127.0.0.1:{proxy.port}{HUB}"
    answer = httpx.post(url, data=form, headers=headers, verify=False, timeout=20)
    assert answer.status_code == 200, answer.text
    return answer.text.strip()


def test_the_hub_alone_over_http1_opens_only_6_of_12_event_sources(
    tmp_path: Path, browser: Any
) -> None:
    """The control: the same page served by the hub itself (HTTP/1.1) gets 6 streams open and
    6 waiting for a connection, Chromium's limit per origin: why the proxy test asks for 12."""
    hub = HubProcess("--demo", "--history", str(tmp_path / "history.sqlite3"), compatibility=False)
    try:
        browser.get(hub.url + "/")
        browser.execute_script(_OPEN, SOURCES, "match=" + TOPIC)
        opened = "return window.sources.filter((s) => s.readyState === 1).length"
        _wait(browser, opened, 6)
        browser.execute_script("return new Promise((done) => setTimeout(done, 1000))")
        assert browser.execute_script(opened) == 6
    finally:
        browser.execute_script("(window.sources || []).forEach((s) => s.close())")
        hub.kill()
