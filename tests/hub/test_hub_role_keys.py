"""Each role's keys read by name (``role_keys``), from the settings and from an issuer."""

from __future__ import annotations

from skipfilter.hub import HubSettings
from skipfilter.hub.settings import ROLES, IssuerSettings, RoleKeys, has_keys, role_keys

SECRET = "a-secret-of-at-least-thirty-two-bytes!!"
JWKS = "https://issuer.example/jwks.json"


def test_each_role_reads_its_own_fields() -> None:
    settings = HubSettings(
        publisher_key=SECRET,
        publisher_alg="HS384",
        subscriber_jwks_url=JWKS,
        trusted_issuers=("https://issuer.example",),
    )
    assert role_keys(settings, "publisher") == RoleKeys(SECRET, "HS384", None)
    assert role_keys(settings, "subscriber") == RoleKeys(None, "HS256", JWKS)
    assert has_keys(settings)


def test_an_issuer_has_the_same_roles() -> None:
    issuer = IssuerSettings("https://issuer.example", subscriber_key=SECRET, subscriber_alg="HS512")
    assert [role_keys(issuer, role).configured for role in ROLES] == [False, True]
    assert role_keys(issuer, "subscriber") == RoleKeys(SECRET, "HS512", None)


def test_no_keys_is_no_role() -> None:
    settings = HubSettings(anonymous=True)
    assert not any(role_keys(settings, role).configured for role in ROLES)
    assert not has_keys(settings)
