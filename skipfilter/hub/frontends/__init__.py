"""The protocol front ends, each an implementation of ``core.frontend.Frontend``: Mercure 0.x
(``v0``), 1.0 (``v1``, with its pure protocol pieces) and both side by side (``compat``)."""
