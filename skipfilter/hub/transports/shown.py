"""A transport URL as it may be shown: in a banner, a log line, a 503, a probe's answer.

Operators need the host and port; nobody may read the password. Every message that names a
transport URL goes through ``redacted``; a message from a library, which may quote a URL,
through ``without_userinfo``. Nothing here imports redis-py (SQLite hubs use it too).
"""

from __future__ import annotations

import re

#: What stands for a password wherever a URL is shown.
HIDDEN = "***"
#: Query parameters holding a secret (``sentinel_password``; redis-py reads ``?password=``).
_SECRET_PARAMETER = re.compile(r"(?i)([?&][^=&#]*(?:pass|secret|token)[^=&#]*=)[^&#]*")
#: The query parameters of a transport URL (``redis_url`` reads them).
PARAMETERS = frozenset({"prefix", "replicas", "replica_timeout", "sentinel_password"})
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
    netloc = authority(rest)
    if "@" in netloc and "@" not in rest[len(netloc) :].partition("?")[0]:
        credentials, _, hosts = netloc.rpartition("@")
        user = credentials.partition(":")[0] if ":" in credentials else ""
        rest = f"{user}:{HIDDEN}@{hosts}{rest[len(netloc) :]}"
    elif "@" in rest and not parameters_only(rest[len(netloc) :]):
        rest = f"{HIDDEN}@{rest.rpartition('@')[2]}"  # a password holding '/', '?' or '#'
    rest, mark, query = rest.partition("?")
    query = _SECRET_PARAMETER.sub(rf"\1{HIDDEN}", f"?{query}")[1:] if mark else ""
    return f"{scheme}{sep}{rest}{mark}{query}"


def parameters_only(tail: str) -> bool:
    """Whether every ``@`` of a URL's ``tail`` (what follows its authority) is in the value
    of a transport parameter (``?prefix=a@b``), not in a password cut short by ``/``,
    ``?`` or ``#``."""
    path, _, query = tail.partition("?")
    if "@" in path or "#" in query:
        return False
    names = {pair.partition("=")[0] for pair in query.split("&")}
    return all("=" in pair for pair in query.split("&")) and names <= PARAMETERS


def authority(rest: str) -> str:
    """What follows ``scheme://`` up to the path, query or fragment: ``[userinfo@]hosts``
    (read as written, where ``urlsplit`` would drop tabs and newlines first)."""
    return re.split(r"[/?#]", rest, maxsplit=1)[0]
