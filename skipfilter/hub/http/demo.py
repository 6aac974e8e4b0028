"""The demo page served at ``/`` with ``--demo``: subscribe, publish, watch it arrive, the
Mercure 1.0 way.

Plain EventSource + fetch, no build step. The page subscribes with ``match`` /
``match_urlpattern``; its subscriber access token travels in the hub's cookie, set by the
page's own response (``HttpOnly``, ``Secure``, ``SameSite=Strict``, scoped to the hub's path),
never in a URL; it publishes with a publisher access token (RFC 9068 ``typ: at+jwt``, grants in
``authorization_details``) in the ``Authorization`` header. Both tokens are minted here, as
``skipfilter token`` mints them, for the issuer the demo hub trusts and the audience of the
origin the page was loaded from. Never enable ``demo`` on a public hub: the page hands out
tokens that may publish and receive everything.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass

import jwt
from starlette.responses import HTMLResponse

from skipfilter.hub.frontends.v1.access_tokens import mint_access_token
from skipfilter.hub.frontends.v1.matchers import EXACT, TopicMatcher
from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.settings import DEMO_ISSUER, HubSettings

#: Seconds the demo's tokens (and the cookie) live; a 1.0 stream ends when its token expires.
DEMO_LIFETIME = 24 * 3600
#: What the demo's tokens grant: everything (the page is a playground on loopback).
EVERYTHING: tuple[TopicMatcher, ...] = (("*", EXACT),)


@dataclass(frozen=True, slots=True)
class DemoTokens:
    """The page's two access tokens; "" where the hub holds no HMAC secret to sign with
    (an asymmetric key is only the public half: the hub cannot mint for it)."""

    publisher: str
    subscriber: str


def _mint(
    key: str | None,
    alg: str,
    issuer: str,
    audience: str,
    lifetime: float,
    *,
    publish: Sequence[TopicMatcher] = (),
    subscribe: Sequence[TopicMatcher] = (),
) -> str:
    if key is None or not alg.startswith("HS"):
        return ""
    return mint_access_token(
        issuer,
        audience,
        key,
        publish=publish,
        subscribe=subscribe,
        algorithm=alg,
        client_id="skipfilter-demo",
        ttl=lifetime,
    )


def demo_tokens(
    settings: HubSettings, issuer: str, audience: str, lifetime: float = DEMO_LIFETIME
) -> DemoTokens:
    """A publisher token granting ``publish`` on everything and a subscriber token granting
    ``subscribe`` on everything (private updates included), for ``issuer`` and ``audience``
    (the hub's resource identifier as the page's origin derives it)."""
    return DemoTokens(
        publisher=_mint(
            settings.publisher_key,
            settings.publisher_alg,
            issuer,
            audience,
            lifetime,
            publish=EVERYTHING,
        ),
        subscriber=_mint(
            settings.subscriber_key,
            settings.subscriber_alg,
            issuer,
            audience,
            lifetime,
            subscribe=EVERYTHING,
        ),
    )


def demo_issuer(settings: HubSettings) -> str:
    """The issuer the demo's tokens name: the one the hub's keys belong to (its first
    ``--issuer``), else the one a ``--demo`` hub trusts, which ``skipfilter token --dev``
    names too."""
    return settings.trusted_issuers[0] if settings.trusted_issuers else DEMO_ISSUER


def demo_cookie(name: str, token: str, secure: bool, lifetime: float = DEMO_LIFETIME) -> str:
    """The ``Set-Cookie`` value carrying the subscriber token: ``HttpOnly``, ``SameSite=Strict``,
    sent only to the hub's path, and ``Secure`` (draft-08 §6.1) when served over HTTPS or
    when the name's ``__Secure-``/``__Host-`` prefix demands it. Over plain HTTP a cookie
    without the prefix leaves ``Secure`` out, as the Go hub's playground does, so the demo
    works from any address (browsers drop ``Secure`` cookies from untrustworthy origins)."""
    secure = secure or name.startswith(("__Secure-", "__Host-"))
    return f"{name}={token}; Path={HUB_PATH}; Max-Age={int(lifetime)}; " + (
        "Secure; HttpOnly; SameSite=Strict" if secure else "HttpOnly; SameSite=Strict"
    )


def _claims(token: str) -> str:
    """A token's header and claims, pretty-printed for the page (never verified here)."""
    if not token:
        return "(none: the hub holds no HMAC secret for this role, so it cannot mint one)"
    shown = {
        "header": jwt.get_unverified_header(token),
        "claims": jwt.decode(token, options={"verify_signature": False}),
    }
    return json.dumps(shown, indent=2)


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>skipfilter hub demo</title>
<style>
 body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; }
 fieldset { margin-bottom: 1rem; } label { display: block; margin: .3rem 0; }
 input[type=text], textarea { width: 100%; box-sizing: border-box; font-family: monospace; }
 #messages li { font-family: monospace; white-space: pre-wrap; border-bottom: 1px solid #ddd; }
 #status { font-weight: bold; } pre { background: #f4f4f4; padding: .5rem; overflow-x: auto; }
 code.url { word-break: break-all; }
