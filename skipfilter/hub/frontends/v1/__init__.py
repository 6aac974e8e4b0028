"""Mercure 1.0 (draft-08) front-end pieces: requests and tokens turned into the hub's terms.

Everything here is pure and knows nothing of Starlette, the Hub, streams or the index: it takes
strings, bytes and mappings and returns plain data (matchers as ``(value, match_type)`` tuples,
``AuthorizationDetails``, a ``SubscribeRequest``, a ``PublishForm``) or raises
``RequestError``. The 1.0 front end of the hub (and the 0.x compatibility mode, through the
``compatibility`` flags) is built from these parts:

- ``errors``: ``RequestError`` and RFC 6750's ``BearerError`` with its exact challenge.
- ``wire``: what the wire allows (protocol strings, ``application/x-www-form-urlencoded``).
- ``matchers``: match types, the limits on matchers, URL Pattern validity.
- ``grants``: ``authorization_details`` (RFC 9396) read into ``AuthorizationDetails``.
- ``issuers``: trusted issuers and their publisher/subscriber keys (static or a JWK Set).
- ``tokens``: RFC 9068 access-token verification (``AccessTokenVerifier``).
- ``presentation``: where a token comes from (header, cookie; never the query).
- ``identity``: the hub's resource identifier per request, its public URLs (421).
- ``discovery``: RFC 9728 protected resource metadata and the ``rel="mercure"`` Link header.
- ``subscribe`` / ``publish``: the subscribe query and the publish form, validated.
- ``subscriptions``: subscription-event topics, documents, ETags.
- ``mint``: ``skipfilter token``, a development access token.
"""
