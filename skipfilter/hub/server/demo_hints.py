"""What ``make run`` prints to try the demo hub from a shell: a subscribe and a publish
command that work as printed, pasted into any shell on the same machine.

The publish command mints its token with ``skipfilter token --dev`` when the hub holds the
public development key (what ``--demo`` uses unless a key is set), naming ``--aud`` or
``--iss`` only where they differ from the command's defaults; with a key of one's own the
demo's own publisher token is inlined instead. The ``skipfilter`` executable is named by
its path when it is not the one ``PATH`` finds (``make run`` starts the hub from ``.venv``).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from skipfilter.hub.frontends.v1.access_tokens import DEV_AUDIENCE, DEV_ISSUER
from skipfilter.hub.settings import DEV_KEY, HubSettings

__all__ = ["DEMO_TOPIC", "demo_commands", "skipfilter_command"]

#: The topic the printed commands subscribe to and publish on.
DEMO_TOPIC = "https://example.com/books/1"


def skipfilter_command() -> str:
    """How to run this interpreter's ``skipfilter`` from another shell: the bare name when
    ``PATH`` finds this one, else its path, else ``python -m skipfilter.cli``."""
    beside = Path(sys.executable).parent / "skipfilter"
    if not beside.exists():
        return f"{shlex.quote(sys.executable)} -m skipfilter.cli"
    found = shutil.which("skipfilter")
    if found is not None and Path(found).resolve() == beside.resolve():
        return "skipfilter"
    return shlex.quote(str(beside))


def demo_commands(
    settings: HubSettings,
    issuer: str,
    audience: str,
    publisher_token: str,
    cacert: str | None = None,
) -> list[str]:
    """The subscribe and publish commands for a demo hub whose endpoint is ``audience``;
    [] when there is no way to mint a publisher token (an asymmetric key)."""
    if settings.publisher_key == DEV_KEY:
        command = [skipfilter_command(), "token", "--dev"]
        if issuer != DEV_ISSUER:
            command += ["--iss", shlex.quote(issuer)]
        if audience != DEV_AUDIENCE:
            command += ["--aud", shlex.quote(audience)]
        bearer = f"$({' '.join(command)})"
    elif publisher_token:
        bearer = publisher_token
    else:
        return []
    # the certificate by its absolute path: the command is pasted in another shell's folder
    curl = f"curl --cacert {shlex.quote(str(Path(cacert).resolve()))}" if cacert else "curl"
    return [
        f"subscribe: {curl} -N {shlex.quote(f'{audience}?match={DEMO_TOPIC}')}",
        f'publish: {curl} -H "Authorization: Bearer {bearer}" '
        f"-d topic={DEMO_TOPIC} -d data=hello {audience}",
    ]
