"""The Redis transport (``transport.RedisTransport``) and, beside it, one concept each: the
pipelined lanes, the Lua scripts, entries as untrusted input, acknowledgements, the URL,
failure wording and the presence of other nodes' subscriptions."""