</style>
</head>
<body>
<h1>skipfilter Mercure hub</h1>
<p>Mercure 1.0: subscribe with an exact topic (<code>match</code>) or a
<a href="https://urlpattern.spec.whatwg.org/">URL Pattern</a> (<code>match_urlpattern</code>,
e.g. <code>https://example.com/books/:id</code>), publish an update, and see it arrive.</p>
<fieldset>
 <legend>Subscribe</legend>
 <label>Match type <select id="match-type">
  <option value="match_urlpattern" selected>URL Pattern (match_urlpattern)</option>
  <option value="match">exact topic (match)</option>
 </select></label>
 <label>Matcher <input type="text" id="selector" value="https://example.com/books/:id"></label>
 <button id="subscribe">Subscribe</button> <span id="status">not subscribed</span>
 <p>EventSource URL: <code class="url" id="source-url"></code></p>
 <details><summary>Subscriber token, sent by the browser in the <code>__COOKIE__</code>
 cookie (HttpOnly, so this page cannot read it; the URL never carries a token)</summary>
 <pre id="subscriber-claims">__SUBSCRIBER_CLAIMS__</pre></details>
</fieldset>
<fieldset>
 <legend>Publish</legend>
 <label>Topic <input type="text" id="topic" value="https://example.com/books/1"></label>
 <label>Data <textarea id="data" rows="3">Hello from skipfilter</textarea></label>
 <label><input type="checkbox" id="private"> private (only subscribers whose token grants
 <code>subscribe</code> on the topic receive it)</label>
 <label>Publisher access token <input type="text" id="token" value="__TOKEN__"></label>
 <details><summary>Its header and claims</summary>
 <pre id="publisher-claims">__PUBLISHER_CLAIMS__</pre></details>
 <button id="publish">Publish</button> <span id="published"></span>
</fieldset>
<h2>Received</h2>
<ul id="messages"></ul>
<p>Clients of Mercure 0.x (<code>topic=</code>, the <code>mercure</code> claim) are served
beside 1.0 ones when the hub runs with <code>--protocol-version-compatibility 8</code>; see
the migration section of docs/hub.md.</p>
<script>
const hub = __HUB__;
let source = null;
const $ = (id) => document.getElementById(id);
$("subscribe").onclick = () => {
  if (source) source.close();
  const url = new URL(hub, location.href);
  url.searchParams.append($("match-type").value, $("selector").value);
  $("source-url").textContent = url.href;
  source = new EventSource(url);
  $("status").textContent = "connecting";
  source.onopen = () => { $("status").textContent = "subscribed"; };
  source.onerror = async () => {
    if (source.readyState !== EventSource.CLOSED) {
      $("status").textContent = "reconnecting";
      return;
    }
    // EventSource hides the answer: ask again to show the hub's reason (a 4xx's body)
    $("status").textContent = "refused";
    const asked = new AbortController();
    try {
      const response = await fetch(url, {signal: asked.signal});
      if (!response.ok) {
        const reason = (await response.text()).trim();
        $("status").textContent = "refused: " + response.status + " " + reason;
      }
    } catch (error) { /* the hub is gone: "refused" is all there is to say */ }
    asked.abort();
  };
  source.onmessage = (event) => {
    const li = document.createElement("li");
    li.textContent = event.lastEventId + "  " + event.data;
    li.className = "message";
    $("messages").prepend(li);
  };
};
$("publish").onclick = async () => {
  const body = new URLSearchParams({topic: $("topic").value, data: $("data").value});
  if ($("private").checked) body.append("private", "on");
  const response = await fetch(hub, {method: "POST", body,
    headers: {"Authorization": "Bearer " + $("token").value}});
  const text = await response.text();
  const challenge = response.headers.get("WWW-Authenticate");
  $("published").textContent = response.ok ? "published " + text
    : response.status + " " + text + (challenge ? " (" + challenge + ")" : "");
};
</script>
</body>
</html>
"""


def demo_page(settings: HubSettings, tokens: DemoTokens, hub_path: str = HUB_PATH) -> str:
    """The page's HTML, with the hub URL, the cookie's name and the tokens filled in."""
    fields = {
        "__TOKEN__": html.escape(tokens.publisher),
        "__PUBLISHER_CLAIMS__": html.escape(_claims(tokens.publisher)),
        "__SUBSCRIBER_CLAIMS__": html.escape(_claims(tokens.subscriber)),
        "__COOKIE__": html.escape(settings.cookie_name),
        "__HUB__": json.dumps(hub_path),
    }
    page = _PAGE
    for marker, value in fields.items():
        page = page.replace(marker, value)
    return page


def demo_response(settings: HubSettings, audience: str, secure: bool) -> HTMLResponse:
    """The page for a visitor whose origin makes ``audience`` the hub's resource identifier
    (``secure``: it came over HTTPS), with the subscriber token set in the hub's cookie."""
    tokens = demo_tokens(settings, demo_issuer(settings), audience)
    response = HTMLResponse(demo_page(settings, tokens))
    if tokens.subscriber:
        cookie = demo_cookie(settings.cookie_name, tokens.subscriber, secure)
        response.headers.append("set-cookie", cookie)
    response.headers["cache-control"] = "no-store"
    return response
