"""The hub as a process: the command line, uvicorn and its sockets, the worker supervisor,
accepting by room, the fast paths on uvicorn's httptools protocol, and ``skipfilter token``."""
