"""A transport URL as it may be shown: in a banner, a log line, a 503, a probe's answer.

Operators need the host and port; nobody may read the password. Every message that names a
transport URL goes through ``redacted``; a message from a library, which may quote a URL,
through ``without_userinfo``. Nothing here imports redis-py (SQLite hubs use it too).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: What stands for a password wherever a URL is shown.
HIDDEN = "***"
#: Query parameters holding a secret (``sentinel_password``; redis-py reads ``?password=``).
_SECRET_PARAMETER = re.compile(r"(?i)([?&][^=&#]*(?:pass|secret|token)[^=&#]*=)[^&#]*")
#: A URL's userinfo, in any text.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]*@")


def without_userinfo(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(rf"\1{HIDDEN}@", text)


def redacted(url: str) -> str:
    """``url`` as it may be printed or answered: a password (in the userinfo, or a query
    parameter such as ``sentinel_password``) replaced by ``***``, host and port kept. Never
    raises; a URL too malformed to read hides everything before its last ``@``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url if "@" not in url else HIDDEN
    query = ""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        netloc = ""
    if "@" in netloc and "@" not in rest[len(netloc) :].partition("?")[0]:
        credentials, _, hosts = netloc.rpartition("@")
        user = credentials.partition(":")[0] if ":" in credentials else ""
        rest = f"{user}:{HIDDEN}@{hosts}{rest[len(netloc) :]}"
    elif "@" in rest:  # the password holds '/', '?' or '#': hide up to the last '@'
        rest = f"{HIDDEN}@{rest.rpartition('@')[2]}"
    rest, mark, query = rest.partition("?")
    query = _SECRET_PARAMETER.sub(rf"\1{HIDDEN}", f"?{query}")[1:] if mark else ""
    return f"{scheme}{sep}{rest}{mark}{query}"
