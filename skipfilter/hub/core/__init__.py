"""The hub whatever protocol version it speaks: the Hub (index, transport, ring, open streams),
the fan-out, replay, streams, sessions, and the seam every front end implements
(``frontend``). Nothing here imports a front end, the HTTP layer or the server."""
