"""Imported first by ``skipfilter.client``: without httpx or PyJWT, say which extra installs
them (MissingExtra) instead of a bare ModuleNotFoundError from deep inside."""

from skipfilter.extras import require

for _module in ("httpx", "jwt", "cryptography"):
    require(_module, "client", "skipfilter.client")
