"""Importing httpcore, the relay client's HTTP transport, without the extras it loads when they
happen to be installed.

`relayclient/client.py` imports this module first, so any process that talks to a relay gets
httpcore this way. The client speaks to httpcore (the connection pool, proxies, TLS and
HTTP/1.1 that httpx is built on) rather than to httpx itself: httpx's own layer (its models,
cookies, multipart, auth, URL parser) cost a one-shot `companion sync` about 60 ms of start-up
for features the relay client never uses (#17).

httpcore imports its trio backend whenever trio exists; `import_httpcore` hides trio during the
import (and only then: a later `import trio` in the process works as usual).
"""

from __future__ import annotations

import importlib
import sys

OPTIONAL = ("trio",)


def import_httpcore() -> None:
    if "httpcore" in sys.modules:
        return
    hidden = [name for name in OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # "import trio" -> ImportError
    try:
        importlib.import_module("httpcore")
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


import_httpcore()
