"""The demo page served at ``/`` with ``--demo``: subscribe, publish, watch it arrive.

Plain EventSource + fetch, no build step. In demo mode the page carries a short-lived
publisher token so a visitor can publish; never enable ``demo`` on a public hub.
"""

from __future__ import annotations

import html
import json
import time

import jwt

from skipfilter.hub.paths import HUB_PATH
from skipfilter.hub.settings import HubSettings


def demo_token(settings: HubSettings, lifetime: float = 24 * 3600) -> str:
    """A publisher JWT allowed to publish (and subscribe) to every topic, or "" if the key
    is asymmetric (the hub only holds the public half then)."""
    key, alg = settings.publisher_key, settings.publisher_alg
    if key is None or not alg.startswith("HS"):
        return ""
    claims = {"mercure": {"publish": ["*"], "subscribe": ["*"]}, "exp": int(time.time() + lifetime)}
    return jwt.encode(claims, key, algorithm=alg)


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
 #status { font-weight: bold; }
</style>
</head>
<body>
<h1>skipfilter Mercure hub</h1>
<p>Subscribe to a topic selector (exact URL, <code>*</code>, or a URI template such as
<code>https://example.com/books/{id}</code>), publish an update, and see it arrive.</p>
<fieldset>
 <legend>Subscribe</legend>
 <label>Topic selector <input type="text" id="selector" value="https://example.com/books/{id}"></label>
 <button id="subscribe">Subscribe</button> <span id="status">not subscribed</span>
</fieldset>
<fieldset>
 <legend>Publish</legend>
 <label>Topic <input type="text" id="topic" value="https://example.com/books/1"></label>
 <label>Data <textarea id="data" rows="3">Hello from skipfilter</textarea></label>
 <label>Publisher JWT <input type="text" id="token" value="__TOKEN__"></label>
 <button id="publish">Publish</button> <span id="published"></span>
</fieldset>
<h2>Received</h2>
<ul id="messages"></ul>
<script>
const hub = __HUB__;
let source = null;
const $ = (id) => document.getElementById(id);
$("subscribe").onclick = () => {
  if (source) source.close();
  const url = new URL(hub, location.href);
  url.searchParams.append("topic", $("selector").value);
  source = new EventSource(url);
  $("status").textContent = "connecting";
  source.onopen = () => { $("status").textContent = "subscribed"; };
  source.onerror = () => { $("status").textContent = "reconnecting"; };
  source.onmessage = (event) => {
    const li = document.createElement("li");
    li.textContent = event.lastEventId + "  " + event.data;
    li.className = "message";
    $("messages").prepend(li);
  };
};
$("publish").onclick = async () => {
  const body = new URLSearchParams({topic: $("topic").value, data: $("data").value});
  const response = await fetch(hub, {method: "POST", body,
    headers: {"Authorization": "Bearer " + $("token").value}});
  const text = await response.text();
  $("published").textContent = response.ok ? "published " + text : response.status + " " + text;
};
</script>
</body>
</html>
"""


def demo_page(settings: HubSettings, hub_path: str = HUB_PATH) -> str:
    """The page's HTML, with the hub URL and a demo publisher token filled in."""
    return _PAGE.replace("__TOKEN__", html.escape(demo_token(settings))).replace(
        "__HUB__", json.dumps(hub_path)
    )
