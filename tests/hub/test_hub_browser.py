"""A real headless Chromium (Debian's package) uses the demo page the Mercure 1.0 way (subscribe
with a URL Pattern, the token in the cookie, publish with an access token, see it), and runs
0.x and 1.0 EventSources side by side on a hub in compatibility mode.

Skipped when /usr/bin/chromium, /usr/bin/chromedriver or selenium are missing; `.ci/run`
installs them (apt-get install -y chromium chromium-driver).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from skipfilter.hub import HubSettings
from tests.hub.browsertest import CHROMEDRIVER, CHROMIUM, chromium
from tests.hub.hubtest import HUB, PUBLISHER_KEY, Server

# `make test` installs Debian's chromium; under CI its absence is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="Debian chromium + chromium-driver not installed (make test installs them as root)",
)


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _demo_server(
    make_server: Callable[..., Server], settings: HubSettings, **changes: Any
) -> Server:
    """A hub in demo mode trusting the demo's issuer with the test keys."""
    changes.setdefault("protocol_version_compatibility", None)
    return make_server(settings.with_changes(demo=True, **changes))


def _publish_v1(server: Server, topic: str, data: str) -> None:
    """Publish with a 1.0 access token of the issuer the demo trusts."""
    from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
    from skipfilter.hub.http.demo import demo_issuer

    token = mint_access_token(
        demo_issuer(server.settings), server.url + HUB, PUBLISHER_KEY, publish=[("*", "exact")]
    )
    assert server.publish(topic, data=data, auth=token).status_code == 200


@pytest.mark.parametrize("cookie", ["mercure_access_token", "__Secure-mercure_access_token"])
def test_demo_page_subscribes_the_1_0_way_with_its_token_in_the_cookie(
    make_server: Callable[..., Server], settings: HubSettings, browser: Any, cookie: str
) -> None:
    """match_urlpattern in the EventSource URL, the subscriber token in the hub's cookie
    (never in the URL): a private update reaches the page only because the cookie was sent.
    Both the demo's prefix-less name and draft-08's ``__Secure-`` one (which must be
    ``Secure``) work over plain HTTP on 127.0.0.1: Chromium keeps ``Secure`` cookies from
    loopback origins."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    server = _demo_server(make_server, settings, cookie_name=cookie)
    browser.get(server.url + "/")
    # the cookie's Path is the hub's, not the page's: ask the browser for all it holds
    held = {c["name"]: c for c in browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]}
    assert held[cookie]["httpOnly"]
    assert held[cookie]["secure"] == cookie.startswith("__Secure-")  # plain HTTP here
    wait = WebDriverWait(browser, 20)
    browser.find_element(By.ID, "subscribe").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "subscribed"))
    source_url = browser.find_element(By.ID, "source-url").text
    assert "match_urlpattern=" in source_url and "topic=" not in source_url
    assert held[cookie]["value"] not in source_url
    server.wait_subscribers(1, timeout=10)
    data = browser.find_element(By.ID, "data")
    data.clear()
    data.send_keys("hello from chromium")
    browser.find_element(By.ID, "publish").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "published"), "published urn:uuid:"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "messages"), "hello from chromium"))
    item = browser.find_element(By.CSS_SELECTOR, "#messages li").text
    published_id = browser.find_element(By.ID, "published").text.removeprefix("published ")
    assert item.startswith(published_id)
    # a private update: delivered only to a subscriber whose token grants subscribe on it
    data.clear()
    data.send_keys("private, for the cookie's holder")
    browser.find_element(By.ID, "private").click()
    browser.find_element(By.ID, "publish").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "messages"), "for the cookie's holder"))
    # an update for a topic the page's URL Pattern does not match never shows up
    _publish_v1(server, "https://example.com/users/1", "not for the page")
    _publish_v1(server, "https://example.com/books/2", "second")
    wait.until(ec.text_to_be_present_in_element((By.ID, "messages"), "second"))
    assert "not for the page" not in browser.find_element(By.ID, "messages").text


_LISTEN = """
const [name, query] = arguments;
window.received = window.received || {};
window.received[name] = [];
const source = new EventSource("/.well-known/mercure?" + query);
source.onmessage = (event) => window.received[name].push(event.data);
"""


def test_0x_and_1_0_event_sources_side_by_side_in_compatibility_mode(
    make_server: Callable[..., Server], settings: HubSettings, browser: Any
) -> None:
    """With --protocol-version-compatibility 8 a 0.x EventSource (topic= with a URI template)
    and a 1.0 one (match_urlpattern=) in the same browser both get the update, whichever
    protocol its publisher spoke."""
    from selenium.webdriver.support.ui import WebDriverWait

    server = _demo_server(make_server, settings, protocol_version_compatibility=8)
    browser.get(server.url + "/")
    browser.execute_script(_LISTEN, "v0", "topic=" + quote("https://example.com/books/{id}"))
    browser.execute_script(
        _LISTEN, "v1", "match_urlpattern=" + quote("https://example.com/books/:id")
    )
    server.wait_subscribers(2, timeout=10)
    assert (
        server.publish("https://example.com/books/1", data="from a 0.x publisher").status_code
        == 200
    )
    _publish_v1(server, "https://example.com/books/2", "from a 1.0 publisher")
    both = ["from a 0.x publisher", "from a 1.0 publisher"]
    WebDriverWait(browser, 20).until(
        lambda b: b.execute_script("return window.received") == {"v0": both, "v1": both}
    )


def test_demo_page_shows_the_hubs_reason_for_a_refused_pattern(
    make_server: Callable[..., Server], settings: HubSettings, browser: Any
) -> None:
    """A pattern the hub refuses: the page shows the 400 and the hub's reason, not only
    "refused" (EventSource itself never sees the answer's body)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    server = _demo_server(make_server, settings)
    browser.get(server.url + "/")
    selector = browser.find_element(By.ID, "selector")
    selector.clear()
    selector.send_keys("https://example.com/books/:id(")
    browser.find_element(By.ID, "subscribe").click()
    status = (By.ID, "status")
    WebDriverWait(browser, 20).until(ec.text_to_be_present_in_element(status, "refused: 400"))
    assert "not a valid URL Pattern" in browser.find_element(*status).text
