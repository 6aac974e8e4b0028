"""The client's public names are stated once (``skipfilter.client.__all__``), documented in
docs/api.md, and stay out of ``import skipfilter``, which needs no optional extra."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import skipfilter.client
from skipfilter.extras import install_command

ROOT = Path(__file__).resolve().parent.parent.parent

PUBLIC = [
    "AsyncPublisher",
    "BadAnswer",
    "Discovery",
    "DiscoveryFailed",
    "Event",
    "EventStreamParser",
    "Forbidden",
    "InvalidRequest",
    "MercureError",
    "NotEventStream",
    "OverLimit",
    "Publisher",
    "Refused",
    "Subscription",
    "TokenMinter",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "Update",
    "discover",
    "discover_async",
    "subscribe",
]


def test_exported_names_are_pinned_and_documented() -> None:
    assert sorted(skipfilter.client.__all__) == sorted(PUBLIC)
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: skipfilter\.client\.(\w+)$", page, flags=re.M))
    assert documented == set(PUBLIC)
    hub = set(re.findall(r"^::: skipfilter\.hub\.(\w+)$", page, flags=re.M))
    assert {"HubPublisher", "hub_lifespan", "Update"} <= hub


def test_import_skipfilter_loads_neither_the_client_nor_its_extra() -> None:
    code = (
        "import sys, skipfilter\n"
        "loaded = {'httpx', 'jwt', 'skipfilter.client', 'skipfilter.tokens'} & set(sys.modules)\n"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_client_never_loads_the_hub_nor_a_web_framework() -> None:
    code = (
        "import sys, skipfilter.client\n"
        "loaded = {m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'fastapi'}\n"
        "hub = [m for m in sys.modules if m.startswith('skipfilter.hub')]\n"
        "assert not loaded and not hub, (loaded, hub)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_httpx_the_error_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['httpx'] = None  # as if not installed\n"
        "try:\n"
        "    import skipfilter.client\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == (
        "MissingExtra skipfilter.client needs httpx (the client extra): "
        + install_command("client")
    )
